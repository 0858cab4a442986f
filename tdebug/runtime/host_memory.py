"""Host memory shared by every tdebug process of one user on a machine: a launch whose interpreter pass needs much
of it waits until the others' large launches leave room, so pytest-xdist workers do not together outgrow it.

A weighted semaphore of lock files (flock): the budget is a fraction of the machine's memory cut into units, a
launch takes one lock per unit it needs, all under one mutex so two launches never hold half each. The kernel
lets go of a process's locks when it ends, so a worker that crashes or is killed never keeps memory reserved.
Small launches (under one unit) take part in nothing. A process holds one reservation at a time: the outermost.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

try:
    import fcntl
except ImportError:  # no flock (Windows): no admission, as before
    fcntl = None  # type: ignore[assignment]

UNIT = 512 << 20  # bytes per lock
FRACTION = 0.5  # of the machine's memory that tdebug's large launches may hold together
POLL_S = 0.2


def total_bytes() -> int:
    """The memory this process's machine gives it: physical memory, or its cgroup's limit where lower (a
    container's); 0 where neither can be read."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        total = 0
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            limit = int(Path(path).read_text().strip())
        except (OSError, ValueError):  # no such file, or "max": no limit
            continue
        total = min(total, limit) if total else limit
    return total


def units_for(nbytes: int, budget_units: int) -> int:
    """Locks a launch needing `nbytes` takes: 0 under one unit, never more than the whole budget (it then runs
    alone)."""
    if nbytes < UNIT:
        return 0
    return min(-(-nbytes // UNIT), budget_units)


def _folder() -> Path:
    folder = Path(tempfile.gettempdir()) / f"tdebug-{os.getuid()}-host-memory"
    folder.mkdir(mode=0o700, exist_ok=True)
    return folder


class Reservation:
    """Room held for one launch until release(); `waited`: the seconds it waited for it. A reservation made while
    this process holds one already takes nothing (the outer one counted the inner launch: the GPU's interpreted
    launch inside its divergence check, a kernel launched from a kernel) and so never waits for itself."""

    def __init__(self, fds: list[int], waited: float, counted: bool) -> None:
        self.fds, self.waited, self.counted = fds, waited, counted

    def release(self) -> None:
        global _OUTERMOST
        for fd in self.fds:
            os.close(fd)  # closing lets go of its flock
        self.fds = []
        if self.counted:
            _OUTERMOST = False
            self.counted = False


_OUTERMOST = False  # this process holds a reservation now (the outermost one; inner ones take nothing)


def reserve(nbytes: int, budget: int | None = None,
            waiting: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext) -> Reservation:
    """Room for `nbytes` of host memory, waiting for it where the machine's budget is taken; a wait runs inside
    `waiting()` (pytest's in-process test timer pauses there: waiting is not hanging)."""
    global _OUTERMOST
    if _OUTERMOST or nbytes < UNIT or fcntl is None:  # (units_for: 0 under one unit, whatever the budget)
        return Reservation([], 0.0, counted=False)
    budget_units = max(1, int((total_bytes() if budget is None else budget) * FRACTION) // UNIT)
    units = units_for(nbytes, budget_units)
    if units == 0:
        return Reservation([], 0.0, counted=False)
    folder = _folder()
    start = time.monotonic()
    held = _take(folder, units, budget_units)
    if held is None:
        with waiting():
            while held is None:
                time.sleep(POLL_S)
                held = _take(folder, units, budget_units)
    _OUTERMOST = True
    return Reservation(held, time.monotonic() - start, counted=True)


@contextlib.contextmanager
def admitted(nbytes: int, budget: int | None = None,
             waiting: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext) -> Iterator[float]:
    """reserve() for the block; yields the seconds spent waiting."""
    held = reserve(nbytes, budget, waiting)
    try:
        yield held.waited
    finally:
        held.release()


def _take(folder: Path, units: int, budget_units: int) -> list[int] | None:
    """`units` unit locks taken at once under the mutex, or None (nothing kept) when fewer are free."""
    mutex = os.open(folder / "mutex", os.O_CREAT | os.O_RDWR, 0o600)
    held: list[int] = []
    try:
        fcntl.flock(mutex, fcntl.LOCK_EX)
        for i in range(budget_units):
            fd = os.open(folder / f"unit-{i}", os.O_CREAT | os.O_RDWR, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            held.append(fd)
            if len(held) == units:
                return held
    finally:
        os.close(mutex)  # closing lets go of the mutex too
    for fd in held:
        os.close(fd)
    return None
