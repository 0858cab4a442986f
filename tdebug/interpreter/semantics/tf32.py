"""fp32 `tl.dot` operands as compiled Triton's tensor cores read them at TF32 input precision, Triton's default for
fp32 on NVIDIA (`input_precision="tf32"`, or `allow_tf32=True`): each operand keeps 10 of its 23 mantissa bits, the
low 13 dropped (truncated: Triton hands the fp32 registers to the MMA as they are; rounding on the fly is an opt-in
of later releases), products exact in fp32 and summed in fp32. Triton's interpreter multiplies in full fp32, so a
kernel whose results depend on TF32's 1e-3 relative error (its own check at fp32 tolerances against an fp32 or fp64
reference) passed on the CPU and failed on the GPU (measured on an H200: results/gpu-verdict-parity.md). `ieee` and
`tf32x3` keep full fp32 (3xTF32's error is fp32's order). NaN and Inf pass unchanged (a NaN whose payload is only in
the dropped bits stays a NaN)."""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable

import numpy as np

from ..versions import bind, patcher

patch = patcher("compat")
DROPPED = np.uint32(0x1FFF)  # the 13 low mantissa bits fp32 has and TF32 lacks
EXPONENT = np.uint32(0x7F800000)


def truncate_to_tf32(values: np.ndarray) -> np.ndarray:
    """fp32 values with their 13 low mantissa bits cleared (finite values only)."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    finite = (bits & EXPONENT) != EXPONENT
    return np.where(finite, bits & ~DROPPED, bits).view(np.float32)


def _reads_tf32(input_precision) -> bool:
    return getattr(input_precision, "name", str(input_precision)).upper() == "TF32"


def _with_data(handle, data: np.ndarray):
    """A copy of an operand's handle (whatever the engine's handle class carries) holding other data."""
    out = copy.copy(handle)
    out.data = data
    return out


def _dot(original: Callable) -> Callable:
    @functools.wraps(original)
    def create_dot(*args, **kwargs):
        call = bind(original, args, kwargs)
        a, b = call.arguments["a"], call.arguments["b"]
        if not _reads_tf32(call.arguments["input_precision"]) or a.data.dtype != np.float32 \
                or b.data.dtype != np.float32:
            return original(*args, **kwargs)
        call.arguments.update(a=_with_data(a, truncate_to_tf32(a.data)), b=_with_data(b, truncate_to_tf32(b.data)))
        return original(*call.args, **call.kwargs)

    return create_dot


def install() -> None:
    from triton.runtime import interpreter

    patch(interpreter.interpreter_builder, "create_dot", _dot)
