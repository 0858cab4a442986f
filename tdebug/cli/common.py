"""Pieces the subcommands share: target checks, options, rendering of case results."""

from __future__ import annotations

import ast
import os
from collections.abc import Iterable
from pathlib import Path

import click

from ..catalogue.shapes import SHAPE
from ..catalogue.spec import LAYOUTS, has_spec
from ..runtime.files import same_file, writable_folder


class NothingChecked(click.UsageError):
    """A run that checked nothing (no Triton kernel launched, no case ran): said so, exit 2, never "clean"."""


class TargetKind:
    SPEC = "spec"
    SCRIPT = "script"


def classify_target(path: str) -> str:
    """'spec' for a catalogue file, 'script' for a runnable Python program; a usage error otherwise."""
    p = Path(path)
    if not p.exists():
        raise click.UsageError(f"no such file: {path}")
    if not p.is_file():
        raise click.UsageError(f"not a file: {path}")
    if p.suffix != ".py":
        raise click.UsageError(f"not a Python file: {path}")
    try:
        tree = ast.parse(p.read_bytes(), filename=str(p))
        spec = has_spec(p)
    except SyntaxError as e:
        raise click.UsageError(f"{path}:{e.lineno}: syntax error: {e.msg}") from None
    except ValueError as e:  # null bytes, an undecodable file
        raise click.UsageError(f"{path}: not Python source ({e})") from None
    except OSError as e:
        raise click.UsageError(f"{path}: cannot read it ({e.strerror})") from None
    if spec:
        return TargetKind.SPEC
    definitions = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Pass)
    runnable = any(not isinstance(node, definitions)
                   and not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))
                   for node in tree.body)
    if not runnable:
        raise click.UsageError(f"{path} has no SPEC (not a catalogue file) and no code to run")
    return TargetKind.SCRIPT


def _written_by_tdebug(path: Path) -> bool:
    """What tdebug writes says so at its start: JSON's "tool", the log's and the Markdown's first lines."""
    try:
        with open(path, "rb") as f:
            return b"tdebug" in f.read(512)
    except OSError:
        return False


def output_file(path: str | None, option: str, inputs: Iterable[Path | str] = ()) -> Path | None:
    """An output file named by the user, checked before any work: refused (exit 2) when it is one of the
    inputs, a folder, a file tdebug did not write, read-only, or in a place where no file can be written."""
    if path is None:
        return None
    out = Path(path)
    for given in inputs:
        if same_file(out, given):
            raise click.UsageError(f"{option} {path} is {given}, an input: tdebug would overwrite it; "
                                   "name another file")
    if out.is_dir():
        raise click.UsageError(f"{option} {path} is a folder: name a file")
    if out.is_file() and not _written_by_tdebug(out):
        raise click.UsageError(f"{option} {path} exists and tdebug did not write it: name a new file "
                               "(tdebug never overwrites a file of yours)")
    if out.exists() and not os.access(out, os.W_OK):
        raise click.UsageError(f"{option} {path} is read-only")
    why = writable_folder(out.parent)
    if why:
        raise click.UsageError(f"{option} {path}: cannot write there ({why})")
    return out


class Seconds(click.ParamType):
    """A positive, finite number of seconds (--timeout)."""

    name = "seconds"

    def convert(self, value, param, ctx) -> float:
        try:
            seconds = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number of seconds", param, ctx)
        if not (0 < seconds < float("inf")):
            self.fail(f"{value!r}: give a positive number of seconds", param, ctx)
        return seconds


TIMEOUT = Seconds()
SEED = click.IntRange(0, 2**32 - 1)  # torch's generators overflow on seeds past 2**63 / 1000003


def case_options(fn):
    fn = click.option("--seed", type=SEED, default=None, help="Input seed (default: a fresh one, printed).")(fn)
    fn = click.option("--layout", type=click.Choice(LAYOUTS), default="contiguous", show_default=True,
                      help="Memory layout of the inputs.")(fn)
    fn = click.option("--dtype", type=click.Choice(["fp32", "fp16", "bf16"]), default="fp32",
                      show_default=True)(fn)
    fn = click.option("--shape", type=SHAPE, default=None, help="e.g. 129x127 (default: the spec's).")(fn)
    return fn


def fresh_seed() -> int:
    import secrets

    return secrets.randbelow(2**31)
