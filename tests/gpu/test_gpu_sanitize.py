"""`tdebug sanitize --device cuda` on a real GPU: compute-sanitizer and tdebug's interpreter pass, one merged
report. Each purpose-written buggy script is caught with the right class by the engine that can see it; the
correct ones are clean (exit 0). Skipped without CUDA or compute-sanitizer. On the H100: scripts/gpu_tests.sh.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tdebug.sanitize.compute_sanitizer import find_compute_sanitizer

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
SCRIPTS = HERE / "scripts"
DATA = HERE / "data"

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
              pytest.mark.skipif(find_compute_sanitizer() is None, reason="needs compute-sanitizer")]


def sanitize(tmp_path: Path, *args: str) -> tuple[int, dict, str]:
    out = tmp_path / "report.json"
    proc = subprocess.run([sys.executable, "-m", "tdebug", "sanitize", "--device", "cuda", "--seed", "0",
                           "--json", str(out), *args], capture_output=True, text=True, cwd=ROOT, timeout=600)
    report = json.loads(out.read_text()) if out.exists() else {}
    return proc.returncode, report, proc.stdout + proc.stderr


def findings(report: dict) -> list[dict]:
    return [f for t in report["targets"] for c in t["cases"] for f in c["findings"]]


def engines_of(f: dict) -> set[str]:
    names = f["extra"].get("engines") or [f["source"]]
    return {"tdebug" if n.startswith("tdebug") else "compute-sanitizer" if n.startswith("compute") else n
            for n in names}


def line_of(path: Path, text: str) -> int:
    return next(i for i, ln in enumerate(path.read_text().splitlines(), 1) if text in ln)


# script, class, line marker, engines that must have found it
BUGGY = [
    ("oob_read.py", "bounds", "x = tl.load", {"compute-sanitizer", "tdebug"}),
    ("oob_write.py", "bounds", "tl.store(out_ptr + offs, x + y)", {"compute-sanitizer", "tdebug"}),
    ("uninit_read.py", "uninit", "b = tl.load", {"compute-sanitizer", "tdebug"}),
    ("race_histogram.py", "race", "old = tl.load", {"tdebug"}),
]


@pytest.mark.parametrize("script,check,marker,engines", BUGGY, ids=[b[0] for b in BUGGY])
def test_buggy_script_caught_with_its_class_and_engine(tmp_path, script, check, marker, engines):
    code, report, output = sanitize(tmp_path, str(SCRIPTS / script))
    assert code == 1, output
    hits = [f for f in findings(report) if f["check"] == check]
    assert hits, output
    line = line_of(SCRIPTS / script, marker)
    at_line = [f for f in hits if f["line"] == line and f["file"].endswith(script)]
    assert at_line, [(f["check"], f["line"], f["source"]) for f in hits]
    found_by = set().union(*(engines_of(f) for f in at_line))
    assert engines <= found_by, (found_by, output)
    assert "found by" in output
    # one finding per (class, line): a finding both engines make is shown once
    keys = [(f["check"], f["line"]) for f in findings(report) if f["check"] == check]
    both = [f for f in at_line if len(engines_of(f)) == 2]
    if engines == {"compute-sanitizer", "tdebug"}:
        assert both and keys.count((check, line)) == 1, keys
    assert set(report["targets"][0]["engines"]) >= {"memcheck", "initcheck", "tdebug"}


def test_race_is_only_seen_by_the_interpreter_pass(tmp_path):
    code, report, output = sanitize(tmp_path, "--engine", "compute-sanitizer", str(SCRIPTS / "race_histogram.py"))
    assert code == 0, output  # what the GPU tools alone say: clean
    assert set(report["targets"][0]["engines"]) == {"memcheck", "initcheck"}
    assert "tdebug" not in report["engine"]


def test_unwritten_output_under_a_non_default_autotune_config(tmp_path):
    code, report, output = sanitize(tmp_path, str(DATA / "autotune_grid_spec.py"))
    assert code == 1, output
    cases = {c["label"]: c for c in report["targets"][0]["cases"]}
    unwritten = {label for label, c in cases.items() for f in c["findings"]
                 if f["check"] == "unwritten" and f["source"] == "tdebug"}
    assert unwritten == {"3000 fp32 contiguous config#1", "3000 fp32 contiguous config#2"}, output
    assert cases["3000 fp32 contiguous config#0"]["status"] == "pass", output


CORRECT = ["masked_view_load.py", "atomic_histogram.py", "softmax_rows.py", "autotuned_matmul.py", "clean_add.py",
           "tutorial_matmul.py", "tutorial_attention.py"]


@pytest.mark.parametrize("script", CORRECT)
def test_correct_script_clean_under_both_engines(tmp_path, script):
    code, report, output = sanitize(tmp_path, str(SCRIPTS / script))
    assert code == 0, output
    assert findings(report) == [], output
    assert not report["targets"][0]["notes"], output
    assert "clean" in output


def test_a_launch_over_the_cap_is_said_not_checked_never_clean(tmp_path):
    code, report, output = sanitize(tmp_path, "--max-programs", "2", str(SCRIPTS / "softmax_rows.py"))
    assert code == 3, output
    notes = report["targets"][0]["notes"]
    assert notes and "over the cap" in notes[0] and "--max-programs" in notes[0], notes
    assert "NOT CHECKED" in output and "no findings, NOT fully checked" in output
