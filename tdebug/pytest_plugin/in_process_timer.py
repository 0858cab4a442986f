"""The timer of a test that runs in pytest's own process (CUDA was initialised there), and the mark it leaves so
that a pytest-xdist controller can say why a worker ended in the middle of such a test: tdebug's --tdebug-timeout
ran out (tdebug ended the worker, as it ends a hang), or something else ended it before that."""

from __future__ import annotations

import contextlib
import faulthandler
import hashlib
import json
import time
from collections.abc import Iterator
from pathlib import Path

MARKS_KEY = "tdebug_timer_marks"  # pytest-xdist's workerinput: the controller's folder of marks
SLACK_S = 2.0  # a worker that ended this close to its test's deadline was ended by the timer


def mark_path(folder: Path, nodeid: str) -> Path:
    return folder / (hashlib.sha1(nodeid.encode()).hexdigest()[:20] + ".json")


class Watchdog:
    """Ends this process when a test in it runs past its timeout (faulthandler's own thread: it fires even while
    native code holds the GIL), paused while a launch waits for host memory: a test waiting its turn is not
    hanging. With `marks` (a pytest-xdist worker) each armed test has a mark there until it is disarmed."""

    def __init__(self, marks: Path | None = None) -> None:
        self.marks = marks
        self.deadline: float | None = None
        self.nodeid: str | None = None
        self.timeout = 0.0
        self.started = 0.0

    def arm(self, seconds: float, nodeid: str | None = None) -> None:
        if nodeid is not None:
            self.nodeid, self.timeout, self.started = nodeid, seconds, time.time()
        self.deadline = time.monotonic() + seconds
        self._write_mark(time.time() + seconds)
        faulthandler.dump_traceback_later(seconds, exit=True)

    def disarm(self) -> None:
        if self.deadline is not None:
            faulthandler.cancel_dump_traceback_later()
            self.deadline = None
        if self.marks is not None and self.nodeid is not None:
            with contextlib.suppress(OSError):
                mark_path(self.marks, self.nodeid).unlink(missing_ok=True)
        self.nodeid = None

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        if self.deadline is None:
            yield
            return
        left = self.deadline - time.monotonic()
        faulthandler.cancel_dump_traceback_later()
        self.deadline = None
        self._write_mark(None)
        try:
            yield
        finally:
            self.arm(max(left, 1.0))

    def _write_mark(self, deadline: float | None) -> None:
        if self.marks is None or self.nodeid is None:
            return
        mark = {"nodeid": self.nodeid, "timeout": self.timeout, "started": self.started, "deadline": deadline}
        path = mark_path(self.marks, self.nodeid)
        tmp = path.with_suffix(".tmp")
        try:
            tmp.write_text(json.dumps(mark))
            tmp.replace(path)  # the controller never reads half a mark
        except OSError:  # the folder gone (the controller ended first), a full disk: the test runs on, unmarked
            pass


def why_worker_ended(marks: Path, nodeid: str, now: float | None = None) -> str | None:
    """What the mark of `nodeid` says of its worker's end (and the mark removed), None where the test left none:
    it did not run under the timer, or it ended some other way than in its call."""
    path = mark_path(marks, nodeid)
    try:
        mark = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    path.unlink(missing_ok=True)
    now = time.time() if now is None else now
    ran = now - mark["started"]
    timeout = mark["timeout"]
    if mark["deadline"] is not None and now >= mark["deadline"] - SLACK_S:
        return (f"tdebug: this test ran in pytest's own process (CUDA was initialised there) and its --tdebug-timeout "
                f"of {timeout:g} s ran out ({ran:.0f} s after it began; time spent waiting for host memory is not "
                "counted): tdebug ended the worker, as it ends a hang. A kernel that is only slow under the "
                "interpreter at this size (or on a machine this busy) needs a longer --tdebug-timeout or "
                "@pytest.mark.tdebug(timeout=...); the traceback of every thread at that moment went to the "
                "worker's stderr.")
    waiting = " while it waited for host memory" if mark["deadline"] is None else ""
    return (f"tdebug: the worker ended {ran:.0f} s into this test{waiting}, before its --tdebug-timeout of "
            f"{timeout:g} s: not tdebug's timer but a crash in native code or a kill from outside (the kernel's "
            "out-of-memory killer among them: see `dmesg`).")
