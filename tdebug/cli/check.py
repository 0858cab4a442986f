"""`tdebug check`: fixed kernels against their float64 references on adversarial shapes, layouts, dtypes
and every autotune config."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import click

from ..catalogue.files import kernel_files
from ..check.against_reference import check_file
from ..report import Finding, render
from ..runtime import device as device_mod
from ..runtime.files import same_file, write_output
from ..runtime.results import JobResult, render_case
from ..runtime.verdict import Verdict
from . import repro_option
from .common import (
    SEED,
    TIMEOUT,
    CouldNotRun,
    NothingChecked,
    TargetKind,
    classify_target,
    could_not_run,
    executor_option,
    fresh_seed,
    output_file,
    separate_outputs,
)


def _result_json(path: Path, result: JobResult, seed: int, device: str) -> dict:
    return {
        "target": str(path), "kernel": result.kernel, "seed": seed, "device": device, "fatal": result.fatal,
        "lint": [f.to_dict() for f in result.lint],
        "cases": [{"label": c.label, "status": c.status, "time": c.time, "error": c.error,
                   "comparisons": c.comparisons, "findings": [f.to_dict() for f in c.findings],
                   "launches": c.launches, "localisation": c.localisation} for c in result.cases],
    }


@click.command("check")
@click.argument("targets", nargs=-1, type=click.Path(dir_okay=False))
@click.option("--all", "all_", is_flag=True, help="Every kernel in kernels/.")
@click.option("--device", type=click.Choice(device_mod.ASKED), default=device_mod.DEFAULT, show_default=True,
              help="cpu: the interpreter; cuda: the GPU (guard bands on); auto: cuda when present.")
@click.option("--quick", is_flag=True, help="Fewer shapes (the spec's quick_shapes).")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), default=None,
              help="Also write the results as JSON.")
@click.option("--seed", type=SEED, default=None, help="Input seed (default: fresh, printed).")
@executor_option
@click.option("--timeout", type=TIMEOUT, default=120.0, show_default=True, help="Seconds per case before a hang.")
@click.option("-v", "--verbose", is_flag=True, help="Details for passing cases too.")
@repro_option.option
def command(targets, all_, device, quick, json_path, seed, timeout, verbose, repro_dir) -> None:
    """Check catalogue kernels against their references: every shape x layout x dtype x autotune config.

    Outputs are poisoned before each launch, so elements no program wrote are reported as unwritten,
    apart from wrong values. Exit 0 when all pass, 1 on any failure.
    """
    files = [Path(t) for t in targets]
    for f in files:
        if classify_target(str(f)) != TargetKind.SPEC:
            raise click.UsageError(f"{f} is not a catalogue file (no SPEC = tdebug.KernelSpec(...))")
    if all_:
        files += [f for f in kernel_files() if not any(same_file(f, g) for g in files)]
    if not files:
        raise click.UsageError("nothing to check: give catalogue files or --all")
    separate_outputs(("--json", json_path), ("--repro", repro_dir))
    json_file = output_file(json_path, "--json", files)
    try:
        device = device_mod.resolve(device).value
    except device_mod.NoGpu as e:
        raise CouldNotRun(str(e)) from None
    if repro_dir and device != "cpu":
        raise click.UsageError("--repro works with --device cpu (it saves the interpreter's launches)")
    seed = fresh_seed() if seed is None else seed
    repro_folder = repro_option.Folder(repro_dir)
    click.echo(f"tdebug check: {len(files)} file(s), device {device}, seed {seed}"
               + (" (quick)" if quick else ""))
    results: list[tuple[Path, JobResult]] = []
    totals = {"pass": 0, "fail": 0}
    started = time.perf_counter()
    for path in files:
        progress = {"n": 0, "total": 0}

        def on_event(kind: str, ev: dict, progress=progress, path=path) -> None:
            if kind == "plan":
                progress["total"] = len(ev.get("labels", []))
                click.echo(f"\n{ev.get('kernel')} ({path}): {progress['total']} cases")
                for f in ev.get("lint", []):
                    click.echo("  " + render(Finding.from_dict(f), context=False).replace("\n", "\n  "))
            elif kind == "result":
                progress["n"] += 1
                if sys.stdout.isatty():
                    click.echo(f"\r  [{progress['n']}/{progress['total']}]", nl=False)

        result = check_file(path, quick=quick, device=device, seed=seed, timeout=timeout, on_event=on_event,
                            repro=repro_folder.job_value())
        if sys.stdout.isatty():
            click.echo("\r", nl=False)
        if result.fatal:
            click.echo(f"  ERROR {result.fatal}")
            totals["fail"] += 1
        for case in result.cases:
            for line in render_case(case, verbose=verbose or not case.ok):
                click.echo("  " + line)
            totals["pass" if case.ok else "fail"] += 1
        results.append((path, result))
    elapsed = time.perf_counter() - started
    lint_count = sum(len(r.lint) for _, r in results)
    verdict = sum((Verdict.of(r.cases, fatal=r.fatal, lint=len(r.lint)) for _, r in results), Verdict())
    click.echo(f"\nsummary: {totals['pass']} passed, {totals['fail']} failed, {lint_count} lint warning(s) "
               f"in {elapsed:.1f} s (seed {seed})")
    for path, result in results:
        bad = sum(not c.ok for c in result.cases) + bool(result.fatal)
        click.echo(f"  {'FAIL' if bad else 'ok  '} {result.kernel or path.name}: "
                   f"{len(result.cases) - bad + bool(result.fatal)}/{len(result.cases) or 1} cases")
    repro_folder.report()
    if json_file:
        payload = {"tool": "tdebug check", "seed": seed, "device": device, "elapsed": elapsed,
                   "verdict": verdict.to_json(), "files": [_result_json(p, r, seed, device) for p, r in results]}
        write_output(json_file, json.dumps(payload, indent=1, default=str), "--json", files)
        click.echo(f"wrote {json_path}")
    could_not_run((c for _, r in results for c in r.cases), instead="tdebug check FILE --device cuda")
    for path, result in results:  # a file that could not even be planned (it raised at import): one line each
        if result.fatal:
            click.echo(f"tdebug: error: {path}: {result.fatal}", err=True)
    if verdict.nothing_checked:
        raise NothingChecked("no case ran (every file planned 0 cases): nothing was checked")
    raise SystemExit(verdict.exit_code)
