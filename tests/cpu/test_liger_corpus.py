"""Real third-party kernels under tdebug: Liger-Kernel 0.8.5's ops (a pinned test-only dependency), driven by
tests/cpu/data/liger_ops.py on small ragged shapes with fresh random inputs against float64 PyTorch
references, forward and backward. Plain TRITON_INTERPRET=1 (3.6) runs 9 of the 19; tdebug runs all.

The default run sanitizes every op once on its small shape (the script compares each op with its reference
too, so a wrong result fails the case); `-m slow` adds `tdebug run --mode interpret` and the larger shapes."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "cpu" / "data" / "liger_ops.py"
OPS = ["rms_norm", "layer_norm", "fused_add_rms_norm", "poly_norm", "group_norm", "swiglu", "geglu", "relu_squared",
       "dyt", "softmax", "sparsemax", "rope", "llama4_rope", "cross_entropy", "fused_linear_cross_entropy",
       "fused_linear_jsd", "kl_div", "jsd", "tvd"]


def tdebug(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tdebug", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


def op_lines(stdout: str) -> dict[str, str]:
    """op name -> its verdict line printed by the corpus script."""
    found = {}
    for line in stdout.splitlines():
        m = re.match(r"(\w+) [\dx]+: (.*)$", line)
        if m and m.group(1) in OPS:
            found[m.group(1)] = m.group(2)
    return found


def assert_every_op_ok(proc: subprocess.CompletedProcess, ops: list[str]) -> None:
    verdicts = op_lines(proc.stdout)
    assert set(verdicts) == set(ops), (proc.stdout[-3000:], proc.stderr[-3000:])
    wrong = {op: v for op, v in verdicts.items() if not v.startswith("ok")}
    assert not wrong, wrong
    assert proc.returncode == 0, (proc.stdout[-3000:], proc.stderr[-3000:])


def test_every_op_sanitizes_clean_and_matches_its_reference():
    # The whole script is one case; --config 0: one pass (dyt's autotuned kernel would make the script run
    # once per surviving config, which test_precision covers).
    proc = tdebug("sanitize", "--device", "cpu", "--timeout", "600", "--config", "0", str(CORPUS))
    assert_every_op_ok(proc, OPS)
    assert re.search(r"liger_ops\.py: clean \(1 case", proc.stdout), proc.stdout[-2000:]


@pytest.mark.slow
def test_every_op_matches_its_reference_under_run_interpret():
    assert_every_op_ok(tdebug("run", "--mode", "interpret", "--timeout", "600", str(CORPUS)), OPS)


@pytest.mark.slow
@pytest.mark.parametrize("op", OPS)
def test_op_on_larger_ragged_shapes(op):
    proc = tdebug("sanitize", "--device", "cpu", "--timeout", "600", str(CORPUS), "--", "--ops", op, "--large")
    assert_every_op_ok(proc, [op])
    assert "clean" in proc.stdout
