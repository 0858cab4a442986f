"""Where the catalogue lives: kernels/ (correct kernels) and bugs/ (one seeded bug each)."""

from __future__ import annotations

from pathlib import Path

from .spec import has_spec


def repo_root() -> Path:
    """The checkout that holds kernels/ and bugs/: the current directory if it has them, else tdebug's own."""
    cwd = Path.cwd()
    if (cwd / "kernels").is_dir():
        return cwd
    return Path(__file__).resolve().parent.parent.parent


def kernel_files(root: Path | None = None) -> list[Path]:
    root = root or repo_root()
    return sorted(p for p in (root / "kernels").glob("*.py") if has_spec(p))


def bug_files(root: Path | None = None) -> list[Path]:
    root = root or repo_root()
    return sorted(p for p in (root / "bugs").glob("*.py") if has_spec(p))
