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
    """The `tdebug` console script as a user runs it (`python -m tdebug` would import a ./tdebug.py itself)."""
    full = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    command = [str(Path(sys.executable).with_name("tdebug"))]
    return subprocess.run([*command, *args], cwd=cwd, input=stdin, capture_output=True,
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


# --- the child's environment is tdebug's ---
CLOSES_FDS = """import os, sys
sys.path.insert(0, {data!r})
from workers import add
assert add() < 1e-5
os.closerange(3, 256)
print("closed")
"""


def test_a_user_tdebug_py_in_the_working_folder_and_closed_fds_do_not_break_the_worker(tmp_path):
    (tmp_path / "tdebug.py").write_text("raise SystemExit('the user tdebug.py was imported')\n")
    (tmp_path / "helper_mod.py").write_text("VALUE = 41\n")  # the script's own imports still work
    script = tmp_path / "closes_fds.py"
    script.write_text("import helper_mod\nassert helper_mod.VALUE == 41\n"
                      + CLOSES_FDS.format(data=str(WORKERS.parent)))
    p = tdebug("sanitize", script.name, cwd=tmp_path)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    assert "closed" in p.stdout and ": clean (1 case(s)" in out, out
    assert "Traceback" not in out and "user tdebug.py" not in out, out
