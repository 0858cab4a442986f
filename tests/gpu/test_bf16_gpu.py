"""bf16 on a real GPU against tdebug's interpreter (scripts/gpu_bf16_check.py): elementwise bit-identical,
reductions and dots within accumulation-order tolerance. Skipped without CUDA."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]


def test_bf16_compiled_and_interpreted_agree(tmp_path):
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "gpu_bf16_check.py"), "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=900)
    report = json.loads((tmp_path / "gpu-bf16-check.json").read_text())
    verdicts = {r["kernel"]: r for r in report["rows"]}
    for name in ("chain", "cast_bf16", "cast_via_fp16", "cast_int", "cast_fp8e4nv", "cast_fp8e5", "row_max"):
        assert verdicts[name]["ok"], verdicts[name]  # bit-identical
    for name in ("row_sum_fp32", "row_sum_bf16", "dot_fp32", "dot_bf16", "atomic", "math", "mul_add"):
        assert verdicts[name]["ok"], verdicts[name]
    assert proc.returncode == 0, proc.stdout + proc.stderr
