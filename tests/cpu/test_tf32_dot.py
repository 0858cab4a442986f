"""fp32 tl.dot as compiled Triton runs it: at TF32 input precision by default (operands truncated to 10 mantissa
bits), full fp32 for `ieee` and `tf32x3` (interpreter/semantics/tf32.py). Found on an H200: fp32 dot kernels whose
own checks failed compiled passed under the interpreter (results/gpu-verdict-parity.md)."""

from pathlib import Path

import numpy as np
import pytest

from tdebug.interpreter.semantics.tf32 import truncate_to_tf32
from tdebug.sanitize.jobs import sanitize_job
from tdebug.sanitize.sweep import sanitize_script

SCRIPT = Path(__file__).parent / "data" / "tf32_dot.py"


def test_truncation_drops_the_low_mantissa_bits_of_finite_values_only():
    rng = np.random.default_rng()
    x = (rng.standard_normal(4096) * 2.0 ** rng.integers(-140, 120, 4096)).astype(np.float32)
    x[:4] = [np.nan, np.inf, -np.inf, 0.0]
    x[4] = np.uint32(0x7F800001).view(np.float32)  # a NaN whose payload is only in the dropped bits
    t = truncate_to_tf32(x)
    bits, tbits = x.view(np.uint32), t.view(np.uint32)
    finite = np.isfinite(x)
    assert np.all(tbits[finite] & 0x1FFF == 0)
    assert np.all(tbits[finite] >> 13 == bits[finite] >> 13)  # sign, exponent and the top 10 mantissa bits kept
    assert np.all(np.abs(t[finite]) <= np.abs(x[finite]))  # toward zero
    assert np.isnan(t[0]) and np.isnan(t[4]) and t[1] == np.inf and t[2] == -np.inf


@pytest.mark.parametrize("executor", ["serial", "batched"])
def test_dot_precision_matches_the_compiled_kernels(executor):
    job = sanitize_job(SCRIPT, "script").but(executor=executor)
    result = sanitize_script(job, 240, None)
    assert not result.fatal, result.fatal
    (case,) = result.cases
    assert case.status == "pass", [f.message for f in case.findings] or case.error
