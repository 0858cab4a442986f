"""Files tdebug writes: each to a temporary file beside it, then renamed over the path, so a crash or
Ctrl-C leaves the old file or the new one, never a torn one."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


FILE_MODE = 0o666 & ~_umask()  # a new file's mode; the umask is read once, at import (it is process-wide)


@contextlib.contextmanager
def atomic_file(path: Path | str) -> Iterator[BinaryIO]:
    """A binary file object whose content becomes `path` when the block ends without an exception.
    A path that is not a regular file (/dev/stdout, a pipe) is written in place: renaming over it would
    replace the device or pipe itself."""
    path = Path(path)
    try:
        special = not stat.S_ISREG(path.stat().st_mode)
    except FileNotFoundError:
        special = False
    if special:
        with open(path, "wb") as f:
            yield f
        return
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
        os.chmod(tmp, FILE_MODE)
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


def same_file(a: Path | str, b: Path | str) -> bool:
    """Whether two paths name one file (through links too)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return Path(a).resolve() == Path(b).resolve()


def writable_folder(folder: Path) -> str:
    """'' when files can be written in `folder` (its missing parts made on writing); else why not. Tried
    for real in the nearest folder that exists (permission bits do not tell about /proc, or for root)."""
    existing = Path(os.path.abspath(folder))
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        return f"{existing} is not a folder"
    try:
        fd, probe = tempfile.mkstemp(dir=existing, prefix=".tdebug-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        return e.strerror or str(e)
    return ""
