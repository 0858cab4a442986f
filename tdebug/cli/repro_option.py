"""The --repro DIR option of sanitize, check and run: the folder checked before any work, and the
reproducers the run wrote listed at its end."""

from __future__ import annotations

from pathlib import Path

import click

from ..runtime.reproducers import ReproError, prepare_root

HELP = ("Write a reproducer for each launch with a finding (or a failing check) under DIR: the kernel's module, "
        "the launch's tensors and arguments, and a repro.py that `tdebug sanitize DIR/<kernel>-N/repro.py` "
        "replays alone. A DIR holding files tdebug did not write gets a fresh subfolder.")

option = click.option("--repro", "repro_dir", type=click.Path(file_okay=True, dir_okay=True), default=None,
                      metavar="DIR", help=HELP)


class Folder:
    """The reproducers' folder of one command run (None: --repro not given)."""

    def __init__(self, path: str | None) -> None:
        self.root: Path | None = None
        self.before: set[str] = set()
        if path is None:
            return
        try:
            self.root = prepare_root(path)
        except ReproError as e:
            raise click.UsageError(str(e)) from None
        self.before = {p.name for p in self.root.iterdir()}

    def job_value(self) -> str | None:
        return str(self.root) if self.root else None

    def report(self) -> None:
        """One line per reproducer this run wrote (or one saying none was needed)."""
        if self.root is None:
            return
        new = sorted((p for p in self.root.iterdir() if p.is_dir() and p.name not in self.before),
                     key=lambda p: p.stat().st_mtime)
        if not new:
            click.echo(f"repro: none written to {self.root}: no launch ended with a finding (a launch that "
                       "crashed the process leaves none; tdebug sanitize stops the bad access instead)")
        for folder in new:
            script = folder / "repro.py"
            if script.exists():
                click.echo(f"repro: {folder.name}: tdebug sanitize {script}")
            else:
                reason = (folder / "finding.txt").read_text().split("NOT WRITTEN: ", 1)[-1].splitlines()[0] \
                    if (folder / "finding.txt").exists() else "unknown"
                click.echo(f"repro: {folder.name}: not written: {reason}")
