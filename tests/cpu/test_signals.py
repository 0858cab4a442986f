"""Ctrl-C and SIGTERM stop tdebug within seconds whatever the kernel does: its whole process tree ends, its
temporary files go, one line is printed, and it exits 130 / 143."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LOOP = ROOT / "tests" / "cpu" / "data" / "loop_forever.py"


def _children() -> dict[int, int]:
    """pid -> parent pid, for every process."""
    table = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            table[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    return table


def _tree(root: int) -> set[int]:
    parents = _children()
    tree, grew = {root}, True
    while grew:
        more = {pid for pid, ppid in parents.items() if ppid in tree} - tree
        grew, tree = bool(more), tree | more
    return tree


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _job_files(pids: set[int]) -> list[Path]:
    """The temporary files named on the command lines of tdebug's children."""
    files = []
    for pid in pids:
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        files += [Path(a.decode()) for a in argv if a.startswith(b"/tmp/tdebug-") or b"tdebug-job-" in a]
    return files


WORDS = {130: "tdebug: interrupted", 143: "tdebug: terminated", 129: "tdebug: hung up (SIGHUP)"}
NESTED = ROOT / "tests" / "cpu" / "data" / "nested_run.py"


@pytest.mark.parametrize("command, signum, code", [
    (["run"], signal.SIGINT, 130),
    (["run"], signal.SIGTERM, 143),
    (["run"], signal.SIGHUP, 129),
    pytest.param(["run", "nested"], signal.SIGTERM, 143, marks=pytest.mark.slow),
    pytest.param(["sanitize"], signal.SIGINT, 130, marks=pytest.mark.slow),
    pytest.param(["viz"], signal.SIGTERM, 143, marks=pytest.mark.slow),
])
def test_a_signal_ends_tdebug_and_its_whole_tree(command, signum, code):
    if signal.getsignal(signum) is signal.SIG_IGN:  # under nohup: tdebug inherits the ignored SIGHUP, as it should
        pytest.skip(f"{signal.Signals(signum).name} is ignored in this session (nohup)")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    target = NESTED if "nested" in command else LOOP  # a nested tdebug gets the time to clean up after itself
    command = command[:1]
    proc = subprocess.Popen([sys.executable, "-m", "tdebug", *command, str(target), "--timeout", "600"], cwd=ROOT,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        if command != ["viz"]:  # viz keeps the script's output until it ends
            while (line := proc.stdout.readline()) and line.strip() != "launching":
                pass
            assert line.strip() == "launching"
        time.sleep(2 if command != ["viz"] else 20)
        tree = _tree(proc.pid)
        assert len(tree) >= 2, "the child should be running the kernel"
        temp = _job_files(tree)
        assert temp and all(p.exists() for p in temp)
        started = time.monotonic()
        os.kill(proc.pid, signum)
        assert proc.wait(timeout=5) == code
        assert time.monotonic() - started < 5
        _, err = proc.communicate(timeout=5)
        lines = err.strip().splitlines()
        assert lines == [WORDS[code]] * (2 if target == NESTED else 1), err  # a nested tdebug says its own
        deadline = time.monotonic() + 2
        while any(_alive(p) for p in tree) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not [p for p in tree if _alive(p)], "a process of tdebug's tree survived"
        assert not [p for p in temp if p.exists()], "a temporary file survived"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(4))
def test_a_signal_at_a_random_moment_leaves_nothing_behind(seed):
    """SIGINT, SIGTERM or SIGHUP at a random moment of a sanitize run whose script launches from a fork pool:
    the exit code says which (or the run's own when it had ended), and no process or temporary file is left."""
    import random

    rng = random.Random(seed)
    signum = rng.choice([signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
    delay = rng.uniform(0.2, 14.0)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    workers = ROOT / "tests" / "cpu" / "data" / "workers.py"
    proc = subprocess.Popen([sys.executable, "-m", "tdebug", "sanitize", str(workers), "--", "fork_pool"], cwd=ROOT,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        tree, temp, deadline = {proc.pid}, set(), time.monotonic() + delay
        while time.monotonic() < deadline and proc.poll() is None:
            tree |= _tree(proc.pid)
            temp |= {path for job in _job_files(tree) for path in (job, Path(f"{job}.d"))}  # .d: followed forks
            time.sleep(0.05)
        os.kill(proc.pid, signum)
        code = proc.wait(timeout=8)
        _, err = proc.communicate(timeout=5)
        if code != 128 + signum:
            assert code == 1 and delay > 3, (code, err)  # it had ended with its findings first
        else:
            assert err.strip().splitlines()[-1] == WORDS[code], err
        end = time.monotonic() + 3
        while any(_alive(p) for p in tree) and time.monotonic() < end:
            time.sleep(0.05)
        assert not [p for p in tree if _alive(p)], "a process of tdebug's tree survived"
        assert not [p for p in temp if p.exists()], "a temporary file survived"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
