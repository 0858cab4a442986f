"""Run a piece of a test in a forked child process: events come back over a pipe, a crash or a hang
kills only the child, and the parent learns how it ended and which launch was in flight.

Fork, not a fresh interpreter: the child inherits the collected test, its fixtures, the imported
kernels and tdebug's patches, so starting it costs milliseconds instead of seconds of imports.
"""

from __future__ import annotations

import gc
import os
import signal
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field

from ..runtime.events import Event, EventKind
from ..runtime.harness import EventPipe
from ..runtime.processes import die_with_parent, exit_now
from ..runtime.worker import Channel


@dataclass
class ChildRun:
    """How one forked child ended: its events in order, its result (None if it died first)."""

    events: list[Event] = field(default_factory=list)
    result: dict | None = None
    exit_code: int = 0  # negative: killed by that signal
    hung: bool = False
    seconds: float = 0.0
    first_launch: float | None = None  # seconds into the run when its first Triton launch began (None: none did)
    peak_rss: int = 0  # bytes: the child's largest resident set (its rusage once it ended)

    @property
    def crashed(self) -> bool:
        return self.result is None and not self.hung

    def launches(self) -> list[dict]:
        """The launches the child announced (kernel, config) before it ended."""
        return [dict(e.data) for e in self.events if e.kind is EventKind.LAUNCH]


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


BEFORE_LAUNCH = 4  # before its first launch a test may run this many timeouts (its own code, on a loaded machine)


def run_forked(work: Callable[[Channel], dict], timeout: float | None) -> ChildRun:
    """Call work(channel) in a forked child; its return value is the result event. timeout: seconds the child
    may run from its first Triton launch before it is killed as hung (before one: BEFORE_LAUNCH times that, so a
    slow fixture or a loaded machine is not taken for a hung kernel); None: no limit."""
    read_fd, write_fd = os.pipe()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    started = time.monotonic()
    # What the parent holds (torch, Triton, the collected tests) is frozen out of the collector's sight in the
    # child: a collection there would walk it all, and touch (copy) every page of it. The parent thaws it again.
    parent = os.getpid()
    gc.freeze()
    try:
        pid = os.fork()
    except BaseException:
        gc.unfreeze()
        raise
    if pid != 0:
        gc.unfreeze()
    if pid == 0:  # the child: never returns into pytest
        os.setpgid(0, 0)  # its own process group: whatever the test starts is killed with it
        die_with_parent(parent)  # a worker killed (SIGKILL: no cleanup) takes its test's process with it
        os.close(read_fd)
        code = 0
        try:
            channel = Channel(write_fd)
            channel.send("result", **work(channel))
        except BaseException:  # noqa: BLE001 - work() reports the test's own exceptions; this is tdebug's
            traceback.print_exc()
            code = 3
        exit_now(code)
    os.close(write_fd)
    run = ChildRun()
    pipe = EventPipe(read_fd)
    deadline = None if timeout is None else started + BEFORE_LAUNCH * timeout
    finished = False
    try:
        while True:
            try:
                event = pipe.next_event(deadline)
            except TimeoutError:
                run.hung = True
                break
            if event is None:
                finished = True
                break
            if event.kind == "result":
                run.result = dict(event.data)
            else:
                run.events.append(event)
                if event.kind is EventKind.LAUNCH and run.first_launch is None:
                    now = time.monotonic()
                    run.first_launch = now - started
                    deadline = None if timeout is None else now + timeout
    finally:
        if not finished:  # hung, or the parent was interrupted (Ctrl-C): the child must not outlive it
            _kill_group(pid)
        _, status, usage = os.wait4(pid, 0)
        _kill_group(pid)  # processes the test started and left behind (a compile worker pool, say)
        pipe.close()
    run.exit_code = os.waitstatus_to_exitcode(status)
    run.seconds = time.monotonic() - started
    run.peak_rss = usage.ru_maxrss * 1024  # Linux counts it in KiB
    return run
