"""`tdebug bugs`: the bug catalogue as exercises (list, show, hint, start, check, solution, reset, matrix)."""

from __future__ import annotations

import contextlib
import os
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import click

from ..catalogue.files import kernel_files, repo_root
from ..exercises.workspace import BugEntry, ExerciseError, Workspace, find_bug, load_bugs, solution_diff
from .common import SEED, TIMEOUT, NothingChecked, fresh_seed, output_file


def _rel(path: Path) -> str:
    for base in (Path.cwd(), repo_root()):
        try:
            return str(Path(path).resolve().relative_to(base.resolve()))
        except ValueError:
            continue
    return str(path)


def _workspace(ctx: click.Context) -> Workspace:
    return ctx.obj["workspace"]


@contextlib.contextmanager
def _locked(ws: Workspace) -> Iterator[None]:
    """The workspace's lock for start/reset/check (said on stderr while another command holds it)."""
    def waiting() -> None:
        click.echo("tdebug bugs: waiting for another tdebug bugs start/reset/check on this workspace", err=True)

    try:
        with ws.lock(on_wait=waiting):
            yield
    except ExerciseError as e:
        raise click.UsageError(str(e)) from None


def _bugs() -> list[BugEntry]:
    try:
        bugs = load_bugs()
    except ExerciseError as e:
        raise click.ClickException(str(e)) from None
    if not bugs:
        raise click.ClickException(f"no bugs found in {repo_root() / 'bugs'}")
    return bugs


def _bug(ident: str) -> BugEntry:
    try:
        return find_bug(ident, _bugs())
    except ExerciseError as e:
        raise click.UsageError(str(e)) from None


def repro_command(bug: BugEntry, file: str) -> list[str]:
    """Commands that show the bug's symptom, for a person to type."""
    case = ""
    if bug.shape:
        case = f" --shape {bug.shape_text()}"
        if bug.dtype != "fp32":
            case += f" --dtype {bug.dtype}"
        if bug.layout != "contiguous":
            case += f" --layout {bug.layout}"
        if bug.config is not None:
            case += f" --config {bug.config}"
    if bug.gpu_only:
        return [f"tdebug run {file} --mode debug{case}    # on a GPU: TRITON_DEBUG=1 names the int32 overflow"]
    if bug.expects_clean:
        return [f"tdebug run {file}{case}    # tdebug's check: right, within fp16 rounding",
                f"tdebug bugs start {bug.key} && tdebug bugs check {bug.key}    # your user_check: rejects it"]
    if bug.has_story_inputs:
        return [f"tdebug bugs start {bug.key} && tdebug bugs check {bug.key}    # the story's batch, sanitized"]
    first = bug.cpu_detectors()[0] if bug.cpu_detectors() else "check"
    if first == "check":
        lines = [f"tdebug run {file}{case}" if case else f"tdebug check {file} --quick"]
    elif first.startswith("sanitize:"):
        lines = [f"tdebug sanitize {file}{case}"]
    elif first == "symbolic":
        lines = [f"tdebug sanitize {file} --engine symbolic{case}"]
    else:
        lines = [f"tdebug check {file} --quick    # the autotune lint comes first"]
    if "bench" in bug.caught_by:
        lines.append(f"tdebug bench {file}    # on a GPU, against cuBLAS")
    return lines


@click.group("bugs", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--workspace", "workspace", type=click.Path(file_okay=False), default=None,
              help="Where your copies live (default: workspace/ at the repository root, or $TDEBUG_WORKSPACE).")
