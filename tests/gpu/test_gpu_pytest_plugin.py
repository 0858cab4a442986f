"""Issue 47 on a real GPU: `pytest --tdebug` runs each test as its GPU suite runs it (tensors and references on the
GPU, the kernels compiled, the test seeing the compiled results), with the interpreter pass on copies and the
divergence comparison on every launch; no fork after CUDA is initialised. Skipped without CUDA."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
SUITE = Path(__file__).resolve().parent / "data" / "gpu_pytest_suite.py"

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]


def plugin_args() -> list[str]:
    """`-p` for tdebug's plugin where it is not installed (a checkout on PYTHONPATH, as on the GPU machine)."""
    from importlib.metadata import entry_points

    installed = any(e.value.startswith("tdebug") for e in entry_points(group="pytest11"))
    return [] if installed else ["-p", "tdebug.pytest_plugin.plugin"]


def test_a_gpu_suite_under_tdebug(tmp_path):
    test = tmp_path / "test_suite.py"
    test.write_text(SUITE.read_text())
    report = tmp_path / "tdebug.json"
    proc = subprocess.run([sys.executable, "-m", "pytest", *plugin_args(), "--tdebug", "--tdebug-json", str(report),
                           "-p", "no:cacheprovider", "-p", "no:randomly", "-q", str(test)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=600,
                          env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})
    out = proc.stdout + proc.stderr
    print(out)
    assert "Cannot re-initialize CUDA" not in out
    tests = {t["test"].split("::")[-1]: t for t in json.loads(report.read_text())["tests"]}
    outcome = {name: (t["outcome"], sorted(f["check"] for f in t["findings"])) for name, t in tests.items()}
    assert outcome == {
        "test_add[1000]": ("passed", []), "test_add[4096]": ("passed", []),
        "test_row_sum_against_itself_compiled": ("passed", []),
        "test_add_unmasked_store": ("failed", ["bounds"]),
        "test_with_a_cuda_fixture": ("passed", []), "test_after_the_cuda_fixture": ("passed", []),
    }, out
    assert all(t["launches"] >= 1 for t in tests.values()), out
    assert not tests["test_add[1000]"]["in_process"]  # forked: CUDA was not up in pytest's process yet
    assert tests["test_after_the_cuda_fixture"]["in_process"], out  # the fixture brought CUDA up there
