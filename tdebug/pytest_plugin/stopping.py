"""Ctrl-C and SIGTERM under `pytest --tdebug -n N`: the whole run (controller, xdist workers, the test processes
they fork, what those started) ends within a second or two at any phase, nothing left behind.

pytest-xdist alone waits up to 10 s for each worker to leave on its own, and a worker deep in an interpreted
launch does not look at its channel until the launch ends; a controller killed by SIGTERM leaves its workers
running. So: each worker and each forked test process dies with its parent (PR_SET_PDEATHSIG, set as early as the
plugin can: before conftests import kernels), and the controller, on Ctrl-C or SIGTERM, kills its workers' trees
itself before xdist's teardown waits for them."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator


def _children() -> dict[int, list[int]]:
    """ppid -> pids, from /proc (Linux); {} elsewhere."""
    tree: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return tree
    for name in entries:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(b")") + 2:].split()[1])  # the command may hold spaces and parentheses
        tree.setdefault(ppid, []).append(int(name))
    return tree


def _descendants(pid: int, tree: dict[int, list[int]]) -> Iterator[int]:
    for child in tree.get(pid, ()):
        yield from _descendants(child, tree)
        yield child


def kill_descendants() -> list[int]:
    """SIGKILL every process below this one (deepest first), and the process groups the forked test processes
    lead (what a test started); the processes signalled."""
    me = os.getpid()
    pids = list(_descendants(me, _children()))
    for pid in pids:
        try:
            if os.getpgid(pid) == pid and pid != os.getpgid(me):
                os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return pids


def die_with_parent() -> None:
    """An xdist worker: killed when the controller dies, whatever killed it."""
    from ..runtime.processes import die_with_parent as prctl

    prctl(os.getppid())


def stop_on_sigterm() -> object:
    """The controller: SIGTERM kills the workers' trees, then ends the run as the default action would (143).
    The handler it replaced, for the session's end (an in-process pytest run leaves its host's as they were)."""
    def on_sigterm(signum, frame) -> None:
        workers = set(_children().get(os.getpid(), ()))
        killed = kill_descendants()
        for pid in killed:  # reaped: no zombie of a worker outlives the run
            try:
                os.waitpid(pid, os.WNOHANG if pid not in workers else 0)
            except OSError:
                pass
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)

    return signal.signal(signal.SIGTERM, on_sigterm)