@click.pass_context
def command(ctx: click.Context, workspace: str | None) -> None:
    """Exercises: kernels with one seeded bug each; find it, fix it, let tdebug check the fix.

    \b
    tdebug bugs list                 the catalogue and where you stand
    tdebug bugs show 03              the story and a command that shows the symptom
    tdebug bugs start 03             copy the bug to workspace/ and edit it there
    tdebug bugs hint 03              the next hint
    tdebug bugs check 03             is your copy fixed?
    tdebug bugs solution 03          the fix, as a diff against the fixed kernel
    tdebug bugs reset 03             a pristine copy again (yours is kept as a backup)
    tdebug bugs matrix               every bug and fixed kernel against every detector
    """
    ctx.ensure_object(dict)
    try:
        ctx.obj["workspace"] = Workspace(Path(workspace) if workspace else None)
    except ExerciseError as e:
        raise click.UsageError(str(e)) from None


@command.command("list")
@click.pass_context
def list_(ctx: click.Context) -> None:
    """The catalogue: id, title, kernel, difficulty, which mode finds it, your status."""
    ws = _workspace(ctx)
    bugs = _bugs()
    headers = ("id", "title", "kernel", "difficulty", "found by", "status")
    rows = []
    for bug in bugs:
        found = bug.found_by() + (" [GPU only]" if bug.gpu_only else "")
        rows.append((bug.key, bug.title, bug.kernel, bug.difficulty, found, ws.status(bug)))
    widths = [max(len(r[i]) for r in (headers, *rows)) for i in range(len(headers))]
    click.echo("  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip())
    click.echo("  ".join("-" * w for w in widths))
    for row in rows:
        click.echo("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
    done = sum(r[-1] == "passed" for r in rows)
    click.echo(f"\n{len(rows)} bugs, {done} fixed. Start one: tdebug bugs show ID, then tdebug bugs start ID.")


@command.command("show")
@click.argument("bug_id")
@click.pass_context
def show(ctx: click.Context, bug_id: str) -> None:
    """The story of a bug and the command that reproduces its symptom."""
    bug = _bug(bug_id)
    ws = _workspace(ctx)
    click.echo(f"Bug {bug.key}: {bug.title}")
    click.echo(f"file: {_rel(bug.path)}   fixes: {_rel(bug.fixes)}   difficulty: {bug.difficulty}   "
               f"status: {ws.status(bug)}")
    click.echo(f"found by: {bug.found_by()}" + ("   (GPU only)" if bug.gpu_only else ""))
    click.echo("")
    click.echo(bug.story.strip())
    click.echo("")
    click.echo("Symptom: " + bug.symptom)
    click.echo("Reproduce:")
    for line in repro_command(bug, _rel(bug.path)):
        click.echo("  " + line)
    click.echo(f"Then: tdebug bugs start {bug.key}, edit the copy, tdebug bugs hint {bug.key} when stuck, "
               f"tdebug bugs check {bug.key} when you think it is fixed.")


@command.command("hint")
@click.argument("bug_id")
@click.pass_context
def hint(ctx: click.Context, bug_id: str) -> None:
    """The next hint for a bug (each call shows one more; tdebug remembers how many you have seen)."""
    bug = _bug(bug_id)
    try:
        number, text, repeat = _workspace(ctx).next_hint(bug)
    except ExerciseError as e:
        raise click.UsageError(str(e)) from None
    click.echo(f"Hint {number}/{len(bug.hints)} for bug {bug.key} ({bug.title}):")
    click.echo(textwrap.fill(text, width=100, initial_indent="  ", subsequent_indent="  "))
    if repeat:
        click.echo(f"(that was the last hint; tdebug bugs solution {bug.key} shows the fix)")
    elif number < len(bug.hints):
        click.echo(f"({len(bug.hints) - number} more: tdebug bugs hint {bug.key})")


@command.command("start")
@click.argument("bug_id")
@click.pass_context
def start(ctx: click.Context, bug_id: str) -> None:
    """Copy a bug into the workspace for editing (an existing copy is never overwritten)."""
    bug = _bug(bug_id)
    ws = _workspace(ctx)
    with _locked(ws):
        path, created = ws.start(bug)
    rel = _rel(path)
    if created:
        click.echo(f"Copied {_rel(bug.path)} to {rel}: edit it there.")
    else:
        click.echo(f"{rel} already exists: keeping your copy (tdebug bugs reset {bug.key} restores a pristine one).")
    click.echo(f"Bug {bug.key}: {bug.title}")
    click.echo("Symptom: " + bug.symptom)
    click.echo("See it:")
    for line in repro_command(bug, rel):
        click.echo("  " + line)
    click.echo(f"Hints: tdebug bugs hint {bug.key}.  Done? tdebug bugs check {bug.key}")


def _echo_step(step) -> None:
    mark = "ok  " if step.ok else "FAIL"
    click.echo(f"{mark} {step.name}: {step.summary}" + (f"  ({step.seconds:.1f} s)" if step.seconds >= 0.05 else ""))
    for line in step.details:
        click.echo("       " + line)


@command.command("check")
@click.argument("bug_id")
@click.option("--quick", is_flag=True, help="The quick case matrix instead of every case.")
@click.option("--seed", type=SEED, default=None, help="Input seed (default: a fresh one, printed).")
@click.option("--timeout", type=TIMEOUT, default=120.0, show_default=True, help="Seconds per case before a hang.")
@click.pass_context
def check(ctx: click.Context, bug_id: str, quick: bool, seed: int | None, timeout: float) -> None:
    """Is your copy fixed? Runs it through the reference check on all cases and the detectors.

    PASS only when the symptom is gone, every case matches the fixed kernel's reference, and the
    detectors that caught the bug are silent. Exit 0 on PASS, 1 when not fixed, 3 when this machine
    cannot verify it (a GPU-only bug on a CPU).
    """
    from ..exercises.judge import check_exercise

    bug = _bug(bug_id)
    ws = _workspace(ctx)
    with _locked(ws):  # a reset cannot replace the copy while it is checked
        try:
            copy = ws.require_copy(bug)
        except ExerciseError as e:
            raise click.UsageError(str(e)) from None
        click.echo(f"Checking {_rel(copy)} (bug {bug.key}: {bug.title}), judged by {_rel(bug.fixes)}'s reference"
                   + (" (quick)" if quick else ""))
        result = check_exercise(bug, copy, quick=quick, seed=seed, timeout=timeout, on_step=_echo_step)
        click.echo(f"seed {result.seed}")
        if result.status == "pass":
            ws.set_status(bug, "passed")
            click.echo(f"PASS: bug {bug.key} is fixed.")
            raise SystemExit(0)
        if result.status == "unverified":
            ws.set_status(bug, "unverified")
            click.echo(f"UNVERIFIED: {result.reason}")
            raise SystemExit(3)  # tdebug could not do the whole job here (a GPU-only bug on a CPU)
        ws.set_status(bug, "failing")
        if result.skipped:
            click.echo("not run: " + ", ".join(result.skipped))
        click.echo(f"FAIL: bug {bug.key} is not fixed yet (tdebug bugs hint {bug.key} for a hint).")
        raise SystemExit(1)


@command.command("solution")
@click.argument("bug_id")
def solution(bug_id: str) -> None:
    """The fix: the diff between the bug and its fixed kernel (code only: story and BUG block left out)."""
    bug = _bug(bug_id)
    try:
        diff = solution_diff(bug)
    except ExerciseError as e:
        raise click.ClickException(str(e)) from None
    click.echo(f"Bug {bug.key}: {bug.title}. The fix, {_rel(bug.path)} -> {_rel(bug.fixes)}:\n")
    color = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    for line in diff.splitlines():
        fg = None
        if color and line.startswith("+") and not line.startswith("+++"):
            fg = "green"
        elif color and line.startswith("-") and not line.startswith("---"):
            fg = "red"
        click.secho(line, fg=fg)


@command.command("reset")
@click.argument("bug_id")
@click.pass_context
def reset(ctx: click.Context, bug_id: str) -> None:
    """Restore a pristine copy of a bug; your version is kept as NN_...py.bak-<time>."""
    bug = _bug(bug_id)
    ws = _workspace(ctx)
    with _locked(ws):
        path, backup = ws.reset(bug)
    if backup is not None:
        click.echo(f"Restored a pristine {_rel(path)}; your version is in {_rel(backup)}.")
    else:
        click.echo(f"Copied {_rel(bug.path)} to {_rel(path)} (there was no copy to keep).")


@command.command("matrix")
@click.option("--only", "only", multiple=True, help="These bugs only (repeatable); fixed kernels are left out "
              "unless --kernels is given.")
@click.option("--kernels/--no-kernels", "with_kernels", default=None,
              help="Include the fixed kernels of kernels/ (default: yes, unless --only).")
@click.option("--detector", "detectors", multiple=True, help="These detectors only (repeatable).")
@click.option("--expected-only", is_flag=True, help="Run each bug only under the detectors its BUG.caught_by names.")
@click.option("--full", is_flag=True, help="The full case matrix, not the quick one.")
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=None, help="Cells at once (default: CPU count).")
@click.option("--seed", type=SEED, default=None, help="Input seed (default: a fresh one, printed).")
@click.option("--timeout", type=TIMEOUT, default=120.0, show_default=True, help="Seconds per case before a hang.")
@click.option("--markdown", "markdown", type=click.Path(dir_okay=False), default=None,
              help="Also write the table as Markdown to this file (none by default).")
@click.option("--no-markdown", is_flag=True, help="Write no Markdown file (the default; kept for old scripts).")
def matrix(only, with_kernels, detectors, expected_only, full, jobs, seed, timeout, markdown, no_markdown) -> None:
    """Every bug and every fixed kernel against every detector available here: caught / missed / n/a, and
    the seconds each took. Exit 1 when a cell contradicts the bugs' expected detectors or a fixed
    kernel is flagged."""
    from ..exercises.matrix import DETECTORS, NA, SKIPPED, disagreements, run_matrix, to_text, write_markdown

    bad = [d for d in detectors if d not in DETECTORS]
    if bad:
        raise click.UsageError(f"unknown detector {bad[0]!r}; choose from {', '.join(DETECTORS)}")
    all_bugs = _bugs()
    bugs = [_bug(i) for i in only] if only else all_bugs
    include_kernels = with_kernels if with_kernels is not None else not only
    # Only where the user says: never into the installed tool's own docs/ by default.
    target = Path(markdown) if markdown and not no_markdown else None
    output_file(str(target) if target else None, "--markdown", [b.path for b in all_bugs] + kernel_files())
    seed = fresh_seed() if seed is None else seed
    done = {"n": 0}

    def on_cell(row, cell) -> None:
        done["n"] += 1
        kinds = f" ({', '.join(cell.kinds)})" if cell.kinds and cell.detector in ("sanitize", "symbolic") else ""
        click.echo(f"  [{done['n']:3d}] {row.label}  {cell.detector}: {cell.status}{kinds}  {cell.seconds:.1f} s",
                   err=True)

    click.echo(f"tdebug bugs matrix: {len(bugs)} bug(s)" + (", the fixed kernels" if include_kernels else "")
               + f", seed {seed}, {'full' if full else 'quick'} case matrix", err=True)
    result = run_matrix(bugs, None if include_kernels else [], list(detectors) or None, quick=not full, seed=seed,
                        jobs=jobs, timeout=timeout, expected_only=expected_only, on_cell=on_cell)
    click.echo(to_text(result))
    problems = disagreements(result)
    click.echo(f"\n{len(result.rows)} rows in {result.seconds:.0f} s; "
               + ("every cell agrees with the expectations." if not problems else f"{len(problems)} disagreement(s):"))
    for p in problems:
        click.echo("  " + p)
    if target is not None:
        write_markdown(result, target)
        click.echo(f"wrote {_rel(target)}")
    if not problems and all(c.status in (NA, SKIPPED) for row in result.rows for c in row.cells.values()):
        raise NothingChecked("no detector could run on any row here: nothing was checked")
    raise SystemExit(1 if problems else 0)
