"""Scalar kernel arguments typed as compiled Triton types them: bool -> i1, int -> i32 or i64 by value,
float -> fp32 (Triton's interpreter passes floats as raw Python numbers, so `eps.to(tl.float32)` fails
and `x_bf16 * eps` stays bf16 where the GPU computes in fp32); constexpr arguments are left alone."""

from __future__ import annotations

import functools

import numpy as np

from ..versions import patcher

patch = patcher("scalars")


def typed_scalar(arg):
    """The (numpy data, Triton type) compiled Triton gives a bool/int/float argument; None for anything else."""
    import triton.language as tl

    if isinstance(arg, bool):
        return np.array([arg], dtype=np.bool_), tl.int1
    if isinstance(arg, float):
        return np.array([arg], dtype=np.float32), tl.float32
    if isinstance(arg, int) and 2**31 <= arg < 2**63:  # Triton 3.6 stores these as uint32 data under an i64 type
        return np.array([arg], dtype=np.int64), tl.int64
    return None


def install() -> None:
    import triton.language as tl
    from triton.runtime import interpreter

    def make(original):
        @functools.wraps(original)
        def _implicit_cvt(arg):
            typed = typed_scalar(arg)
            if typed is None:
                return original(arg)
            data, ty = typed
            return tl.tensor(interpreter.TensorHandle(data, ty), ty)
        return _implicit_cvt

    patch(interpreter, "_implicit_cvt", make)
