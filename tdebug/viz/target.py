"""What `tdebug viz` draws when no TARGET is given: the exercise last started, else kernels/matmul.py.

`tdebug bugs start ID` copies an exercise into the workspace (workspace/ at the repository root, or
$TDEBUG_WORKSPACE) and records the copy's path in its .state.json under "last_started". This module
only reads that file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from .. import settings

TDEBUG_ROOT = Path(__file__).resolve().parent.parent.parent
FALLBACK = Path("kernels") / "matmul.py"


@dataclass
class DefaultTarget:
    path: Path
    why: str  # one line for the user: which file, and why that one


def repo_roots() -> list[Path]:
    """The checkout in the current directory (when it has kernels/), then tdebug's own."""
    roots = [Path.cwd()] if (Path.cwd() / "kernels").is_dir() else []
    return roots + [TDEBUG_ROOT]


def workspaces(roots: list[Path] | None = None) -> list[Path]:
    env = settings.get("TDEBUG_WORKSPACE")
    if env and roots is None:
        return [Path(env)]
    return [root / "workspace" for root in (roots if roots is not None else repo_roots())]


def last_started(workspace: Path) -> Path | None:
    try:
        data = json.loads((workspace / ".state.json").read_text())
    except (OSError, ValueError):
        return None
    last = data.get("last_started") if isinstance(data, dict) else None
    if not isinstance(last, str) or not last:
        return None
    path = Path(last).expanduser()
    if not path.is_absolute():
        path = workspace.parent / path
    return path if path.is_file() else None


def default_target(roots: list[Path] | None = None) -> DefaultTarget:
    """The last started exercise, else kernels/matmul.py (roots: checkouts to look in, for tests)."""
    for workspace in workspaces(roots):
        last = last_started(workspace)
        if last is not None:
            return DefaultTarget(last, f"no TARGET given: drawing {_show(last)}, the exercise you started last "
                                       "(tdebug bugs start)")
    root = (roots or repo_roots())[0]
    fallback = root / FALLBACK
    if not fallback.is_file():
        fallback = TDEBUG_ROOT / FALLBACK
    return DefaultTarget(fallback, f"no TARGET given and no exercise started: drawing {_show(fallback)}")


def _show(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)
