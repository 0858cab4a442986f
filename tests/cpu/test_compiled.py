"""Triton kernels called from torch.compile'd code run under tdebug as they would eagerly, with every check:
`tdebug sanitize` on a script (tests/cpu/data/compiled_launch.py) and `pytest --tdebug` on a test file
(tests/cpu/data/plugin_compiled.py), clean and with a store missing its mask."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "cpu" / "data"
SCRIPT = DATA / "compiled_launch.py"


def tdebug(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tdebug", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)


def test_sanitize_finds_the_missing_mask_of_a_kernel_called_from_compiled_code(tmp_path):
    report = tmp_path / "report.json"
    done = tdebug("sanitize", str(SCRIPT), "--config", "0", "--json", str(report), "--", "--bug")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "compiled model matches float64" in done.stdout  # the compiled model ran to the end
    (case,) = json.loads(report.read_text())["targets"][0]["cases"]
    (finding,) = case["findings"]
    assert (finding["check"], finding["kernel"], finding["tensor"], finding["count"]) == (
        "bounds", "affine_kernel", "out_ptr", 24)
    assert "the bug" in SCRIPT.read_text().splitlines()[finding["line"] - 1]


@pytest.mark.slow
def test_sanitize_clean_kernels_called_from_compiled_code():
    done = tdebug("sanitize", str(SCRIPT))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("compiled model matches float64") == 2  # one run per autotune config
    assert "clean (2 case(s)" in done.stdout


@pytest.mark.slow
def test_fullgraph_says_one_line_and_exits_3():
    done = tdebug("sanitize", str(SCRIPT), "--config", "0", "--", "--fullgraph")
    assert done.returncode == 3, done.stdout + done.stderr
    assert "compile without fullgraph=True" in done.stdout + done.stderr
    assert "Traceback" not in done.stderr


def test_pytest_tdebug_checks_kernels_called_from_compiled_code(pytester: pytest.Pytester):
    pytester.makepyfile(test_compiled=(DATA / "plugin_compiled.py").read_text())
    report = pytester.path / "tdebug.json"
    result = pytester.runpytest_subprocess("--tdebug", "--tdebug-json", str(report), "-p", "no:cacheprovider",
                                           timeout=600)
    result.assert_outcomes(passed=1, failed=1)
    tests = {t["test"]: t for t in json.loads(report.read_text())["tests"]}
    assert tests["test_compiled.py::test_compiled_clean"]["findings"] == []
    (finding,) = tests["test_compiled.py::test_compiled_missing_mask"]["findings"]
    assert (finding["check"], finding["kernel"], finding["tensor"]) == ("bounds", "affine_kernel", "out_ptr")
    assert "store past the end of 'out_ptr'" in result.stdout.str()
