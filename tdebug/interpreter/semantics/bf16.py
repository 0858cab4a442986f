"""Exact bf16 in Triton's interpreter, and exact fp8 (float8e4nv, float8e5) casts.

The interpreter keeps bf16 values as uint16 bit patterns (right: loads and stores move bits) but then runs
numpy arithmetic on those integers (a bf16 `x * y + z` gives NaN), truncates fp32 -> bf16 casts where the
GPU rounds to nearest even, multiplies bf16 bit patterns in tl.dot, and handles fp8 NaN, saturation and
ties loosely. Here every builder op that computes on floats gets its bf16 operands widened to fp32
(exact) and its result rounded back to bf16 to nearest even; comparisons widen only; selects, shapes,
loads and stores move bits as before. One rounding from the fp32 result is what the GPU's bf16 add, mul,
div and sqrt give (fp32 carries more than 2 x 8 + 2 bits, so rounding twice changes nothing). tl.dot on
bf16 or fp8 accumulates in its accumulator's dtype (fp32); tl.sum / max / min / cumsum on bf16 compute
on the fp32 values and round once. fp8 casts go through torch's exact conversions, saturating to the
largest finite value as the GPU's `cvt.rn.satfinite` does.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
import torch

from ..fast.casts import raise_overflow_flag
from ..unsupported import NotRunnable
from ..versions import bind, patcher

patch = patcher("bf16")

BF16 = "bf16"
# fp8 types converted through torch's exact conversions (round to nearest even), saturating at the largest finite
# value: NVIDIA's e4m3 / e5m2 and AMD's e4m3fnuz / e5m2fnuz (one NaN code 0x80, no infinities, no -0).
FP8 = {"fp8e4nv": (torch.float8_e4m3fn, 448.0), "fp8e5": (torch.float8_e5m2, 57344.0),
       "fp8e4b8": (torch.float8_e4m3fnuz, 240.0), "fp8e5b16": (torch.float8_e5m2fnuz, 57344.0)}
# fp8e4b15 (e4m3, exponent bias 15, no NaN nor infinity: the top exponent is a normal one) has no torch dtype: its
# 128 magnitudes, in code order.
E4B15 = "fp8e4b15"
_E4B15 = np.array([(m if e == 0 else 8 + m) * 2.0 ** (max(e, 1) - 18) for e in range(16) for m in range(8)])

# Builder ops whose bf16 operands are widened to fp32 and whose result is rounded back to bf16.
ARITHMETIC = ("create_fadd", "create_fsub", "create_fmul", "create_fdiv", "create_frem", "create_precise_divf",
              "create_approx_divf", "create_minimumf", "create_maximumf", "create_minnumf", "create_maxnumf",
              "create_fma", "create_clampf", "create_fneg", "create_cos", "create_sin", "create_exp",
              "create_exp2", "create_log", "create_log2", "create_sqrt", "create_precise_sqrt", "create_rsqrt",
              "create_erf", "create_floor", "create_ceil")
# Builder ops whose bf16 operands are widened; the result (a bool) is kept.
COMPARISONS = tuple(f"create_fcmp{order}{test}" for order in "OU" for test in ("LT", "GT", "LE", "GE", "EQ", "NE"))
CASTS = ("create_fp_to_fp", "create_fp_trunc", "create_fp_ext", "create_si_to_fp", "create_ui_to_fp",
         "create_fp_to_si", "create_fp_to_ui")


def name_of(dtype) -> str:
    return getattr(getattr(dtype, "scalar", dtype), "name", "")


def exact(dtype) -> bool:
    """bf16 or an fp8 type this module converts exactly."""
    name = name_of(dtype)
    return name == BF16 or name in FP8 or name == E4B15


def bf16_to_fp32(bits: np.ndarray) -> np.ndarray:
    return (np.asarray(bits).astype(np.uint32) << np.uint32(16)).view(np.float32)


def fp32_to_bf16(values: np.ndarray, toward_zero: bool = False) -> np.ndarray:
    """fp32 values as bf16 bit patterns, rounded to nearest even (a cast's default) or toward zero."""
    values = np.asarray(values, dtype=np.float32)
    bits = values.view(np.uint32)
    if toward_zero:
        out = bits >> np.uint32(16)
    else:
        out = (bits + (((bits >> np.uint32(16)) & np.uint32(1)) + np.uint32(0x7FFF))) >> np.uint32(16)
    nan = np.isnan(values)
    if nan.any():  # a quiet NaN with its sign (rounding the payload could carry it into infinity)
        out = np.where(nan, (bits >> np.uint32(16)) | np.uint32(0x0040), out)
    if not toward_zero and values.size and ((out & np.uint32(0x7FFF)) == np.uint32(0x7F80)).any() \
            and (np.isfinite(values) & ((out & np.uint32(0x7FFF)) == np.uint32(0x7F80))).any():
        raise_overflow_flag()  # a finite value rounded up to infinity, as numpy's own cast would flag it
    return out.astype(np.uint16)


def fp64_to_fp32_odd(values: np.ndarray) -> np.ndarray:
    """fp64 -> fp32 rounded to odd, so that rounding the result to bf16 equals rounding fp64 to bf16 once."""
    values = np.asarray(values, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        near = values.astype(np.float32)
        finite = np.isfinite(values) & np.isfinite(near)
        past = finite & (np.abs(near.astype(np.float64)) > np.abs(values))
        near = np.where(past, np.nextafter(near, np.float32(0)), near)
        inexact = finite & (near.astype(np.float64) != values)
    if not finite.all() and (np.isfinite(values) & ~np.isfinite(near)).any():
        raise_overflow_flag()  # past fp32's range: Inf, flagged as numpy's own cast would
    return (near.view(np.uint32) | inexact.astype(np.uint32)).view(np.float32)


def decode(data: np.ndarray, dtype_name: str) -> np.ndarray:
    """bf16 / fp8 bit patterns as their fp32 values (exact)."""
    if dtype_name == BF16:
        return bf16_to_fp32(data)
    data = np.ascontiguousarray(data)
    if dtype_name == E4B15:
        codes = data.view(np.uint8)
        magnitude = _E4B15[codes & np.uint8(0x7F)].astype(np.float32)
        return np.where(codes & np.uint8(0x80), -magnitude, magnitude)
    bits = torch.from_numpy(data.view(np.uint8).reshape(-1))
    return bits.view(FP8[dtype_name][0]).to(torch.float32).numpy().reshape(data.shape)


def encode(values: np.ndarray, dtype_name: str, toward_zero: bool = False) -> np.ndarray:
    """Float values as bf16 / fp8 bit patterns, rounded to nearest even (fp8: saturating, NaN kept; fp8e4b15 as
    compiled Triton rounds it)."""
    values = np.asarray(values)
    if dtype_name == BF16:
        if values.dtype == np.float64:
            values = fp64_to_fp32_odd(values)
        return fp32_to_bf16(values, toward_zero)
    if toward_zero:
        raise NotRunnable(f"a round-toward-zero cast to {dtype_name}")
    if dtype_name == E4B15:
        return _encode_e4b15(values)
    torch_dtype, largest = FP8[dtype_name]
    values = np.where(np.isnan(values), values, np.clip(values, -largest, largest)).astype(np.float32)
    flat = torch.from_numpy(np.ascontiguousarray(values).reshape(-1))
    return flat.to(torch_dtype).view(torch.uint8).numpy().reshape(values.shape)


def _encode_e4b15(values: np.ndarray) -> np.ndarray:
    """fp8e4b15 codes of float values as compiled Triton makes them on sm_90 (tests/cpu/data/e4b15_h200.npz: every
    fp16 value and 83k fp32 values converted on an H200): to nearest, ties away from zero, saturating at 1.75 (code
    0x7E, not the format's 1.875); NaN and infinities saturate too, keeping their sign."""
    values = np.asarray(values, dtype=np.float64)
    magnitude = np.abs(values)
    magnitude = np.where(np.isnan(magnitude), _E4B15[-2], np.minimum(magnitude, _E4B15[-2]))
    upper = np.clip(np.searchsorted(_E4B15, magnitude), 1, 127)  # the first code at or above
    lower = upper - 1
    below, above = magnitude - _E4B15[lower], _E4B15[upper] - magnitude
    code = np.where(below < above, lower, upper).astype(np.uint8)
    return np.where(np.signbit(values), code | np.uint8(0x80), code).astype(np.uint8)


def install() -> None:
    """Patch the interpreter's builder, reductions and scans (after TRITON_INTERPRET=1, before any launch)."""
    import triton.language as tl
    from triton._C.libtriton import ir
    from triton.runtime import interpreter

    builder = interpreter.interpreter_builder
    Handle = interpreter.TensorHandle

    def widen(handle):
        """A bf16/fp8 handle as an fp32 one; anything else as it is."""
        if isinstance(handle, Handle) and exact(handle.dtype):
            return Handle(decode(handle.data, name_of(handle.dtype)), tl.float32)
        return handle

    def has_bf16(args) -> bool:
        for a in args:  # a loop, not any(...): this runs on every arithmetic op
            if isinstance(a, Handle) and name_of(a.dtype) == BF16:
                return True
        return False

    def arithmetic(original: Callable) -> Callable:
        @functools.wraps(original)
        def op(*args, **kwargs):
            if not has_bf16(args):
                return original(*args, **kwargs)
            out = original(*map(widen, args), **kwargs)
            return Handle(encode(out.data, BF16), tl.bfloat16)
        return op

    def comparison(original: Callable) -> Callable:
        @functools.wraps(original)
        def op(*args, **kwargs):
            if not has_bf16(args):
                return original(*args, **kwargs)
            return original(*map(widen, args), **kwargs)
        return op

    def cast(original: Callable) -> Callable:
        """float <-> bf16 / fp8 and int <-> bf16 through exact fp32/fp64 values."""
        @functools.wraps(original)
        def op(*args, **kwargs):
            call = bind(original, args, kwargs)
            src, dst = call.arguments["src"], call.arguments["dst_type"].scalar
            if not (exact(src.dtype) or exact(dst)):
                return original(*args, **kwargs)
            values = decode(src.data, name_of(src.dtype)) if exact(src.dtype) else np.asarray(src.data)
            if not exact(dst):
                return Handle(values.astype(interpreter._get_np_dtype(dst)), dst)
            if values.dtype.kind in "iub":
                values = values.astype(np.float64)
            toward_zero = call.arguments.get("rounding_mode") == ir.ROUNDING_MODE.RTZ
            return Handle(encode(values, name_of(dst), toward_zero), dst)
        return op

    def dot(original: Callable) -> Callable:
        @functools.wraps(original)
        def op(*args, **kwargs):
            call = bind(original, args, kwargs)
            a, b, d = call.arguments["a"], call.arguments["b"], call.arguments["d"]
            if not (exact(a.dtype) or exact(b.dtype) or exact(d.dtype)):
                return original(*args, **kwargs)
            call.arguments.update(a=widen(a), b=widen(b), d=widen(d))
            out = original(*call.args, **call.kwargs)
            if exact(d.dtype):
                return Handle(encode(out.data, name_of(d.dtype)), d.dtype.scalar)
            return out
        return op

    def atomic_rmw(original: Callable) -> Callable:
        @functools.wraps(original)
        def op(*args, **kwargs):
            call = bind(original, args, kwargs)
            if not has_bf16((call.arguments["val"],)):
                return original(*args, **kwargs)
            return _bf16_atomic(interpreter, call.arguments["rmwOp"], call.arguments["ptr"],
                                call.arguments["val"], call.arguments["mask"])
        return op

    for names, make in ((ARITHMETIC, arithmetic), (COMPARISONS, comparison), (CASTS, cast)):
        for name in names:
            if hasattr(builder, name):  # create_fneg / create_approx_divf: newer Tritons only
                patch(builder, name, make)
    patch(builder, "create_dot", dot)
    patch(builder, "create_atomic_rmw", atomic_rmw)
    if not hasattr(builder, "get_bf16"):  # bf16 constants (tl.full(..., 1.5, tl.bfloat16)); Triton >= 3.8 has it
        builder.get_bf16 = lambda value: Handle(encode(np.array([value], dtype=np.float64), BF16), tl.bfloat16)
    for owner, names in ((interpreter.ReduceOps, ("sum", "min_max")), (interpreter.ScanOps, ("cumsum", "cumprod"))):
        for name in names:
            patch(owner, name, _on_fp32_values)


def _on_fp32_values(original: Callable) -> Callable:
    """A reduction or scan's fast path (numpy on the data) on bf16: on the fp32 values, rounded back once."""
    @functools.wraps(original)
    def op(self, input, *args, **kwargs):
        import triton.language as tl
        from triton.runtime import interpreter

        if name_of(input.dtype) != BF16:
            return original(self, input, *args, **kwargs)
        handle = interpreter.TensorHandle(bf16_to_fp32(input.handle.data), tl.float32)
        wide = tl.core.tensor(handle, input.type.with_element_ty(tl.float32) if input.type.is_block() else tl.float32)
        return _to_bf16(original(self, wide, *args, **kwargs))
    return op


def _to_bf16(out):
    import triton.language as tl
    from triton.runtime import interpreter

    if isinstance(out, (list, tuple)):
        return type(out)(_to_bf16(o) for o in out)
    if isinstance(out, tl.core.tensor) and name_of(out.dtype) == "fp32":
        handle = interpreter.TensorHandle(fp32_to_bf16(out.handle.data), tl.bfloat16)
        return tl.core.tensor(handle, out.type.with_element_ty(tl.bfloat16) if out.type.is_block() else tl.bfloat16)
    return out


def _bf16_atomic(interpreter, rmw_op, ptr, val, mask):
    """Atomic add / max / min / exchange on bf16 memory, lane by lane (programs run one at a time, and two
    lanes of one op may hit one address), on the fp32 values; returns the old values."""
    import triton.language as tl
    from triton._C.libtriton import interpreter as native
    from triton._C.libtriton import ir

    combine = {ir.ATOMIC_OP.FADD: np.add, ir.ATOMIC_OP.MAX: np.fmax, ir.ATOMIC_OP.MIN: np.fmin,
               ir.ATOMIC_OP.XCHG: lambda old, new: new}.get(rmw_op)
    if combine is None:
        raise NotRunnable(f"atomic {rmw_op} on bf16 memory")
    ptrs = np.asarray(ptr.data).reshape(-1)
    active = np.broadcast_to(np.asarray(mask.data, dtype=bool).reshape(-1), ptrs.shape)
    values = np.broadcast_to(np.asarray(val.data).reshape(-1), ptrs.shape)
    old = np.zeros(ptrs.shape, dtype=np.uint16)
    one, zero = np.ones(1, dtype=bool), np.zeros(1, dtype=np.uint16)
    for lane in np.flatnonzero(active):
        address = ptrs[lane:lane + 1]
        current = native.load(address, one, zero, np.dtype(np.uint16))
        old[lane] = current[0]
        native.store(address, fp32_to_bf16(combine(bf16_to_fp32(current), bf16_to_fp32(values[lane:lane + 1]))), one)
    return interpreter.TensorHandle(old.reshape(np.shape(ptr.data)), tl.bfloat16)
