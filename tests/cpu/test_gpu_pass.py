"""The GPU's interpreter pass runs a script once per surviving autotune config (sanitize/sweep.py): a later
config's run that could not be done makes the whole result fatal, never a clean report of the first run alone."""

from __future__ import annotations

from tdebug.runtime.job import Job
from tdebug.runtime.results import CaseResult, JobResult
from tdebug.sanitize import sweep


def test_a_later_configs_fatal_run_is_not_dropped(monkeypatch):
    launch = {"kernel": "k", "grid": [16, 1, 1], "config_index": 0, "config": "BLOCK=64 warps=4 stages=3",
              "survivors": [0, 1, 2]}
    ok = JobResult(kernel="s.py", labels=["s.py"], cases=[CaseResult(0, "s.py", "pass", launches=[launch])])
    calls = []

    def fake_run_job(job, mode, timeout, capture=False, stdin=None):
        calls.append((job.config_rank, capture))
        return ok if job.config_rank == 0 else JobResult(kernel="s.py", fatal="internal error in tdebug")

    monkeypatch.setattr(sweep, "run_job", fake_run_job)
    result = sweep.sanitize_script(Job(target="/x/s.py", kind="script"), 10.0, capture=True)
    assert calls == [(0, True), (1, True), (2, True)]  # every surviving config, output captured on the GPU
    assert result.fatal == "internal error in tdebug"
