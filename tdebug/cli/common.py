"""Pieces the subcommands share: target checks, options, rendering of case results."""

from __future__ import annotations

import ast
from pathlib import Path

import click

from ..catalogue.shapes import SHAPE
from ..catalogue.spec import LAYOUTS, has_spec


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
        tree = ast.parse(p.read_text(), filename=str(p))
    except SyntaxError as e:
        raise click.UsageError(f"{path}:{e.lineno}: syntax error: {e.msg}") from None
    if has_spec(p):
        return TargetKind.SPEC
    runnable = any(isinstance(node, (ast.Expr, ast.If, ast.For, ast.While, ast.With, ast.Assign))
                   and not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))
                   for node in tree.body)
    if not runnable:
        raise click.UsageError(f"{path} has no SPEC (not a catalogue file) and no code to run")
    return TargetKind.SCRIPT


def case_options(fn):
    fn = click.option("--seed", type=int, default=None, help="Input seed (default: a fresh one, printed).")(fn)
    fn = click.option("--layout", type=click.Choice(LAYOUTS), default="contiguous", show_default=True,
                      help="Memory layout of the inputs.")(fn)
    fn = click.option("--dtype", type=click.Choice(["fp32", "fp16", "bf16"]), default="fp32",
                      show_default=True)(fn)
    fn = click.option("--shape", type=SHAPE, default=None, help="e.g. 129x127 (default: the spec's).")(fn)
    return fn


def fresh_seed() -> int:
    import secrets

    return secrets.randbelow(2**31)


def exit_if_unsupported(result, target: str, instead: str = "tdebug run {target} --mode debug") -> None:
    """A case the CPU interpreter could not run (inline asm, a libdevice function tdebug has no numpy
    for, ...): one line on stderr naming what and the kernel line, the command to use instead, exit 3."""
    for case in result.cases:
        for f in case.findings:
            if f.check == "unsupported":
                where = f" (kernel line {f.file}:{f.line})" if f.file else ""
                click.echo(f"tdebug: could not run {target} on the CPU interpreter: {f.message}{where}; run it "
                           f"compiled on a GPU instead: {instead.format(target=target)}", err=True)
                raise SystemExit(3)
