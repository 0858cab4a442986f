"""runtime/host_memory.py: large interpreted launches of several processes (pytest-xdist workers on a GPU machine)
share the machine's memory through lock files; one that does not fit waits, and a dead holder frees its room."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tdebug.runtime import host_memory

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(host_memory.fcntl is None, reason="no flock on this platform")

BUDGET = 4 * host_memory.UNIT  # a machine whose budget (FRACTION of it) is two units
HOLDER = """
import sys, time
from tdebug.runtime import host_memory
with host_memory.admitted(int(sys.argv[1]), budget=int(sys.argv[2])):
    print("held", flush=True)
    time.sleep(float(sys.argv[3]))
"""


@pytest.fixture
def temp_root(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def _holder(nbytes: int, seconds: float) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(nbytes), str(BUDGET), str(seconds)],
                            stdout=subprocess.PIPE, text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_units_small_launches_take_none_and_a_huge_one_takes_the_whole_budget():
    assert host_memory.units_for(host_memory.UNIT - 1, 10) == 0
    assert host_memory.units_for(host_memory.UNIT + 1, 10) == 2
    assert host_memory.units_for(100 * host_memory.UNIT, 10) == 10
    assert host_memory.total_bytes() > 0


def test_a_launch_that_does_not_fit_waits_for_the_holder_and_one_that_fits_does_not(temp_root):
    entered: list[str] = []

    @contextlib.contextmanager
    def waiting():
        entered.append("wait")
        yield

    holder = _holder(host_memory.UNIT, 1.5)  # one of the two units
    try:
        with host_memory.admitted(host_memory.UNIT, budget=BUDGET, waiting=waiting) as waited:  # the other: at once
            assert waited < 0.5 and entered == []
        with host_memory.admitted(2 * host_memory.UNIT, budget=BUDGET, waiting=waiting) as waited:  # both: later
            assert waited > 0.5 and holder.poll() is not None and entered == ["wait"]
    finally:
        holder.kill()
        holder.wait()


def test_a_killed_holder_leaves_no_room_reserved(temp_root):
    holder = _holder(2 * host_memory.UNIT, 60)
    start = time.monotonic()
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    with host_memory.admitted(2 * host_memory.UNIT, budget=BUDGET):
        assert time.monotonic() - start < 5


def test_divergence_holds_room_for_each_interpreted_launch(monkeypatch):
    """The GPU's interpreter pass asks host_memory for several times the launch's storages before it copies them."""
    import torch

    from tdebug.sanitize import divergence

    asked: list[int] = []

    @contextlib.contextmanager
    def admitted(nbytes: int, budget=None, waiting=None):
        asked.append(nbytes)
        yield 0.0

    monkeypatch.setattr(divergence, "DEVICES", ("cpu",))
    monkeypatch.setattr(divergence.host_memory, "admitted", admitted)
    monkeypatch.setattr(divergence, "compiled_function", lambda fn, kwargs=None: _Compiled())
    check = divergence.DivergenceCheck(lambda f: None, "pytest", keep="compiled")
    x, out = torch.randn(8), torch.full((8,), float("nan"))
    check.launch(lambda fn, x, out, grid=None, warmup=False: out.copy_(x), (_Kernel(), x, out), {"grid": (1,)})
    per_storage = divergence.HOST_COPIES * 8 * 4 + divergence.HOST_BYTES_PER_ELEMENT * 8
    assert asked == [2 * per_storage] and torch.equal(out, x)


def test_pytests_in_process_timer_pauses_while_a_launch_waits(monkeypatch):
    """A test in pytest's own process (CUDA initialised) is ended by faulthandler's timer; a wait for host memory
    stops it and starts it again with the time the test had left."""
    import faulthandler

    from tdebug.pytest_plugin.in_process_timer import Watchdog

    calls: list = []
    monkeypatch.setattr(faulthandler, "dump_traceback_later", lambda s, exit=False: calls.append(("arm", round(s))))
    monkeypatch.setattr(faulthandler, "cancel_dump_traceback_later", lambda: calls.append(("cancel",)))
    dog = Watchdog()
    with dog.paused():  # not armed: nothing to pause
        pass
    dog.arm(100)
    with dog.paused():
        time.sleep(0.3)
    dog.disarm()
    dog.disarm()
    assert calls == [("arm", 100), ("cancel",), ("arm", 100), ("cancel",)]


class _Kernel:
    __name__ = "copy_kernel"
    arg_names = ["x_ptr", "out_ptr"]
    fn = None


class _Compiled:
    def run(self, x, out, grid=None, **kwargs):
        out.copy_(x)


def test_time_waiting_for_host_memory_is_counted_and_said_apart_from_the_tests_own_code(monkeypatch):
    """The seconds a launch waited are the check's (per test: the runner's difference), and the suite's summary line
    says them apart from the tests' own code."""
    import types

    import torch

    from tdebug.pytest_plugin.reporter import Reporter
    from tdebug.sanitize import divergence

    @contextlib.contextmanager
    def admitted(nbytes: int, budget=None, waiting=None):
        yield 2.5

    monkeypatch.setattr(divergence, "DEVICES", ("cpu",))
    monkeypatch.setattr(divergence.host_memory, "admitted", admitted)
    monkeypatch.setattr(divergence, "compiled_function", lambda fn, kwargs=None: _Compiled())
    check = divergence.DivergenceCheck(lambda f: None, "pytest", keep="compiled")
    x, out = torch.randn(8), torch.empty(8)
    for _ in range(2):
        check.launch(lambda fn, x, out, grid=None, warmup=False: out.copy_(x), (_Kernel(), x, out), {"grid": (1,)})
    assert check.waited == 5.0

    option = types.SimpleNamespace(tdebug_json=None, tdebug_check=None, tdebug_config=None, tdebug_catalogue=None,
                                   tdebug_durations=None)
    config = types.SimpleNamespace(option=option, stash={})
    reporter = Reporter(config, seed=0)
    for i, wait in enumerate((5.0, 0.0)):
        reporter.tests[f"t{i}"] = {"test": f"t{i}", "outcome": "passed", "findings": [], "crash": "", "launches": 2,
                                   "in_process": False, "time": {"seconds": 9.0, "launch_seconds": 3.0,
                                                                 "wait_seconds": wait}}
    lines: list[str] = []
    writer = types.SimpleNamespace(write_sep=lambda *a, **k: None, write_line=lines.append)
    reporter.pytest_terminal_summary(writer)
    (line,) = [x for x in lines if "tests' calls took" in x]
    assert "18.0 s, 6.0 s (33%) of it in Triton launches" in line
    assert "5.0 s waiting for host memory" in line and line.endswith("the rest in the tests' own code")


