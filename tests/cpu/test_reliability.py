"""Reliability, round three (issue 29): launches in forked, spawned and threaded workers are followed (never
"clean", never "no kernel"), threads neither corrupt memory nor invent findings."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WORKERS = ROOT / "tests" / "cpu" / "data" / "workers.py"


def tdebug(*args: str, cwd: Path = ROOT, env: dict | None = None, stdin: str = "",
           timeout: float = 300) -> subprocess.CompletedProcess:
    full = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run([sys.executable, "-m", "tdebug", *args], cwd=cwd, input=stdin, capture_output=True,
                          text=True, env=full, timeout=timeout)


@pytest.mark.parametrize("mode", ["fork_bad", pytest.param("fork_pool", marks=pytest.mark.slow),
                                  pytest.param("spawn_pool", marks=pytest.mark.slow),
                                  pytest.param("threads_one_bad", marks=pytest.mark.slow)])
def test_an_out_of_bounds_store_in_a_worker_is_found(mode):
    p = tdebug("sanitize", str(WORKERS), "--", mode)
    out = p.stdout + p.stderr
    assert p.returncode == 1, out
    assert "bounds: store outside every tensor of the launch: past the end of 'out_ptr'" in out, out
    assert ": clean" not in out and "launched no Triton kernel" not in out
    if mode != "threads_one_bad":
        assert "(in child process " in out, out
    assert "free()" not in out and "corruption" not in out, out


@pytest.mark.parametrize("mode", [pytest.param("fork_pool_clean", marks=pytest.mark.slow), "threads"])
def test_correct_launches_in_workers_are_counted_and_clean(mode):
    p = tdebug("sanitize", str(WORKERS), "--", mode)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    assert ": clean (1 case(s)" in out, out
    assert "bounds" not in out and "wrong results" not in out, out


def test_a_forked_childs_launches_fail_its_test_under_pytest(tmp_path):
    test = tmp_path / "test_forks.py"
    test.write_text(f"import os, sys\nsys.path.insert(0, {str(WORKERS.parent)!r})\nfrom workers import add\n\n"
                    "def test_forked_bad():\n    add()\n    pid = os.fork()\n    if pid == 0:\n"
                    "        add(masked=False)\n        os._exit(0)\n    os.waitpid(pid, 0)\n\n"
                    "def test_forked_clean():\n    pid = os.fork()\n    if pid == 0:\n        add()\n"
                    "        os._exit(0)\n    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0\n")
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--tdebug", str(test)],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    out = p.stdout + p.stderr
    assert p.returncode == 1, out
    assert "1 failed, 1 passed" in out, out
    assert "FAILED test_forks.py::test_forked_bad" in out and "(in child process" in out, out
