"""fp16 <-> fp32 casts through torch's vectorised conversions, the same bits as numpy's.

Triton's interpreter casts with numpy's `astype`, which converts float16 one element at a time: on this
machine 3.1 ms per million fp16 -> fp32 lanes and 6.4 ms fp32 -> fp16, against 0.8 and 0.2 ms for torch's
(F16C) conversion; a kernel that loads fp16, computes in fp32 and stores fp16 spends most of its own time
there. Both round to nearest even and agree on every non-NaN value (all 65536 fp16 patterns; every third of
the 2^32 fp32 patterns, checked once, and every 61st with the ties and range ends in tests/cpu/test_casts.py);
NaN payloads differ, so NaN lanes keep numpy's conversion; an fp32 -> fp16 overflow raises numpy's overflow flag
as numpy's cast does (the sanitizer's NaN/Inf origins hang on it).
Small arrays (under SMALL lanes) and anything else go to Triton's own cast. A float -> integer cast of NaN or of a
value past the integer type's range saturates as the GPU's conversion does (numpy's is undefined there).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
import torch

from ..versions import patcher

patch = patcher("casts")

SMALL = 4096  # lanes below which numpy's cast is as quick as a round trip through torch
TORCH = {np.dtype(np.float16): torch.float16, np.dtype(np.float32): torch.float32}


_TOO_LARGE = np.array([np.finfo(np.float32).max], np.float32)


def raise_overflow_flag() -> None:
    """Raise numpy's floating-point overflow flag as its own cast does, under whatever error state the caller set
    (ignored, warned, raised, or handed to the sanitizer's NaN/Inf origins): for conversions done without numpy's
    float arithmetic (through torch, or on bit patterns) that overflowed."""
    _TOO_LARGE.astype(np.float16)


def convert(data: np.ndarray, to: np.dtype) -> np.ndarray | None:
    """data (float16 or float32) as `to` (the other one), bit for bit as data.astype(to); None: not such a cast
    (or too small to gain), let numpy do it."""
    if not isinstance(data, np.ndarray) or data.size < SMALL or data.dtype == to \
            or data.dtype not in TORCH or to not in TORCH:
        return None
    source = data if data.flags.c_contiguous and data.flags.writeable else np.ascontiguousarray(data)
    if not source.flags.writeable:  # torch.from_numpy shares memory and warns on a read-only array
        source = source.copy()
    out = torch.from_numpy(source).to(TORCH[to]).numpy()
    if source.dtype == np.float16:
        nan = (source.view(np.uint16) & np.uint16(0x7FFF)) > np.uint16(0x7C00)
    else:
        nan = np.isnan(source)
    if nan.any():
        out[nan] = source[nan].astype(to)
    if to == np.float16:
        overflow = np.isinf(out) & ~np.isinf(source) & ~nan
        if overflow.any():  # numpy's cast raises its overflow flag (a NaN/Inf origin): so does this one
            raise_overflow_flag()
    return out


def saturated(data: np.ndarray, to: np.dtype) -> np.ndarray | None:
    """A float -> integer cast as the GPU's cvt.rzi does it: toward zero, NaN to 0, values past the integer type's
    range to its ends (numpy leaves those undefined: its scalar and vector loops give different bits, and the
    batched engine's arrays are not the serial engine's); None: not such a cast, or nothing to saturate."""
    if not isinstance(data, np.ndarray) or data.dtype.kind != "f" or to.kind not in "iu" or data.size == 0:
        return None
    info = np.iinfo(to)
    with np.errstate(invalid="ignore"):
        inside = (data > info.min - 1.0) & (data < info.max + 1.0)  # NaN: False
    if inside.all():
        return None
    low, high = np.float64(info.min), np.float64(info.max)
    wide = np.where(np.isnan(data), 0.0, np.clip(data.astype(np.float64), low, high))
    out = np.trunc(wide).astype(np.float64)
    if to.itemsize == 8:  # int64 / uint64 ends are not exact in float64: set them as integers
        result = np.where(out >= high, 0, np.where(out <= low, 0, out)).astype(to)
        result[out >= high] = info.max
        result[out <= low] = info.min
        return result
    return out.astype(to)


def install() -> None:
    """Patch the builder's cast_impl, which every int/float cast of the interpreter calls (fp_ext, fp_trunc,
    si_to_fp, ...; bf16 and fp8 casts are bf16.py's, in the wrappers of those ops)."""
    from triton.runtime import interpreter

    Handle = interpreter.TensorHandle
    np_dtype = interpreter._get_np_dtype

    def make(original: Callable) -> Callable:
        @functools.wraps(original)
        def cast_impl(*args, **kwargs):
            if len(args) == 2 and not kwargs:
                src, dst_type = args
                to = np.dtype(np_dtype(dst_type))
                data = convert(src.data, to) if isinstance(src, Handle) else None
                if data is None and isinstance(src, Handle):
                    data = saturated(src.data, to)
                if data is not None:
                    return Handle(data, dst_type.scalar)
            return original(*args, **kwargs)
        return cast_impl

    patch(interpreter.interpreter_builder, "cast_impl", make)
