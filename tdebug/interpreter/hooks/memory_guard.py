"""Out-of-bounds accesses stopped before they touch memory when the sanitizer is off (`run`, `check`, the bugs'
checks): Triton's interpreter has no bounds checks, so a store whose lanes run past the tensor its pointer came
from writes into the process's own heap (a crash later, or a corrupted heap that breaks whatever runs next and
is blamed on it). A load, store or atomic with an active lane outside the storage its pointer was derived from
(interpreter/hooks/provenance.py) raises OutOfBounds at the kernel's line instead; `tdebug sanitize` names every lane.
The sanitizer refuses such lanes itself (and reports them), so this guard stands aside while it runs. An atomic's
operands reach Triton C-contiguous (its atomics read their memory in C order whatever the strides). Pointers
made from integers carry no provenance and are not guarded here (the sanitizer's live-pointer check covers them).
"""

from __future__ import annotations

import copy
import inspect

import numpy as np

from ..frames import KernelError, current_pid, user_frame
from ..versions import bind, patcher
from . import provenance

patch = patcher("memory_guard")


class OutOfBounds(KernelError, IndexError):
    pass


STANDS_ASIDE = False  # set (stand_aside()) while the sanitizer checks every access itself


def stand_aside(flag: bool) -> None:
    """Whether the sanitizer checks every access itself (this guard then lets the accesses through)."""
    global STANDS_ASIDE
    STANDS_ASIDE = flag


def _check(kind: str, ptrs, mask) -> None:
    tag = provenance.origin(ptrs)
    nbytes = provenance.EXTENTS.get(tag) if tag is not None else None
    if nbytes is None:
        return
    from triton.runtime.interpreter import _get_np_dtype

    addresses = np.asarray(ptrs.data)
    if mask is not None:
        addresses = addresses[np.broadcast_to(np.asarray(mask.data, dtype=bool), addresses.shape)]
    if addresses.size == 0:
        return
    elsize = np.dtype(_get_np_dtype(ptrs.get_element_ty())).itemsize
    low, high = int(addresses.min()), int(addresses.max())
    if low >= tag and high + elsize <= tag + nbytes:
        return
    outside = int(((addresses < tag) | (addresses > tag + nbytes - elsize)).sum())
    frame = user_frame()
    where = f"{frame.f_code.co_filename}:{frame.f_lineno}: " if frame is not None else ""
    raise OutOfBounds(
        f"{where}out-of-bounds {kind} in program {current_pid()}: {outside} of {addresses.size} active lanes "
        f"outside the tensor the pointer points into ({nbytes} bytes); stopped before touching that memory "
        "(tdebug sanitize names every lane)")


def _guarded(kind: str, pointer: str):
    def make(original):
        params = list(inspect.signature(original).parameters)
        at = params.index("mask") if "mask" in params else None  # atomic_cas has no mask

        def op(*args, **kwargs):
            if not STANDS_ASIDE:
                a = bind(original, args, kwargs).arguments
                _check(kind, a[pointer], a.get("mask"))
            if kind == "atomic":
                args, kwargs = _contiguous(original, args, kwargs)
            mask = None if at is None else kwargs.get("mask", args[at] if at < len(args) else None)
            if mask is not None and np.asarray(mask.data).dtype != np.bool_:
                # Triton's interpreter types a comparison's handle as its operands (int32), so a splat of
                # `pid == last` and `mask & (pid == last)` hold int32 data; Triton 3.9's memory ops refuse it
                # ("mask has unsupported dtype"). A mask is its lanes' truth, whatever integer dtype holds it.
                call = bind(original, args, kwargs)
                call.arguments["mask"] = type(mask)(np.asarray(mask.data) != 0, _int1())
                return original(*call.args, **call.kwargs)
            return original(*args, **kwargs)

        return op

    return make


def _contiguous(original, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """An atomic's operands as C-contiguous arrays: Triton's atomic_rmw / atomic_cas read their operands' memory in
    C order whatever the strides, so a view (tl.cumsum(..., reverse=True) is a flipped one) gave other lanes'
    values, or bytes past the array."""
    from triton.runtime.interpreter import TensorHandle

    for v in (*args, *kwargs.values()):  # a loop, not all(genexpr): this runs on every atomic
        if isinstance(v, TensorHandle) and isinstance(v.data, np.ndarray) and not v.data.flags.c_contiguous:
            break
    else:
        return args, kwargs

    def fixed(v):
        if isinstance(v, TensorHandle) and isinstance(v.data, np.ndarray) and not v.data.flags.c_contiguous:
            out = copy.copy(v)
            out.data = np.ascontiguousarray(v.data)
            return out
        return v

    return tuple(fixed(v) for v in args), {k: fixed(v) for k, v in kwargs.items()}


def _int1():
    import triton.language as tl

    return tl.int1


def install() -> None:
    """Innermost: right above Triton's own memory ops (before batch_memory and every other patch of them)."""
    from triton.runtime import interpreter

    builder = interpreter.interpreter_builder
    patch(builder, "create_masked_load", _guarded("load", "ptrs"))
    patch(builder, "create_masked_store", _guarded("store", "ptrs"))
    patch(builder, "create_atomic_rmw", _guarded("atomic", "ptr"))
    patch(builder, "create_atomic_cas", _guarded("atomic", "ptr"))
