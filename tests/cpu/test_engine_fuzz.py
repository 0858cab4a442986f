"""The engine fuzzer's small budget: random valid Triton kernels (tests/cpu/data/kernel_fuzz.py) under the serial
and the batched engine, bit-identical outputs and in-place inputs, identical findings, error and store records;
and the fuzzer's own health: every kernel valid, the grammar's forms generated. The long run is
scripts/fuzz_engine.py --minutes N."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FUZZ = Path(__file__).parent / "data" / "kernel_fuzz.py"
EXAMPLES = int(os.environ.get("TDEBUG_ENGINE_FUZZ_EXAMPLES", "30"))


def _fuzz(*args: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("TDEBUG_EXECUTOR", None)
    proc = subprocess.run([sys.executable, str(FUZZ), *args], capture_output=True, text=True, timeout=600, cwd=ROOT,
                          env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_random_kernels_identical_under_both_engines():
    report = _fuzz("--examples", str(EXAMPLES), "--seed", "0")
    found = report["disagreement"]
    assert found is None, (f"the engines disagree ({found['signature']}); minimal kernel, seed {found['seed']}:\n"
                           f"{found['source']}\n{found['summary']}")
    # The fuzzer's own health: the kernels it wrote were valid Triton, and the grammar reached its forms.
    assert report["tried"] >= 0.9 * EXAMPLES  # (hypothesis may draw one kernel twice: it runs once)
    assert report["invalid_count"] == 0, report["invalid"]
    coverage = report["coverage"]
    for form in ("grid:1-D", "grid:2-D", "statement:reduce", "statement:scan", "statement:atomic", "statement:if",
                 "statement:loop", "statement:dot"):
        assert coverage.get(form, 0) >= 1, (form, coverage)
    assert len([k for k in coverage if k.startswith("op:")]) >= 15, coverage
    assert len([k for k in coverage if k.startswith("dtype:")]) >= 6, coverage


def test_a_disagreement_is_shrunk_to_a_small_kernel(tmp_path):
    """The long run's machinery on a kernel made to disagree (a fuzzer must be able to fail): the planted
    difference is found, its kernel shrunk (fewer lines than the generator wrote), written out, exit 1."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TDEBUG_FUZZ_PLANT": "1",
           "TDEBUG_FUZZ_SHRINK_SECONDS": "15"}
    env.pop("TDEBUG_EXECUTOR", None)
    out = tmp_path / "found"
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "fuzz_engine.py"), "--minutes", "0.3", "--out",
                           str(out), "--json", str(tmp_path / "r.json")], capture_output=True, text=True, timeout=600,
                          cwd=ROOT, env=env)
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    report = json.loads((tmp_path / "r.json").read_text())
    planted = [c for c in report["classes"] if c["signature"] == "planted"]
    assert planted, report["classes"]
    text = Path(planted[0]["file"]).read_text()
    body = text[text.index("def fuzz_kernel"):text.index("def launch")].strip().splitlines()
    assert planted[0]["statements"] <= 6 and len(body) <= 7, text
    assert "tl.sum" in text  # the planted class: a kernel with a reduction
    assert report["kernels"] >= 5 and report["kernels_per_minute"] > 0


def test_what_the_fuzzer_found_is_identical_under_both_engines():
    """The fuzzer's finds, one minimal kernel per class of disagreement (data/fuzz_scenarios.py)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("TDEBUG_EXECUTOR", None)
    proc = subprocess.run([sys.executable, str(FUZZ.parent / "engine_diff.py"), "--scenarios",
                           str(FUZZ.parent / "fuzz_scenarios.py")], capture_output=True, text=True, timeout=600,
                          cwd=ROOT, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(report["scenarios"]) >= 7
    assert report["differences"] == [], [(d["scenario"], d["what"]) for d in report["differences"]]
    runs = report["scenarios"]
    # What each finds, whichever engine: the checks still fire.
    assert runs["scenario_split_after_reads"]["findings"] == ["race", "uninit", "uninit"]
    assert runs["scenario_log_then_sum"]["findings"] == ["nan"]
    assert runs["scenario_uninit_in_ragged_loop"]["findings"] == ["uninit", "uninit"]
    assert runs["scenario_fma_overflow"]["findings"] == ["nan"]
    assert runs["scenario_int_to_half_in_loop"]["findings"] == ["nan", "nan"]  # the same examples on both
    assert runs["scenario_scalar_bound_in_loop"]["batched_launches"] == 1
