"""Small places where Triton's interpreter or language front end answers differently from compiled Triton.

- Triton 3.6's `tl.tuple.__getattr__` (a tensor's shape is one) raises ValueError for a name it lacks, where
  Python (and Triton 3.9) raise AttributeError: `getattr(shape, name, default)` then fails. tdebug's own reads
  of its marks on a builder op's arguments did exactly that on `tl.atomic_add(ptrs_2d, vals_1d)` (the value
  broadcast to the pointers' shape): "ValueError: '_tdebug_from' is not in list".
- Triton 3.6's `get_all_ones_value` builds all-ones as -1 in the type's numpy dtype: `~x` on an unsigned
  tensor raises OverflowError. Compiled Triton (and 3.9's interpreter) give the bitwise complement.
- Triton 3.6's interpreter cannot type fp8e4b8 / fp8e5b16 values (its `dtype.to_ir` stand-in lacks them): "fail
  to convert fp8e4b8 to ir type" at any cast to them.
- `tl.gather(src, index, axis)` with an index outside src's axis: numpy's IndexError ("index 32 is out of bounds
  for axis 0 with size 32") where compiled Triton reads an undefined value; here a message that says so.
- Triton 3.6's `tl.dot(a, b, acc)` of int8 operands into an int32 `acc` without `out_dtype=tl.int32` stops on a
  bare `assert` in the front end (compiled Triton 3.6 alike, as its front end is the same code): the message
  says what to write.
- `tl.maximum` / `tl.minimum` (create_maxnumf / create_minnumf, numpy's fmax / fmin) of a signaling NaN and a
  number: numpy's vector loop gives the number, its scalar loop (C's fmaxf) a NaN, so the answer hung on the
  shape of the arrays (one program's or a batch's); tdebug's poison of torch.empty memory is a signaling NaN.
  A GPU's max.f32 / min.f32 give the number, for any NaN: here too. Likewise the sign of max(-0.0, +0.0): numpy's
  loops differ; here +0.0 (and -0.0 for the min), IEEE 754-2019's maximumNumber / minimumNumber.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from ..frames import KernelError
from ..versions import bind, patcher

patch = patcher("compat")


class NoAttribute(KernelError, AttributeError):
    """A tl.tuple has no such field (caught by getattr's default; not a fault of tdebug's)."""


class DotAccumulatorType(KernelError, AssertionError):
    """tl.dot's accumulator is not of out_dtype: the kernel's error, as compiled Triton reports it."""


class GatherOutOfRange(KernelError, IndexError):
    """tl.gather's index lies outside its source's axis: undefined on a GPU."""


def check_gather(src: np.ndarray, indices: np.ndarray, axis: int) -> None:
    """Raise GatherOutOfRange when an index of `indices` is outside src's `axis` (numpy arrays, axis already
    shifted by the batched engine's program axis where there is one)."""
    size = np.shape(src)[axis]
    idx = np.asarray(indices)
    if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= size):
        bad = idx[(idx < 0) | (idx >= size)]
        raise GatherOutOfRange(f"tl.gather index {int(bad.reshape(-1)[0])} outside the source's {size} elements "
                               f"along its axis ({bad.size} lanes in all): compiled Triton reads an undefined value "
                               "there")


def _gather(original: Callable) -> Callable:
    @functools.wraps(original)
    def create_gather(*args, **kwargs):
        call = bind(original, args, kwargs)
        check_gather(call.arguments["src"].data, call.arguments["indices"].data, call.arguments["axis"])
        return original(*args, **kwargs)

    return create_gather


def _tuple_getattr(original: Callable) -> Callable:
    @functools.wraps(original)
    def __getattr__(self, name):
        fields = getattr(self.type, "fields", None)
        if fields is None or name not in fields:
            raise NoAttribute(f"'tuple' object has no attribute {name!r}")
        return original(self, name)

    return __getattr__


