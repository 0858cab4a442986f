"""Ctrl-C, SIGTERM and SIGHUP in every command: tdebug stops within about a second whatever the kernel is
doing, ends its children's whole process groups, prints one line, and exits 130 (SIGINT), 143 (SIGTERM) or
129 (SIGHUP: the terminal or SSH session closed). While the debugger runs in the foreground, Ctrl-C is the
debugger's."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

from ..runtime import processes

GRACE = processes.GRACE + 1.0  # seconds the main thread gets to clean up before the watchdog ends the process


class Terminated(KeyboardInterrupt):
    """SIGTERM (or SIGHUP), raised like Ctrl-C so that the same clean-up runs."""

    signum = signal.SIGTERM


class HungUp(Terminated):
    """SIGHUP: the terminal went away; cleaned up like SIGTERM."""

    signum = signal.SIGHUP


SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
WORDS = {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated", signal.SIGHUP: "hung up (SIGHUP)"}


_said = threading.Lock()
_stopped = threading.Event()
_handling: list[int] = []  # the signal being handled; later ones are left to the watchdog


def exit_code(exc: BaseException | int) -> int:
    """130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP (128 + the signal's number, as shells report them)."""
    if isinstance(exc, int):
        return 128 + (exc if exc in SIGNALS else signal.SIGINT)
    return 128 + (exc.signum if isinstance(exc, Terminated) else signal.SIGINT)


def stop(exc: BaseException | int) -> int:
    """End every child, say once why tdebug stops; the exit code."""
    _stopped.set()
    processes.stop_all()
    code = exit_code(exc)
    if _said.acquire(blocking=False):
        try:
            sys.stderr.write(f"tdebug: {WORDS[signal.Signals(code - 128)]}\n")
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
    return code


def leave(code: int) -> None:
    """After a stop: exit now, skipping the interpreter's teardown (a second with torch loaded)."""
    processes.exit_now(code)


def stopped() -> bool:
    return _stopped.is_set()


def _debuggers(signum: int) -> bool:
    return signum == signal.SIGINT and processes.debugger.is_set()


def _on_signal(signum: int, frame) -> None:
    if _debuggers(signum) or _handling:
        return
    _handling.append(signum)
    raise {signal.SIGTERM: Terminated, signal.SIGHUP: HungUp}.get(signum, KeyboardInterrupt)()


def _watchdog(read_fd: int) -> None:
    """Wakes at each signal (through the wakeup fd): hands it to the main thread, in case the kernel
    delivered it to another thread and left the main one asleep in a system call; then ends the process
    GRACE seconds later, should the main thread be stuck in C code (a GPU kernel that never returns) or
    wait at exit for threads that wait on children."""
    while True:
        try:
            data = os.read(read_fd, 64)
        except OSError:
            return
        signums = [s for s in data if not _debuggers(s)]
        if signums:
            signum = next(s for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT) if s in signums)
            signal.pthread_kill(threading.main_thread().ident, signum)
            time.sleep(GRACE)
            leave(stop(signum))


def _forked() -> None:
    """A forked helper (viz's drawing pool) keeps Python's defaults: a SIGTERM from its pool ends it
    quietly, and never reaches tdebug's watchdog through the inherited wakeup fd."""
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)


def install() -> None:
    """Handlers for SIGINT, SIGTERM and SIGHUP, and the watchdog; in the main thread of a `tdebug` process."""
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    for signum in SIGNALS:
        if signum == signal.SIGHUP and signal.getsignal(signum) == signal.SIG_IGN:
            continue  # started under nohup: a hangup is to be ignored
        signal.signal(signum, _on_signal)
    os.register_at_fork(after_in_child=_forked)
    threading.Thread(target=_watchdog, args=(read_fd,), daemon=True, name="tdebug-signals").start()
