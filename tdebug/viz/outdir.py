"""The folder `tdebug viz` writes its pictures into. tdebug never overwrites or deletes a file it did
not write: a folder it made holds a manifest (.tdebug-viz) of the files it wrote there, and only those,
when unchanged since, are replaced on the next run; a folder holding anything else gets a fresh
subfolder (tdebug-viz, tdebug-viz-2, ...)."""

from __future__ import annotations

import glob
import hashlib
import json
from pathlib import Path

from ..runtime.files import write_atomic

MANIFEST = ".tdebug-viz"
SUBFOLDER = "tdebug-viz"


class OutDirError(Exception):
    """The folder cannot be used (a file stands there, it cannot be written): one line for the user."""


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _recorded(folder: Path) -> dict[str, str | None]:
    """name -> sha256 of the files tdebug recorded writing in `folder` (None: being written); {} if none."""
    try:
        data = json.loads((folder / MANIFEST).read_text())
    except (OSError, ValueError):
        return {}
    files = data.get("files") if isinstance(data, dict) else None
    return {str(k): v for k, v in files.items()} if isinstance(files, dict) else {}


def _ours(folder: Path) -> bool:
    """Everything in `folder` is tdebug's: the manifest, and recorded files unchanged since written."""
    if not (folder / MANIFEST).is_file():
        return False
    recorded = _recorded(folder)
    for entry in folder.iterdir():
        if entry.name == MANIFEST:
            continue
        if entry.name not in recorded or not entry.is_file():
            return False
        digest = recorded[entry.name]
        if digest is None or _digest(entry) != digest:
            # Changed by the person: theirs now. No digest: a run cut short (Ctrl-C) after writing it, and
            # the person may have edited it since: it cannot be proved tdebug's, so it is never replaced.
            return False
    return True


def _usable(folder: Path) -> bool:
    return not folder.exists() or (folder.is_dir() and (not any(folder.iterdir()) or _ours(folder)))


def choose(out: Path) -> tuple[Path, str]:
    """The folder to write into for --out `out`, and a note for the person ('' when it is `out` itself)."""
    if out.exists() and not out.is_dir():
        raise OutDirError(f"--out {out}: a file is there, not a folder")
    if _usable(out):
        return out, ""
    for n in range(1, 1000):
        candidate = out / (SUBFOLDER if n == 1 else f"{SUBFOLDER}-{n}")
        if _usable(candidate):
            return candidate, f"{out} holds files tdebug did not write: writing into {candidate}"
    raise OutDirError(f"--out {out}: no free subfolder {SUBFOLDER}-N left")


def prepare(folder: Path, names: list[str]) -> None:
    """Make the folder, remove what tdebug wrote there last time, and record the files about to be written
    (before writing them: a run cut short still leaves them recorded as tdebug's)."""
    folder.mkdir(parents=True, exist_ok=True)
    if not _usable(folder):  # changed since choose(): never touch it
        raise OutDirError(f"--out {folder}: it changed while tdebug was running; run again")
    for name, digest in _recorded(folder).items():
        path = folder / name
        if digest is not None and path.is_file() and Path(name).name == name:
            path.unlink()
    _write_manifest(folder, dict.fromkeys(names))


def remove_temporaries(folder: Path, names: list[str]) -> None:
    """The temporary files of pictures being written when the run was cut short (a drawing worker ended by
    SIGTERM leaves its .NAME.XXXXXX.tmp beside NAME: runtime.files.atomic_file's naming)."""
    for name in names:
        for tmp in folder.glob(f".{glob.escape(name)}.*.tmp"):
            tmp.unlink(missing_ok=True)


def record(folder: Path, paths: list[Path]) -> None:
    """Record the files written, with their digests (a later change by the person makes them theirs)."""
    _write_manifest(folder, {p.name: _digest(p) for p in paths})


def _write_manifest(folder: Path, files: dict[str, str | None]) -> None:
    note = "files tdebug viz wrote in this folder; it replaces them (only them) on its next run here"
    write_atomic(folder / MANIFEST, json.dumps({"note": note, "files": files}, indent=1) + "\n")