def _all_ones(original: Callable) -> Callable:
    @functools.wraps(original)
    def get_all_ones_value(*args, **kwargs):
        from triton.runtime import interpreter

        call = bind(original, args, kwargs)
        ty = call.arguments["type"]
        np_type = np.dtype(interpreter._get_np_dtype(ty))
        if np_type.kind == "u":
            return interpreter.TensorHandle(np.full(1, np.iinfo(np_type).max, dtype=np_type), ty.scalar)
        return original(*args, **kwargs)

    return get_all_ones_value


def _dot(original: Callable) -> Callable:
    @functools.wraps(original)
    def dot(*args, **kwargs):
        try:
            return original(*args, **kwargs)
        except AssertionError as exc:
            if str(exc):
                raise
            call = bind(original, args, kwargs)
            lhs, acc = call.arguments["lhs"], call.arguments["acc"]
            out_dtype = call.arguments.get("out_dtype")
            if acc is None or not lhs.type.scalar.is_int():
                raise
            raise DotAccumulatorType(f"tl.dot of {lhs.type.scalar} operands into an {acc.type.scalar} accumulator "
                                     f"needs out_dtype={acc.type.scalar!r} (it is {out_dtype!r}); compiled Triton "
                                     "of this version stops on the same check") from None

    return dot


def _fp8_types(original: Callable) -> Callable:
    @functools.wraps(original)
    def _patch_lang(*args, **kwargs):
        import triton.language as tl

        scope = original(*args, **kwargs)
        to_ir = tl.core.dtype.to_ir
        if scope is not None and not getattr(to_ir, "_tdebug_fp8", False):
            def typed(self, builder):
                if self.name == "fp8e4b8":
                    return builder.get_fp8e4b8_ty()
                if self.name == "fp8e5b16":
                    return builder.get_fp8e5b16_ty()
                return to_ir(self, builder)

            typed._tdebug_fp8 = True
            scope.set_attr(tl.core.dtype, "to_ir", typed)
        return scope

    return _patch_lang


def _the_number(largest: bool) -> Callable[[Callable], Callable]:
    """create_maxnumf (largest) / create_minnumf: where one operand is a NaN (signaling or quiet) and the other is
    not, the other; of two zeros, +0.0 for the max and -0.0 for the min (IEEE 754-2019's maximumNumber). Checked
    only where the result holds a NaN or a zero."""

    def make(original: Callable) -> Callable:
        @functools.wraps(original)
        def op(*args, **kwargs):
            out = original(*args, **kwargs)
            data = np.asarray(out.data)
            if data.dtype.kind != "f":
                return out
            nan, zero = np.isnan(data), data == 0
            if not nan.any() and not zero.any():
                return out
            call = bind(original, args, kwargs).arguments
            a, b = np.asarray(call["lhs"].data), np.asarray(call["rhs"].data)
            if a.dtype.kind != "f" or b.dtype.kind != "f":
                return out
            fixed = np.where(np.isnan(a), b, np.where(np.isnan(b), a, data))
            both_zero = (a == 0) & (b == 0)
            if both_zero.any():
                signs = np.signbit(a) & np.signbit(b) if largest else np.signbit(a) | np.signbit(b)
                fixed = np.where(both_zero, np.where(signs, -0.0, 0.0), fixed)
            out.data = fixed.astype(data.dtype, copy=False)
            return out

        return op

    return make


def install() -> None:
    import triton.language as tl
    from triton.language import semantic
    from triton.runtime import interpreter

    patch(tl.core.tuple, "__getattr__", _tuple_getattr)
    patch(interpreter.interpreter_builder, "get_all_ones_value", _all_ones)
    patch(semantic.TritonSemantic, "dot", _dot)
    patch(interpreter, "_patch_lang", _fp8_types)
    patch(interpreter.interpreter_builder, "create_maxnumf", _the_number(largest=True))
    patch(interpreter.interpreter_builder, "create_minnumf", _the_number(largest=False))
    if hasattr(interpreter.interpreter_builder, "create_gather"):
        patch(interpreter.interpreter_builder, "create_gather", _gather)
