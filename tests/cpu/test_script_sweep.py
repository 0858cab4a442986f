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


def test_the_gpu_pass_starts_the_other_configs_when_the_first_launch_says_how_many(monkeypatch):
    """The GPU's interpreter pass (capture=True) on a machine with cores to spare runs the other configs' runs at
    once, started as soon as the first run's first launch tells how many configs survive: they overlap the first
    run, and come out as the runs one after another do."""
    from tdebug.runtime.job import Job, SanitizeOptions
    from tdebug.sanitize import sweep

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    job = Job(target=str(SCRIPT), kind="script", sanitize=SanitizeOptions())
    spans: dict[int, list[float]] = {}
    real_run_job = sweep.run_job

    def timed(j, **kwargs):
        import time

        began = time.monotonic()
        try:
            return real_run_job(j, **kwargs)
        finally:
            spans[j.config_rank] = [began, time.monotonic()]

    monkeypatch.setattr(sweep, "run_job", timed)
    monkeypatch.setattr(sweep.os, "cpu_count", lambda: 1)  # a small machine: one run after another
    one_by_one = sweep.sanitize_script(job, timeout=120, capture=True)
    assert sorted(spans) == [0, 1, 2, 3] and all(spans[r][0] >= spans[r - 1][1] for r in (1, 2, 3)), spans
    spans.clear()
    monkeypatch.setattr(sweep.os, "cpu_count", lambda: 16)  # four runs at once
    at_once = sweep.sanitize_script(job, timeout=120, capture=True)
    assert sorted(spans) == [0, 1, 2, 3]
    assert all(spans[r][0] < spans[0][1] for r in (1, 2, 3)), spans  # started while the first still ran

    def cases(result):
        return [(c.status, c.label, sorted((f.check, f.kernel, f.line, f.count) for f in c.findings))
                for c in result.cases]

    assert cases(at_once) == cases(one_by_one)
    assert [c.status for c in at_once.cases] == ["fail", "pass", "pass", "pass"], cases(at_once)
    assert not at_once.fatal and [f.message for f in at_once.notes] == [f.message for f in one_by_one.notes]


def test_the_gpu_pass_stops_the_pre_started_runs_a_script_without_autotune_does_not_need(monkeypatch):
    """The GPU pass starts the other configs' runs beside the first, held at a gate once imported; a script that
    launches no autotuned kernel needs none of them: they end unrun, and the result is the first run's alone."""
    from tdebug.runtime import gate
    from tdebug.runtime.job import Job, SanitizeOptions
    from tdebug.sanitize import sweep

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    made: list[gate.Gate] = []
    real_gate = sweep.Gate

    def tracked() -> gate.Gate:
        made.append(real_gate())
        return made[-1]

    monkeypatch.setattr(sweep, "Gate", tracked)
    monkeypatch.setattr(sweep.os, "cpu_count", lambda: 12)  # three runs at once: two pre-started
    job = Job(target=str(ROOT / "tests" / "cpu" / "data" / "one_launch.py"), kind="script",
              sanitize=SanitizeOptions())
    result = sweep.sanitize_script(job, timeout=120, capture=True)
    assert not result.fatal and [c.status for c in result.cases] == ["pass"], result.cases
    assert len(made) == 2 and all(g.decision == gate.STOP and not g.path.exists() for g in made)


def test_a_gated_child_waits_for_go_or_stop(tmp_path):
    import threading
    import time

    from tdebug.runtime import gate

    assert gate.wait(lambda: None, environ={})  # no gate: go at once
    for decision, goes in ((gate.GO, True), (gate.STOP, False)):
        g = gate.Gate()
        threading.Timer(0.3, g.decide, args=(decision,)).start()
        began = time.monotonic()
        assert gate.wait(lambda: None, environ=g.env()) is goes
        assert 0.25 < time.monotonic() - began < 5
        g.close()
        assert not g.path.exists()
    assert gate.wait(lambda: None, environ={gate.ENV: str(tmp_path / "gone")}) is False  # the parent is gone


def test_the_gpu_pass_with_a_piped_stdin_pre_starts_no_run_and_each_run_reads_it_whole(monkeypatch):
    """A piped stdin is recorded as the first run reads it and replayed to the later runs: none may start (and
    take the live pipe) before the first run has it."""
    import io

    from tdebug.runtime.job import Job, SanitizeOptions
    from tdebug.sanitize import sweep

    read, write = os.pipe()
    os.write(write, b"300\n")
    os.close(write)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.FileIO(read)))
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.setattr(sweep.os, "cpu_count", lambda: 12)
    monkeypatch.setattr(sweep, "Gate", lambda: pytest.fail("a run was pre-started with a piped stdin"))
    job = Job(target=str(ROOT / "tests" / "cpu" / "data" / "autotuned_reads_stdin.py"), kind="script",
              sanitize=SanitizeOptions())
    result = sweep.sanitize_script(job, timeout=120, capture=True)
    assert [c.status for c in result.cases] == ["pass", "pass"], result.cases
    assert all("n = 300" in c.stderr for c in result.cases), [c.stderr for c in result.cases]  # what each printed
