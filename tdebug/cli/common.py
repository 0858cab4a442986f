"""Pieces the subcommands share: target checks, options, rendering of case results."""

from __future__ import annotations

import ast
import os
from collections.abc import Iterable
from pathlib import Path

import click

from ..catalogue.shapes import SHAPE
from ..catalogue.spec import LAYOUTS, has_spec
from ..runtime.files import OutputError, check_output, distinct_outputs
from ..runtime.job import fresh_seed as fresh_seed  # the one seed policy, for the subcommands
from ..runtime.verdict import COULD_NOT_RUN


class NothingChecked(click.UsageError):
    """A run that checked nothing (no Triton kernel launched, no case ran): said so, exit 2, never "clean"."""

EXIT_CODES = ("Exit codes: 0 clean / all pass; 1 findings or failures; 2 usage error; 3 tdebug could not do "
              "the job (an internal error, a kernel the interpreter cannot run, a missing tool).")


class CouldNotRun(click.ClickException):
    """tdebug could not do the job (not the user's mistake, not a finding): exit code 3."""

    exit_code = 3


def could_not_run(cases, instead: str = "") -> bool:
    """Say on stderr, one line each, why cases could not be checked; True when any could not.
    A construct the CPU interpreter cannot run names the kernel line and `instead`, the command to use."""
    said = set()
    for case in cases:
        if case.status not in COULD_NOT_RUN or case.error in said:
            continue
        said.add(case.error)
        unsupported = next((f for f in case.findings if f.check == "unsupported"), None)
        if unsupported is None:
            click.echo(f"tdebug: error: {case.label}: {case.error}", err=True)
            continue
        where = f" (kernel line {unsupported.file}:{unsupported.line})" if unsupported.file else ""
        hint = f"; run it compiled on a GPU instead: {instead}" if instead else ""
        click.echo(f"tdebug: could not run {case.label} on the CPU interpreter: {unsupported.message}{where}{hint}",
                   err=True)
    return bool(said)


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


def output_file(path: str | None, option: str, inputs: Iterable[Path | str] = ()) -> Path | None:
    """An output file named by the user, checked before any work (runtime.files.check_output): refused
    (exit 2) when it is one of the inputs, a folder, in a missing folder, a file (or a link to one) tdebug
    did not write, read-only, or in a place where no file can be written."""
    if path is None:
        return None
    try:
        return check_output(path, option, inputs)
    except OutputError as e:
        raise click.UsageError(str(e)) from None


def separate_outputs(*named: tuple[str, Path | str | None]) -> None:
    """Two output options naming one path: a usage error before any work (runtime.files.distinct_outputs)."""
    try:
        distinct_outputs(*named)
    except OutputError as e:
        raise click.UsageError(str(e)) from None


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


def _set_executor(ctx, param, value: str | None) -> str | None:
    if value:
        os.environ["TDEBUG_EXECUTOR"] = value  # the children run their launches so (runtime.harness)
    return value


def executor_option(fn):
    """--executor: how the interpreter runs a launch's programs (the batched engine, or one after another)."""
    return click.option("--executor", type=click.Choice(["auto", "batched", "serial"], case_sensitive=False),
                        default=None,
                        expose_value=False, callback=_set_executor, is_eager=True,
                        help="Run a launch's programs together (batched; auto: where the engine can) or one "
                             "after another (serial, the reference). Also TDEBUG_EXECUTOR.")(fn)


def case_options(fn):
    fn = click.option("--seed", type=SEED, default=None, help="Input seed (default: a fresh one, printed).")(fn)
    fn = click.option("--layout", type=click.Choice(LAYOUTS), default="contiguous", show_default=True,
                      help="Memory layout of the inputs.")(fn)
    fn = click.option("--dtype", type=click.Choice(["fp32", "fp16", "bf16"]), default="fp32",
                      show_default=True)(fn)
    fn = click.option("--shape", type=SHAPE, default=None, help="e.g. 129x127 (default: the spec's).")(fn)
    return fn


