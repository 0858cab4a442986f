"""fp8e4b15 in tdebug's interpreter converts as compiled Triton does on the GPU: the table
tests/cpu/data/e4b15_h200.npz was made on an H200 (Triton 3.6) by tests/gpu/scripts/fp8e4b15_table.py (every fp16 bit
pattern, and fp32 values between fp16 ones, converted to codes; every code converted back)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tdebug.interpreter.semantics.bf16 import E4B15, decode, encode

TABLE = np.load(Path(__file__).parent / "data" / "e4b15_h200.npz")


def test_the_table_is_the_gpus():
    assert str(TABLE["device"]).startswith("NVIDIA H") and str(TABLE["triton"]).startswith("3.")


def test_every_fp16_value_converts_to_the_gpus_code():
    """Ties away from zero, saturating at 1.75 (code 0x7E), NaN and infinities to +-1.75 by their sign."""
    halves = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    got = encode(halves.astype(np.float32), E4B15)
    want = TABLE["f16_codes"]
    assert np.array_equal(got, want), [(float(h), hex(g), hex(w)) for h, g, w in
                                       zip(halves[got != want][:5], got[got != want][:5], want[got != want][:5])]


def test_fp32_values_between_fp16_ones_convert_to_the_gpus_code():
    got = encode(TABLE["f32"], E4B15)
    want = TABLE["f32_codes"]
    assert TABLE["f32"].size > 80_000
    assert np.array_equal(got, want), [(float(x), hex(g), hex(w)) for x, g, w in
                                       zip(TABLE["f32"][got != want][:5], got[got != want][:5], want[got != want][:5])]


def test_every_code_decodes_to_the_gpus_value():
    codes = np.arange(256, dtype=np.uint8)
    assert np.array_equal(decode(codes, E4B15), TABLE["decoded_f32"])
