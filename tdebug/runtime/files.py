"""Files tdebug writes: each to a temporary file beside it, then renamed over the path, so a crash or
Ctrl-C leaves the old file or the new one, never a torn one; and the one safe writer of every output path the
user names (write_output): never through a link into, nor over, a file tdebug did not write, which it knows
from its record (a .tdebug-outputs manifest in the file's folder), never from the file's first bytes."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import tempfile
from collections.abc import Iterable, Iterator
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


# -- output paths the user names: one safe writer -------------------------------------------------------

MANIFEST = ".tdebug-outputs"  # in each folder tdebug wrote an output into: name -> sha256 of what it wrote
_NOTE = "files tdebug wrote in this folder, with their sha256; it replaces them (only them, unchanged) on request"


class OutputError(ValueError):
    """An output path tdebug must not or cannot write: one line for the user (a usage error, exit 2)."""


class WriteFailed(Exception):
    """Writing an output failed at the end of a run (a full disk, no file descriptors left, an I/O error): the
    path and the OS's reason in one line; tdebug could not do the job (exit 3), not a bug of tdebug's."""


def write_failed(path: Path | str, option: str, error: OSError) -> WriteFailed:
    return WriteFailed(f"{option} {path}: could not write it: {error.strerror or error}")


def distinct_outputs(*named: tuple[str, Path | str | None]) -> None:
    """OutputError when two output options (option, path) name one path: one would overwrite the other at the
    end of the run (--repro P --json P made the folder, then could not write the file)."""
    seen: list[tuple[str, Path | str]] = []
    for option, path in named:
        if not path:
            continue
        for other, earlier in seen:
            if same_file(path, earlier) or os.path.abspath(path) == os.path.abspath(earlier):
                raise OutputError(f"{option} {path} and {other} {earlier} name one path: give each its own")
        seen.append((option, path))


def _digest_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def is_stream(path: Path | str) -> bool:
    """/dev/stdout, /proc/self/fd/N, a pipe or a terminal: written in place (renaming over it would replace
    the device or the pipe itself), and never a file of the user's to lose."""
    text = os.path.abspath(path)
    if text.startswith(("/dev/", "/proc/self/fd/")):
        return True
    try:
        return not stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def _manifest(folder: Path) -> dict[str, str] | None:
    """name -> sha256 of the files tdebug recorded writing in `folder`; {} when there is no manifest; None
    when something else stands at its name (a link, a folder, a file not tdebug's): then nothing is recorded."""
    manifest = folder / MANIFEST
    if not manifest.exists() and not manifest.is_symlink():
        return {}
    if manifest.is_symlink() or not manifest.is_file():
        return None
    try:
        data = json.loads(manifest.read_text())
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    files = data.get("files") if isinstance(data, dict) and data.get("note") == _NOTE else None
    return {str(k): str(v) for k, v in files.items()} if isinstance(files, dict) else None


def _recorded(folder: Path) -> dict[str, str]:
    return _manifest(folder) or {}


def written_by_tdebug(path: Path | str) -> bool:
    """`path` (through a link: the file it names) is a file tdebug recorded writing, unchanged since."""
    real = Path(os.path.realpath(path))
    digest = _recorded(real.parent).get(real.name)
    try:
        return digest is not None and real.is_file() and _digest(real) == digest
    except OSError:
        return False


def _record(path: Path, digest: str) -> None:
    """Add `path` (its folder's manifest) to what tdebug wrote; a manifest that is not tdebug's is left alone
    (the file then stays unrecorded: the next run refuses to replace it, the safe way round)."""
    with _folder_lock(path.parent):  # two tdebug processes recording in one folder: neither record is lost
        recorded = _manifest(path.parent)
        if recorded is None:
            return
        files = {name: d for name, d in recorded.items() if (path.parent / name).is_file()}
        files[path.name] = digest
        write_atomic(path.parent / MANIFEST,
                     json.dumps({"note": _NOTE, "files": files}, indent=1, sort_keys=True) + "\n")


@contextlib.contextmanager
def _folder_lock(folder: Path) -> Iterator[None]:
    """An exclusive flock on the folder itself (no lock file left in the user's folder)."""
    import fcntl

    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def check_output(path: Path | str, option: str, inputs: Iterable[Path | str] = ()) -> Path:
    """The output file `path` (given as `option`) if tdebug may write it, else OutputError with one line: not
    an input, not a folder, its folder there, not a link to (nor) a file tdebug did not write, writable."""
    out = Path(path)
    for given in inputs:
        if same_file(out, given):
            raise OutputError(f"{option} {path} is {given}, an input: tdebug would overwrite it; name another file")
    if is_stream(out):
        return out
    if out.is_dir():
        raise OutputError(f"{option} {path} is a folder: name a file")
    folder = out.parent
    if not folder.is_dir():
        why = f"{folder} is not a folder" if folder.exists() else f"no folder {folder}: make it first"
        raise OutputError(f"{option} {path}: cannot write there ({why})")
    target = out
    if out.is_symlink():
        target = Path(os.path.realpath(out))
        if not target.is_file() or not written_by_tdebug(target):
            what = "nothing" if not target.exists() else f"{target}, which tdebug did not write"
            raise OutputError(f"{option} {path} is a link to {what}: tdebug never writes through a link into a "
                              "file of yours; name a new file")
    elif out.exists():
        if not out.is_file() or not written_by_tdebug(out):
            raise OutputError(f"{option} {path} exists and tdebug did not write it: name a new file "
                              "(tdebug never overwrites a file of yours)")
    if target.exists() and not os.access(target, os.W_OK):
        raise OutputError(f"{option} {path} is read-only")
    why = writable_folder(target.parent)
    if why:
        raise OutputError(f"{option} {path}: cannot write there ({why})")
    return out


def write_output(path: Path | str, data: str | bytes, option: str = "output",
                 inputs: Iterable[Path | str] = ()) -> Path:
    """Write an output file the user named, checked again now (check_output), atomically (a temporary file
    in the same folder, renamed; removed on any exception), recorded as tdebug's; through a link to a file
    tdebug wrote, that file is replaced and the link kept."""
    out = check_output(path, option, inputs)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    try:
        if is_stream(out):
            with open(out, "wb") as f:
                f.write(raw)
            return out
        dest = Path(os.path.realpath(out)) if out.is_symlink() else out
        write_atomic(dest, raw)
        _record(dest, _digest_bytes(raw))
    except OSError as e:
        raise write_failed(path, option, e) from None
    return out
