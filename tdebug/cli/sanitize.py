"""`tdebug sanitize`: compute-sanitizer on a GPU; on a CPU tdebug's interpreter sanitizer."""

from __future__ import annotations

import json
import shutil
import time
from collections import Counter
from pathlib import Path

import click

from ..catalogue.files import bug_files, kernel_files
from ..catalogue.shapes import SHAPE
from ..report import render
from ..runtime.files import write_atomic
from ..runtime.harness import run_job
from ..runtime.results import JobResult
from ..sanitize import CHECKS, sanitize_job
from .common import SEED, TIMEOUT, NothingChecked, TargetKind, classify_target, fresh_seed, output_file

GPU_TOOLS = ("memcheck", "initcheck", "racecheck", "synccheck")


def _gpu_ready() -> tuple[bool, str]:
    import torch

    if not torch.cuda.is_available():
        return False, "no CUDA GPU is visible"
    from ..sanitize.compute_sanitizer import find_compute_sanitizer

    if find_compute_sanitizer() is None:
        return False, "compute-sanitizer was not found (install the CUDA toolkit or put it on PATH)"
    return True, ""


def _findings_summary(result: JobResult) -> Counter:
    counts: Counter = Counter()
    for case in result.cases:
        for f in case.findings:
            counts[f.check] += 1
    return counts


def _render_result(result: JobResult, target: str, max_findings: int) -> None:
    shown = 0
    seen = set()
    for case in result.cases:
        if case.status == "pass":
            continue
        header = f"{case.status.upper()} {case.label}" + (f": {case.error}" if case.error else "")
        click.echo(header)
        for f in case.findings:
            if f.key() in seen:
                continue
            seen.add(f.key())
            if max_findings and shown >= max_findings:
                click.echo(f"... more findings not shown (--max-findings {max_findings})")
                return
            click.echo(render(f))
            shown += 1


@click.command("sanitize", context_settings={"ignore_unknown_options": True})
@click.argument("target", required=False, type=click.Path(dir_okay=False))
@click.argument("script_args", nargs=-1, type=click.UNPROCESSED)
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto", show_default=True,
              help="auto: compute-sanitizer when a GPU and the tool are present, else the interpreter sanitizer.")
@click.option("--tool", "tools", type=click.Choice(GPU_TOOLS + ("all",)), multiple=True,
              help="GPU tools (default memcheck and initcheck; all adds racecheck and synccheck).")
@click.option("--engine", type=click.Choice(["tdebug", "symbolic"]), default="tdebug", show_default=True,
              help="CPU: tdebug's sanitizer, or triton-viz's symbolic (z3) one for comparison.")
@click.option("--check", "checks", type=click.Choice(sorted(CHECKS)), multiple=True,
              help="CPU checks to run (default all).")
@click.option("--shape", type=SHAPE, default=None, help="One case of this shape (default: the quick case matrix).")
@click.option("--dtype", type=click.Choice(["fp32", "fp16"]), default="fp32", show_default=True)
@click.option("--layout", type=click.Choice(["contiguous", "sliced", "transposed", "offset"]), default="contiguous")
@click.option("--config", type=click.IntRange(min=0), default=None, help="Autotuned kernels: this config only.")
@click.option("--full", is_flag=True, help="The full case matrix of tdebug check, not the quick one.")
@click.option("--seed", type=SEED, default=None)
@click.option("--max-findings", type=click.IntRange(min=0), default=20, show_default=True,
              help="Findings shown per target (0: all).")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), default=None, help="Write findings as JSON.")
