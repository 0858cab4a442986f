"""casts.py: fp16 <-> fp32 through torch gives numpy's bits on every value, NaNs included."""

from __future__ import annotations

import numpy as np
import pytest

from tdebug.interpreter.fast.casts import SMALL, convert


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and \
        np.array_equal(np.ascontiguousarray(a).view(np.uint8), np.ascontiguousarray(b).view(np.uint8))


def test_every_fp16_pattern_to_fp32():
    halves = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    assert _same_bits(convert(halves, np.dtype(np.float32)), halves.astype(np.float32))


@pytest.mark.parametrize("part", range(4))
def test_fp32_patterns_to_fp16(part):
    """A quarter of the 2^32 patterns per case, every 61st: every exponent, ties, subnormals, NaN payloads."""
    bits = np.arange(part << 30, (part + 1) << 30, 61, dtype=np.uint64).astype(np.uint32)
    floats = bits.view(np.float32)
    with np.errstate(over="ignore"):
        assert _same_bits(convert(floats, np.dtype(np.float16)), floats.astype(np.float16))


def test_ties_and_edges_to_fp16():
    """fp32 values exactly halfway between two fp16 numbers (either parity), next to them, and at the ends of
    the fp16 range (largest finite, overflow, smallest subnormal and half of it), both signs."""
    halves = np.arange(0, 0x7C00, dtype=np.uint16).view(np.float16).astype(np.float64)
    mids = (halves[:-1] + halves[1:]) / 2  # exact in fp32: fp16 steps are fp32-representable halves
    edges = np.array([65504.0, 65519.99, 65520.0, 2.0 ** -24, 2.0 ** -25, 2.0 ** -25 * 1.0000001, 0.0])
    values = np.concatenate([mids, edges]).astype(np.float32)
    around = np.concatenate([values, np.nextafter(values, np.float32(np.inf)), np.nextafter(values, np.float32(0))])
    values = np.concatenate([around, -around])
    with np.errstate(over="ignore"):
        assert _same_bits(convert(values, np.dtype(np.float16)), values.astype(np.float16))


def test_layouts_and_what_is_left_to_numpy():
    x = np.random.default_rng().standard_normal((3, 2 * SMALL)).astype(np.float32)
    strided = x[:, ::2]  # not contiguous
    readonly = np.broadcast_to(x[0], (4, x.shape[1]))  # read-only, not contiguous
    for data in (strided, readonly, x.T):
        assert _same_bits(convert(data, np.dtype(np.float16)), data.astype(np.float16))
    assert convert(x[:, :8], np.dtype(np.float16)) is None  # small: numpy's own
    assert convert(x, np.dtype(np.float64)) is None
    assert convert(x.astype(np.int32), np.dtype(np.float16)) is None
