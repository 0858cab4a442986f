"""Child processes tdebug starts: each leads its own process group and is recorded while it lives, and
its whole group is ended (when done, at a timeout, on Ctrl-C or SIGTERM), so tdebug leaves none behind."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterable
from pathlib import Path

GRACE = 1.0  # seconds a group gets between SIGTERM and SIGKILL (a nested `tdebug` cleans up in about 0.3 s)

_LIVE: dict[subprocess.Popen, tuple[Path, ...]] = {}  # each live child and the temporary files it was given
# The temporary files of every child started: a stop removes them even when the child was ended (and left
# _LIVE) just before, while its owner had not yet removed them.
_TEMP: dict[subprocess.Popen, tuple[Path, ...]] = {}
_LOCK = threading.Lock()
_STOPPING = threading.Event()
debugger = threading.Event()  # set while an interactive child (the debugger) owns the terminal and Ctrl-C


def start(cmd: list[str], interactive: bool = False, temp: Iterable[Path | str] = (),
          **popen_args) -> subprocess.Popen:
    """Popen in a new session (an interactive child stays in ours, for the terminal), recorded until
    ended; temp: files or folders made for it, removed by stop_all (the caller removes them otherwise)."""
    with _LOCK:
        if _STOPPING.is_set():  # tdebug is stopping: no new child (a thread of bugs matrix, say)
            raise KeyboardInterrupt
        proc = subprocess.Popen(cmd, start_new_session=not interactive, **popen_args)
        _LIVE[proc] = _TEMP[proc] = tuple(Path(p) for p in temp)
    return proc


def python_module(module: str) -> list[str]:
    """`python -m module` without the working directory on sys.path (Python 3.11's -P, for 3.10 too): a user's
    file named tdebug.py, torch.py, ... in the folder tdebug runs in is not imported in its place."""
    code = ("import sys, runpy; sys.path[:1] = [] if sys.path[:1] == [''] else sys.path[:1]; "
            f"runpy.run_module({module!r}, run_name='__main__', alter_sys=True)")
    return [sys.executable, "-c", code]


def _signal_group(proc: subprocess.Popen, signum: int) -> None:
    try:
        os.killpg(proc.pid, signum)  # the child leads its own group: it and everything it started
    except (ProcessLookupError, PermissionError):
        with contextlib.suppress(OSError):
            proc.send_signal(signum)  # an interactive child shares our group: the child alone


def _group_alive(proc: subprocess.Popen) -> bool:
    """Whether the child's process group still has a member (False for an interactive child: no group)."""
    try:
        os.killpg(proc.pid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def end(procs: subprocess.Popen | Iterable[subprocess.Popen], grace: float = GRACE) -> None:
    """End each process's whole group (SIGTERM, then SIGKILL after `grace` seconds) and reap it."""
    procs = [procs] if isinstance(procs, subprocess.Popen) else list(procs)
    for proc in procs:
        _signal_group(proc, signal.SIGTERM)
    deadline = time.monotonic() + grace
    for proc in procs:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        while _group_alive(proc) and time.monotonic() < deadline:
            time.sleep(0.02)  # what the leader started (a nested tdebug, say) gets the grace too
    for proc in procs:
        _signal_group(proc, signal.SIGKILL)  # also whatever its group still holds after the leader left
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=grace)
        with _LOCK:
            _LIVE.pop(proc, None)


def reap(proc: subprocess.Popen, timeout: float | None) -> int | None:
    """Wait up to `timeout` seconds for a child that is done, then end its group either way (what it
    started and left running goes too). Its exit code, or None when it had to be ended."""
    try:
        code: int | None = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        code = None
    end(proc)
    return code


def remove(paths: Iterable[Path]) -> None:
    """Remove files and folders made for a child (they are then no longer stop_all's to remove)."""
    paths = [Path(p) for p in paths]
    with _LOCK:
        for proc, temp in list(_TEMP.items()):
            if set(temp) <= set(paths):
                del _TEMP[proc]
    for path in paths:
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                path.unlink()


def stop_all() -> None:
    """Start no more children; end every live one's group and remove its temporary files (Ctrl-C, SIGTERM)."""
    with _LOCK:
        _STOPPING.set()
        live = dict(_LIVE)
    end(live)
    with _LOCK:
        temps = list(_TEMP.values())
    for temp in temps:
        remove(temp)


def resume() -> None:
    """Allow children again (a new command in the same process, as in tests after a Ctrl-C)."""
    _STOPPING.clear()


def die_with_parent(parent: int) -> None:
    """On Linux, have this process killed when its parent (pid `parent`) dies, even by SIGKILL (which cannot be
    cleaned up after): no child is left behind at 100% CPU. If the parent is already gone, exit now."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        ctypes.CDLL(None).prctl(1, int(signal.SIGKILL))  # 1: PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # it died before the prctl
        os._exit(1)


def flush_output() -> None:
    """Write out what Python buffered of stdout and stderr (before a fork, or an exit that skips the teardown)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass


def exit_now(code: int) -> None:
    """Leave this process at once with `code`, output flushed, skipping the interpreter's teardown (a second
    with torch loaded; after a CUDA error or a stop, nothing of it is wanted)."""
    flush_output()
    os._exit(code)