@click.option("--keep-log", type=click.Path(dir_okay=False), default=None, help="GPU: keep the raw tool log here.")
@click.option("--timeout", type=TIMEOUT, default=120.0, show_default=True, help="Seconds per case before a hang.")
def command(target, script_args, device, tools, engine, checks, shape, dtype, layout, config, full, seed,
            max_findings, json_path, keep_log, timeout) -> None:
    """Sanitize TARGET (a catalogue file or any script; its arguments after --), or with no TARGET the
    whole catalogue (kernels/ and bugs/). Exit 1 when anything is found, 0 when clean.

    \b
    CPU checks: bounds (every address against the elements each tensor view really spans, before the
    access), uninit (reads of torch.empty memory nothing wrote), race (two programs touching one
    element, one of them storing, without atomics), unwritten (output elements no program wrote),
    assert (tl.device_assert, live), overflow (int32 offset arithmetic).
    """
    seed = fresh_seed() if seed is None else seed
    targets: list[tuple[str, str]] = []
    if target in ("pytest", "python") and not Path(target).exists():
        if shutil.which(target) is None and target == "python":
            raise click.UsageError("python not found")
        targets.append((target, "pytest" if target == "pytest" else "script"))
        if target == "python":
            if not script_args:
                raise click.UsageError("python: give a script to run")
            targets = [(script_args[0], TargetKind.SCRIPT)]
            script_args = script_args[1:]
    elif target:
        targets.append((target, classify_target(target)))
    else:
        targets = [(str(p), TargetKind.SPEC) for p in kernel_files() + bug_files()]
        if not targets:
            raise click.UsageError("no TARGET given and no catalogue found (kernels/, bugs/)")
    inputs = [path for path, _ in targets if Path(path).is_file()]
    json_file = output_file(json_path, "--json", inputs)
    output_file(keep_log, "--keep-log", inputs + ([json_file] if json_file else []))
    use_gpu = False
    if device in ("auto", "cuda"):
        ready, why = _gpu_ready()
        if device == "cuda" and not ready:
            raise click.UsageError(f"--device cuda: {why}")
        use_gpu = ready
        if device == "auto" and not ready:
            click.echo(f"tdebug sanitize: {why}; using the interpreter sanitizer on the CPU")
    report = []
    rows = []
    any_found = False
    unchecked: list[str] = []  # targets that ran no case, or a script that launched no Triton kernel
    for path, kind in targets:
        job = sanitize_job(path, kind, quick=not full, seed=seed, checks=list(checks) or None,
                           max_findings=0, engine=engine, argv=list(script_args), single=shape is not None,
                           shape=shape, dtype=dtype, layout=layout, config=config)
        started = time.perf_counter()
        if use_gpu:
            from ..sanitize.compute_sanitizer import sanitize_on_gpu

            gpu_tools = list(GPU_TOOLS) if "all" in tools else (list(tools) or ["memcheck", "initcheck"])
            job.pop("sanitize")
            for plan in (job.get("plan") or {},):
                plan["device"] = "cuda"
            result = sanitize_on_gpu(job, gpu_tools, keep_log, timeout)
        else:
            result = run_job(job, mode="interpret", timeout=timeout)
        elapsed = time.perf_counter() - started
        if result.fatal:
            raise (click.UsageError if result.fatal_usage else click.ClickException)(f"{path}: {result.fatal}")
        counts = _findings_summary(result)
        found = bool(counts) or any(c.status != "pass" for c in result.cases)
        any_found |= found
        if not found and (not result.cases or any(c.launched_nothing for c in result.cases)):
            unchecked.append(path)
        rows.append((path, counts, elapsed, len(result.cases), found))
        if len(targets) == 1:
            _render_result(result, path, max_findings)
        report.append({"target": path, "seconds": elapsed, "cases": [
            {"label": c.label, "status": c.status, "error": c.error, "findings": [f.to_dict() for f in c.findings]}
            for c in result.cases]})
    if len(targets) > 1:
        click.echo(f"{'file':48s} {'cases':>5s}  {'findings':30s} {'time':>7s}")
        for path, counts, elapsed, n, found in rows:
            text = ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or (
                "failed" if found else "nothing checked" if path in unchecked else "clean")
            click.echo(f"{Path(path).parent.name + '/' + Path(path).name:48s} {n:5d}  {text:30s} {elapsed:6.1f}s")
    else:
        path, counts, elapsed, n, found = rows[0]
        verdict = ("nothing checked" if path in unchecked else "clean") if not found else \
            ", ".join(f"{v} {k}" for k, v in sorted(counts.items())) or "failed"
        click.echo(f"tdebug sanitize {path}: {verdict} ({n} case(s), {elapsed:.1f} s, "
                   f"{'compute-sanitizer' if use_gpu else engine + ' engine'}, seed {seed})")
    if json_file:
        json_file.parent.mkdir(parents=True, exist_ok=True)
        payload = {"tool": "tdebug sanitize", "seed": seed, "gpu": use_gpu, "engine": engine, "targets": report}
        write_atomic(json_file, json.dumps(payload, indent=1, default=str))
    if not any_found and unchecked:
        raise NothingChecked(f"{unchecked[0]}" + (f" and {len(unchecked) - 1} more" if len(unchecked) > 1 else "")
                             + " launched no Triton kernel: nothing was sanitized")
    raise SystemExit(1 if any_found else 0)