def test_a_reservation_inside_one_of_the_same_process_takes_nothing_and_never_waits_for_it(temp_root):
    """The GPU's divergence check reserves around the interpreted launch, whose sanitizer reserves again: with a
    budget both would not fit in, the inner one must not wait for the outer."""
    outer = host_memory.reserve(2 * host_memory.UNIT, budget=BUDGET)  # the whole budget
    try:
        assert len(outer.fds) == 2
        start = time.monotonic()
        inner = host_memory.reserve(2 * host_memory.UNIT, budget=BUDGET)
        assert inner.fds == [] and time.monotonic() - start < 0.5
        inner.release()
        again = host_memory.reserve(2 * host_memory.UNIT, budget=BUDGET)  # still inside the outer one
        assert again.fds == []
        again.release()
    finally:
        outer.release()
    after = host_memory.reserve(2 * host_memory.UNIT, budget=BUDGET)
    assert len(after.fds) == 2
    after.release()


def test_the_sanitizers_launch_listener_reserves_for_its_shadows_and_frees_at_the_launchs_end(monkeypatch):
    import torch

    from tdebug.sanitize import admission

    asked: list[int] = []

    class Held:
        waited, released = 0.25, False

        def release(self):
            Held.released = True

    monkeypatch.setattr(admission.host_memory, "reserve", lambda nbytes: asked.append(nbytes) or Held())

    from tdebug.interpreter.batched.launch import Launch

    executor = type("Executor", (), {"fn": None})()
    args = (torch.empty(100, dtype=torch.float16), 3, (torch.empty(10, dtype=torch.float32),))
    launch = Launch(executor, args, {"BLOCK": 16})
    assert launch.smallest_element() == 2 and len(launch.device_storages()) == 2
    turns = admission.HostMemoryTurns()
    turns.on_launch(launch)
    assert asked == [admission.BYTES_PER_ELEMENT * (200 + 40) // 2] and not Held.released
    turns.on_launch_end(launch, None)
    assert Held.released and turns.waited == 0.25 and turns.held == []


def test_the_in_process_timer_marks_its_test_and_a_missing_folder_never_fails_it(tmp_path, monkeypatch):
    """The mark says which test is timed and until when (none while it waits for host memory); the controller's
    reading of it tells the timer's end from another; a marks folder that is gone costs the test nothing."""
    import faulthandler

    from tdebug.pytest_plugin.in_process_timer import Watchdog, mark_path, why_worker_ended

    monkeypatch.setattr(faulthandler, "dump_traceback_later", lambda s, exit=False: None)
    monkeypatch.setattr(faulthandler, "cancel_dump_traceback_later", lambda: None)
    dog = Watchdog(tmp_path)
    dog.arm(50, "t.py::test_a")
    mark = json.loads(mark_path(tmp_path, "t.py::test_a").read_text())
    assert mark["nodeid"] == "t.py::test_a" and mark["timeout"] == 50 and mark["deadline"] > time.time() + 40
    with dog.paused():
        assert json.loads(mark_path(tmp_path, "t.py::test_a").read_text())["deadline"] is None
        assert "while it waited for host memory" in why_worker_ended(tmp_path, "t.py::test_a")
    assert mark_path(tmp_path, "t.py::test_a").exists()  # armed again after the wait
    assert "ran out" in why_worker_ended(tmp_path, "t.py::test_a", now=time.time() + 60)
    assert why_worker_ended(tmp_path, "t.py::test_a") is None  # read once, then gone
    dog.disarm()
    dog.arm(50, "t.py::test_b")
    dog.disarm()
    assert not list(tmp_path.iterdir())
    gone = Watchdog(tmp_path / "gone")
    gone.arm(50, "t.py::test_c")
    gone.disarm()
