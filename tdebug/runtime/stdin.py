"""Standard input for a script run more than once (once per surviving autotune config): each run reads the
same input. A regular file is rewound; a pipe is recorded as the first run reads it and replayed after."""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import tempfile
import threading
from typing import Any


class ReplayedStdin:
    """stdin() gives what the next run reads: the first run our own stdin (through a recorder when it is a
    pipe), later runs the same bytes again. close() when done."""

    def __init__(self) -> None:
        self.runs = 0
        self.kind = "other"
        self._record: Any = None
        self._pipe_read: int | None = None
        self._done = threading.Event()
        try:
            fd = sys.stdin.fileno()
            mode = os.fstat(fd).st_mode
        except (AttributeError, OSError, ValueError):
            return
        if os.isatty(fd):
            return
        if stat.S_ISREG(mode):
            self.kind, self._fd, self._start = "file", fd, os.lseek(fd, 0, os.SEEK_CUR)
        elif stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
            self.kind, self._fd = "pipe", fd

    def stdin(self):
        """The stdin argument for the next run's child (None: inherit ours)."""
        self.runs += 1
        if self.kind == "file":
            os.lseek(self._fd, self._start, os.SEEK_SET)
            return None
        if self.kind != "pipe":
            return None
        if self.runs == 1:
            self._record = tempfile.TemporaryFile(prefix="tdebug-stdin-")
            self._pipe_read, write = os.pipe()
            threading.Thread(target=self._copy, args=(write,), daemon=True, name="tdebug-stdin").start()
            return self._pipe_read
        self._done.wait(timeout=1.0)  # what the first run left unread and is still arriving is not waited for
        replay = tempfile.TemporaryFile(prefix="tdebug-stdin-")
        self._record.seek(0)
        replay.write(self._record.read())
        replay.seek(0)
        return replay

    def _copy(self, write: int) -> None:
        try:
            while chunk := os.read(self._fd, 1 << 16):
                self._record.write(chunk)
                self._record.flush()
                with contextlib.suppress(OSError):
                    os.write(write, chunk)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                os.close(write)
            self._done.set()

    def close(self) -> None:
        if self._pipe_read is not None:
            with contextlib.suppress(OSError):
                os.close(self._pipe_read)
