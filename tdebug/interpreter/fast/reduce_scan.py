"""tl.reduce and tl.associative_scan with a kernel's own combine function, at numpy speed, with the values of
Triton's interpreter.

Triton's interpreter runs a combine function it has no numpy shortcut for (a segmented scan's keyed add, an
argmax that breaks ties its own way, a (max, sum) pair) once per element, on scalars: a 64 x 128 tile reduced
along its rows is 8,128 calls of the function, a batch of 64 programs 64 times that. Its order is a left fold
along the axis for every other position: out[0] = x[0], out[i] = combine(out[i-1], x[i]), each result stored
into an array of the input's dtype.

Here an axis of PARALLEL_FROM elements or more is first tried as a parallel prefix (log2(n) calls on vectors:
Hillis and Steele), then checked against the fold's own definition with one more call (out[i] ==
combine(out[i-1], x[i]) for every i, bit for bit): the result is then the left fold's, by induction. Where that
check fails (a function that is not associative on these values: floating-point rounding), the fold runs once
per step along the axis on every other position at once (the program axis of a batch included): the same calls
on each lane in the same order, so the same values bit for bit, whatever the function computes. A
one-dimensional call the parallel prefix did not settle (nothing to run at once), a function that fails on
vectors (Python control flow on its scalars), or any error, goes to Triton's own loop.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ..frames import EngineSignal
from ..versions import forget_fault, patcher

patch = patcher("reduce_scan")


def _tensor(data: np.ndarray, dtype):
    """A combine function's operand, typed as Triton's loop types it (one element of `dtype`) but holding a
    value per lane: every op in the function is elementwise on it, and Python control flow on it (`if`, `and`,
    int()) is refused (see _lang_tensor)."""
    import triton.language as tl
    from triton.runtime.interpreter import TensorHandle

    return tl.core.tensor(TensorHandle(data, dtype.scalar), dtype)


_VECTOR = 0  # > 0 while a combine function runs on lanes at once


class _Fallback(Exception):  # noqa: N818 - not an error: Triton's own loop takes the call
    """The call cannot be run on lanes at once: Python control flow on a lane's value in the combine function,
    or a value Triton's loop could not store (out of its dtype's range)."""


def _values(ret, shape: tuple[int, ...], np_dtypes: Sequence[np.dtype]) -> list[np.ndarray]:
    """A combine function's result(s) as arrays of the inputs' dtypes (what Triton's loop stores)."""
    import triton.language as tl

    rets = ret if isinstance(ret, tuple) else (ret,)
    if len(rets) != len(np_dtypes):
        raise _Fallback
    out = []
    for r, dt in zip(rets, np_dtypes):
        data = np.broadcast_to(np.asarray(r.handle.data if isinstance(r, tl.core.tensor) else r), shape)
        stored = data.astype(dt)
        if data.dtype != dt and (dt.kind in "iub" or data.dtype.kind not in "iubf") and \
                not np.array_equal(stored.astype(data.dtype), data):
            raise _Fallback  # Triton's loop stores a Python number into the array: out of range, it raises
        out.append(stored)
    return out


def _combine(fn: Callable, dtypes: Sequence, left: Sequence[np.ndarray], right: Sequence[np.ndarray],
             np_dtypes: Sequence[np.dtype]) -> list[np.ndarray]:
    operands = [_tensor(np.ascontiguousarray(a), d) for a, d in zip(left, dtypes)]
    operands += [_tensor(np.ascontiguousarray(b), d) for b, d in zip(right, dtypes)]
    global _VECTOR
    _VECTOR += 1
    try:
        ret = fn(*operands)
    finally:
        _VECTOR -= 1
    return _values(ret, left[0].shape, np_dtypes)


def _fold(fn: Callable, dtypes: Sequence, moved: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Every prefix of the left fold along axis 0, every other position at once."""
    np_dtypes = [m.dtype for m in moved]
    acc = [m[0].copy() for m in moved]
    outs = [np.empty_like(m) for m in moved]
    for o, a in zip(outs, acc):
        o[0] = a
    for i in range(1, moved[0].shape[0]):
        acc = _combine(fn, dtypes, acc, [m[i] for m in moved], np_dtypes)
        for o, a in zip(outs, acc):
            o[i] = a
    return outs


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind in "biu":
        return bool(np.array_equal(a, b))
    return np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()


def _parallel_scan(fn: Callable, dtypes: Sequence, moved: Sequence[np.ndarray]) -> list[np.ndarray] | None:
    """Every prefix of the fold along axis 0 by a parallel prefix, or None when it is not the left fold's."""
    np_dtypes = [m.dtype for m in moved]
    vals = list(moved)
    n = vals[0].shape[0]
    step = 1
    while step < n:
        combined = _combine(fn, dtypes, [v[:-step] for v in vals], [v[step:] for v in vals], np_dtypes)
        vals = [np.concatenate([v[:step], c]) for v, c in zip(vals, combined)]
        step *= 2
    # The left fold by definition: out[0] = x[0] and out[i] = combine(out[i-1], x[i]) for every i.
    again = _combine(fn, dtypes, [v[:-1] for v in vals], [m[1:] for m in moved], np_dtypes)
    if all(_same_bits(a, v[1:]) for a, v in zip(again, vals)):
        return vals
    return None


PARALLEL_FROM = 8  # elements along the axis from which a parallel prefix is tried first


def _prefixes(fn: Callable, dtypes: Sequence, moved: Sequence[np.ndarray]) -> list[np.ndarray] | None:
    """Every prefix of the left fold along axis 0 (None: Triton's own loop should run the call): a verified
    parallel prefix, else the fold on every other position at once (nothing at once in one dimension)."""
    if moved[0].shape[0] >= PARALLEL_FROM:
        found = _attempt(_parallel_scan, fn, dtypes, moved)
        if found is not None:
            return found
    if moved[0].ndim == 1:
        return None
    return _attempt(_fold, fn, dtypes, moved)


def _attempt(how: Callable, fn: Callable, dtypes: Sequence, moved: Sequence[np.ndarray]) -> list[np.ndarray] | None:
    try:
        return how(fn, dtypes, moved)
    except EngineSignal:
        raise
    except Exception as exc:  # noqa: BLE001 - Triton's own loop runs it again and raises what is the kernel's
        forget_fault(exc)
        return None


def _inputs(input) -> tuple[list[np.ndarray], list] | None:
    """The operands' arrays and dtypes, or None for what Triton's loop should take (no elements)."""
    arrays = [np.asarray(t.handle.data) for t in input]
    if not arrays or any(a.shape != arrays[0].shape for a in arrays) or arrays[0].size == 0:
        return None
    return arrays, [t.dtype for t in input]


def _generic_reduce(original):
    def generic_reduce(self, input):
        original_axis = self.axis
        flat, axis = self.unravel(input, self.axis)
        found = _inputs(flat)
        if found is None:
            return original(self, input)
        arrays, dtypes = found
        shape = arrays[0].shape
        prefixes = _prefixes(self.combine_fn.fn, dtypes, [np.moveaxis(a, axis, 0) for a in arrays])
        if prefixes is None:
            return original(self, input)
        ret = []  # packed as Triton's generic_reduce packs its output
        for prefix, t in zip(prefixes, flat):
            data = prefix[-1]
            if self.keep_dims:
                if original_axis is not None:
                    data = np.expand_dims(data, axis)
                else:
                    for _ in range(len(shape)):
                        data = np.expand_dims(data, 0)
            elif original_axis is None:
                data = data.item()
            ret.append(self.to_tensor(data, t.dtype))
        return ret

    return generic_reduce


def _generic_scan(original):
    def generic_scan(self, input):
        found = _inputs(input)
        if found is None:
            return original(self, input)
        arrays, dtypes = found
        axis = self.axis
        outs = _prefixes(self.combine_fn.fn, dtypes, [np.moveaxis(a, axis, 0) for a in arrays])
        if outs is None:
            return original(self, input)
        return [self.to_tensor(np.ascontiguousarray(np.moveaxis(o, 0, axis)), t.dtype) for o, t in zip(outs, input)]

    return generic_scan


def _lang_tensor(original):
    """tl.tensor's __index__ and __bool__ as the interpreter sets them per launch, refusing a value of many
    lanes while a combine function runs on lanes at once (its Python control flow is per element)."""

    def _patch_lang_tensor(tensor, scope):
        out = original(tensor, scope)
        index, get_bool = tensor.__index__, tensor.__bool__

        def __index__(self):
            if _VECTOR and np.size(self.handle.data) > 1:
                raise _Fallback
            return index(self)

        def __bool__(self):
            if _VECTOR and np.size(self.handle.data) > 1:
                raise _Fallback
            return get_bool(self)

        scope.set_attr(tensor, "__index__", __index__)
        scope.set_attr(tensor, "__bool__", __bool__)
        return out

    return _patch_lang_tensor


def install() -> None:
    from triton.runtime import interpreter

    patch(interpreter.ReduceOps, "generic_reduce", _generic_reduce)
    patch(interpreter.ScanOps, "generic_scan", _generic_scan)
    patch(interpreter, "_patch_lang_tensor", _lang_tensor)
