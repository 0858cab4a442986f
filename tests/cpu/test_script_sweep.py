"""A script sanitized once per autotune config (sanitize/sweep.py): the runs after the first are processes
forked from one worker (runtime/script_sweep.py). They must come out as fresh processes per run do
(TDEBUG_SWEEP=spawn, the reference): the same cases, statuses and findings, a crash or a hang in one config's run
reported on that run with the runs after it still made."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tests" / "cpu" / "data" / "sweep_configs.py"


def sanitize(tmp_path: Path, sweep: str, *argv: str, timeout: str = "120") -> tuple[int, dict, str]:
    out = tmp_path / f"{sweep}-{'-'.join(argv) or 'plain'}.json"
    p = subprocess.run([sys.executable, "-m", "tdebug", "sanitize", str(SCRIPT), "--device", "cpu", "--timeout",
                        timeout, "--json", str(out), *(["--", *argv] if argv else [])], cwd=ROOT,
                       capture_output=True, text=True, timeout=600,
                       env={**os.environ, "PYTHONPATH": str(ROOT), "TDEBUG_SWEEP": sweep})
    return p.returncode, json.loads(out.read_text()), p.stdout + p.stderr


def _cases(report: dict) -> list[tuple]:
    """What must not depend on how the runs were started: per run, its status, the configs it ran and its
    findings (check, kernel, line, element count)."""
    (target,) = report["targets"] if "targets" in report else [report]
    return [(c["status"], c["label"], sorted((f["check"], f.get("kernel", ""), f.get("line", 0), f.get("count", 0))
                                             for f in c["findings"]))
            for c in target["cases"]]


@pytest.mark.parametrize("argv", [pytest.param((), marks=pytest.mark.slow), ("crash",)])  # crash: findings too
def test_forked_runs_give_what_fresh_processes_give(tmp_path, argv):
    code, forked, out = sanitize(tmp_path, "fork", *argv)
    ref_code, spawned, ref_out = sanitize(tmp_path, "spawn", *argv)
    assert code == ref_code == 1, (out, ref_out)
    assert _cases(forked) == _cases(spawned), (out, ref_out)
    cases = _cases(forked)
    assert len(cases) == 4 and all(f"BLOCK={b}" in out for b in (32, 64, 128, 256) if not (argv and b == 128)), out
    statuses = [status for status, _, _ in cases]
    assert statuses[0] == "fail" and any(check == "unwritten" for check, *_ in cases[0][2]), cases  # BLOCK 32
    assert statuses[1] == "pass" and statuses[3] == "pass", cases
    assert statuses[2] == ("crash" if argv else "pass"), cases
    if argv:
        assert "SIGSEGV" in out and "run 4 of 4" in out, out  # the run after the crash was made


@pytest.mark.slow  # 30 s: the hang waits out its --timeout
def test_a_run_that_hangs_is_ended_and_the_next_config_still_runs(tmp_path):
    code, report, out = sanitize(tmp_path, "fork", "hang", timeout="20")
    statuses = [status for status, _, _ in _cases(report)]
    assert code == 1 and statuses[2] == "hang" and statuses[3] == "pass", (statuses, out)
    assert "BLOCK=256" in out, out
