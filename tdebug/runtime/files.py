"""Files tdebug writes: each to a temporary file beside it, then renamed over the path, so that a crash
or Ctrl-C leaves either the old file or the new one, never a torn one."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_MODE = 0o666 & ~_umask()  # read once, at import (os.umask is process-wide, not thread-safe)


@contextlib.contextmanager
def atomic_file(path: Path | str) -> Iterator[BinaryIO]:
    """A binary file object whose content becomes `path` when the block ends without an exception."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
        os.chmod(tmp, _MODE)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_atomic(path: Path | str, data: str | bytes) -> Path:
    """Write `data` (text as UTF-8) to `path` through a temporary file and a rename."""
    with atomic_file(path) as f:
        f.write(data.encode("utf-8") if isinstance(data, str) else data)
    return Path(path)
