"""Floating-point contraction as compiled Triton does it: `x * y + z` rounded once, like the GPU's fma.

Triton compiles with fp fusion on (`enable_fp_fusion=True`), and the NVPTX backend fuses every add or
subtract of a product into one fma, whose result is rounded once; the interpreter rounds the product and
then the sum. On an H100, a bf16 `x * y + z` differed from the interpreter's in 23% of the elements, by up
to thousands of bf16 steps where the sum cancels (results/gpu-bf16-check.md, the mul_add row). Here every float
product remembers its factors, and an add or subtract of such a product (bf16, fp16, fp32) is computed
exactly: the product in fp64 (exact for these widths), the sum with its rounding error (TwoSum), rounded
to odd in fp64 and then to the result's dtype, which equals one rounding of the exact value. `tl.fma`
gets the same single rounding.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from ..versions import bind, patcher
from .bf16 import BF16, bf16_to_fp32, fp32_to_bf16, fp64_to_fp32_odd, name_of

patch = patcher("fma")

FUSED = {BF16, "fp16", "fp32"}  # products of these are exact in fp64
FACTORS = "tdebug_factors"  # attribute of a product's TensorHandle: its two factor handles


def values64(handle) -> np.ndarray:
    data = np.asarray(handle.data)
    return bf16_to_fp32(data).astype(np.float64) if name_of(handle.dtype) == BF16 else data.astype(np.float64)


def round_to_odd(total: np.ndarray, error: np.ndarray) -> np.ndarray:
    """total + error (|error| <= half an fp64 step of total) rounded to odd in fp64: a later rounding to a
    narrower float then equals one rounding of the exact sum."""
    inexact = (error != 0) & np.isfinite(total) & np.isfinite(error)
    even = (total.view(np.uint64) & np.uint64(1)) == 0
    toward = np.where(error > 0, np.inf, -np.inf)
    return np.where(inexact & even, np.nextafter(total, toward), total)


# Per result dtype: how many low bits of an fp64 lie below the dtype's rounding point (52 stored bits less
# the dtype's stored significand bits) and the fp64 exponent field of the dtype's smallest normal number.
ROUNDING_BITS = {"fp32": (52 - 23, 1023 - 126), BF16: (52 - 7, 1023 - 126), "fp16": (52 - 10, 1023 - 14)}
EXPONENT = np.uint64(0x7FF << 52)


def near_ties(s: np.ndarray, dtype_name: str) -> np.ndarray:
    """Flat indices of the fp64 values in `s` that may round wrongly to dtype_name without their rounding
    error: those exactly halfway between two of its numbers (the low bits 100...0), and those below its
    smallest normal number (whose halfway points sit higher up). Elsewhere no halfway point lies between an
    exact sum and its fp64 rounding, so rounding the fp64 value once more gives the exact sum's rounding."""
    low_bits, smallest_normal = ROUNDING_BITS[dtype_name]
    bits = s.view(np.uint64)
    field = np.bitwise_and(bits, np.uint64((1 << low_bits) - 1))  # one scratch array, reused below
    halfway = field == np.uint64(1 << (low_bits - 1))
    # Exponent field in [1, smallest_normal): unsigned, so 0 (zeros, fp64 subnormals) wraps out of range.
    np.bitwise_and(bits, EXPONENT, out=field)
    np.subtract(field, np.uint64(1 << 52), out=field)
    halfway |= field < np.uint64((smallest_normal - 1) << 52)
    return np.flatnonzero(halfway)


def sum_to_odd(p: np.ndarray, q: np.ndarray, dtype_name: str) -> np.ndarray:
    """p + q (fp64, exact operands) as an fp64 whose rounding to dtype_name is the exact sum's: the fp64 sum, rounded
    to odd where it lies near a tie of dtype_name (TwoSum there only). A new array."""
    s = np.asarray(p + q)  # a new array (0-d operands: a new 0-d array), written below
    flat = s.reshape(-1)
    ties = near_ties(flat, dtype_name)
    if ties.size:  # only there does the rounding error decide: TwoSum and round to odd on those lanes
        pt = np.broadcast_to(p, s.shape).reshape(-1)[ties]
        qt = np.broadcast_to(q, s.shape).reshape(-1)[ties]
        st = flat[ties]
        back = st - pt
        error = (pt - (st - back)) + (qt - back)  # TwoSum: st + error == pt + qt exactly
        flat[ties] = round_to_odd(st, error)
    return s


def fused(a, b, c, product_sign: float, addend_sign: float, dtype_name: str) -> np.ndarray:
    """sign * a * b + sign * c rounded once to dtype_name, as bit patterns / values of that dtype."""
    p = values64(a) * values64(b)  # exact: at most 2 x 24 significant bits
    if product_sign != 1.0:  # a multiplication, as before (a negation would flip a NaN's sign bit too)
        p = product_sign * p
    q = values64(c)
    if addend_sign != 1.0:
        q = addend_sign * q
    with np.errstate(invalid="ignore", over="ignore"):
        s = sum_to_odd(p, q, dtype_name)
    # The rounding to the result's dtype outside the errstate: an overflow there raises numpy's flag, as the
    # unfused op's would, so tdebug's NaN/Inf check sees an Inf made from finite operands.
    if dtype_name == BF16:
        return fp32_to_bf16(fp64_to_fp32_odd(s))
    return s.astype(np.float16 if dtype_name == "fp16" else np.float32)


def install() -> None:
    """Patch the builder's fmul / fadd / fsub / fma (layer "fma": over bf16's wrappers)."""
    from triton.runtime import interpreter

    builder = interpreter.interpreter_builder
    Handle = interpreter.TensorHandle

    def product(original: Callable) -> Callable:
        @functools.wraps(original)
        def create_fmul(*args, **kwargs):
            out = original(*args, **kwargs)
            if name_of(out.dtype) in FUSED and len(args) == 2 and not kwargs:
                setattr(out, FACTORS, args)
            return out
        return create_fmul

    def sum_of(sign: float) -> Callable[[Callable], Callable]:
        def make(original: Callable) -> Callable:
            @functools.wraps(original)
            def create_fadd(*args, **kwargs):
                if len(args) != 2 or kwargs or name_of(args[0].dtype) not in FUSED:
                    return original(*args, **kwargs)
                lhs, rhs = args
                if hasattr(lhs, FACTORS):  # (a * b) + rhs: fold the left product first, as LLVM does
                    a, b = getattr(lhs, FACTORS)
                    data = fused(a, b, rhs, 1.0, sign, name_of(lhs.dtype))
                elif hasattr(rhs, FACTORS):  # lhs + (a * b)
                    a, b = getattr(rhs, FACTORS)
                    data = fused(a, b, lhs, sign, 1.0, name_of(lhs.dtype))
                else:
                    return original(*args, **kwargs)
                return Handle(data, lhs.dtype.scalar)
            return create_fadd
        return make

    def fma(original: Callable) -> Callable:
        @functools.wraps(original)
        def create_fma(*args, **kwargs):
            call = bind(original, args, kwargs)
            x, y, z = call.arguments["x"], call.arguments["y"], call.arguments["z"]
            if name_of(z.dtype) not in FUSED:
                return original(*args, **kwargs)
            return Handle(fused(x, y, z, 1.0, 1.0, name_of(z.dtype)), z.dtype.scalar)
        return create_fma

    patch(builder, "create_fmul", product)
    patch(builder, "create_fadd", sum_of(1.0))
    patch(builder, "create_fsub", sum_of(-1.0))
    patch(builder, "create_fma", fma)
