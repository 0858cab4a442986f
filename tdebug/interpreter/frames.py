"""Where the interpreter is in the user's code: the innermost kernel frame, the program id being run."""

from __future__ import annotations

import os
import sys

_LIBRARY_DIRS: tuple[str, ...] = ()


def library_dirs() -> tuple[str, ...]:
    """Directories whose frames are never the user's: Triton, numpy, torch, tdebug, the standard library."""
    global _LIBRARY_DIRS
    if not _LIBRARY_DIRS:
        import numpy
        import torch
        import triton

        dirs = [os.path.dirname(m.__file__) for m in (triton, numpy, torch)]
        dirs.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tdebug itself
        dirs.append(os.path.dirname(os.__file__))  # the standard library
        _LIBRARY_DIRS = tuple(d + os.sep for d in dirs)
    return _LIBRARY_DIRS


# id(code) -> (code, is it the user's): each code object's file read once (a store walks the stack up to three
# times). Keyed by id, as hashing a code object hashes its bytecode; the entry keeps the code alive (its id unique).
_IS_USER: dict[int, tuple] = {}


def user_frame(start=None):
    """The innermost frame that is user code (a kernel line), skipping Triton, numpy, torch, tdebug. While a
    launch is replayed (launch_replay.py: no kernel line runs) it raises ReplayAbort: whatever asks for the line
    is about to report something, which the ordinary run of the batch reports instead."""
    if REPLAYING:
        raise ReplayAbort("a check asked for the kernel's line")
    frame = start or sys._getframe(1)
    known = _IS_USER
    while frame is not None:
        code = frame.f_code
        entry = known.get(id(code))
        if entry is None or entry[0] is not code:
            if len(known) > 50000:  # code made at run time (exec'd, dataclasses): keep the table bounded
                known.clear()
            filename = code.co_filename
            entry = known[id(code)] = (code, not filename.startswith(library_dirs()) and not filename.startswith("<"))
        if entry[1]:
            return frame
        frame = frame.f_back
    return None


def current_pid() -> tuple[int, int, int]:
    from triton.runtime.interpreter import interpreter_builder
    return tuple(interpreter_builder.grid_idx or (0, 0, 0))


class EngineSignal(Exception):  # noqa: N818 - control flow of the batched engine, never an error
    """Raised by the batched engine to itself (a batch diverges, an op it does not batch) and caught by its grid
    loop: never the kernel's error nor tdebug's (program_axis.Divergent, program_axis.Unported)."""


class ReplayAbort(EngineSignal):
    """A replayed launch (launch_replay.py) met what only the kernel's own run handles: its batch is undone and runs
    the ordinary way."""


REPLAYING: list = []  # non-empty while a launch is replayed (launch_replay.run): user_frame raises ReplayAbort


class KernelError(Exception):
    """Raised by tdebug on purpose about the kernel (a device_assert that failed, a grid that is no grid,
    a construct the interpreter cannot run): reported as the kernel's, never as an internal error of tdebug."""


def raised_in_tdebug(exc: BaseException) -> bool:
    """Did tdebug's own code raise this (a bug in tdebug, or a Triton internal it no longer fits)?

    True when the innermost frame of the traceback is in the tdebug package and the exception is not a
    KernelError; an exception raised in Triton, numpy, torch or the user's code is the kernel's."""
    if isinstance(exc, (KernelError, EngineSignal)):
        return False
    if type(exc).__name__ == "InterpreterError" and exc.__cause__ is not None:
        return raised_in_tdebug(exc.__cause__)  # the interpreter's wrapper: whoever raised what it wraps
    tb = exc.__traceback__
    if tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    return tb.tb_frame.f_code.co_filename.startswith(package)
