"""`tdebug sanitize`: on a GPU, compute-sanitizer and tdebug's interpreter pass at once, one merged report; on a
CPU, tdebug's interpreter sanitizer."""

from __future__ import annotations

import json
import shutil
import time
from collections import Counter
from pathlib import Path

import click

from ..catalogue.files import bug_files, kernel_files
from ..catalogue.shapes import SHAPE
from ..interpreter.versions import triton_viz_problem
from ..report import render
from ..runtime import device as device_mod
from ..runtime.device import NO_GPU
from ..runtime.files import write_output
from ..runtime.harness import run_job
from ..runtime.job import JobLimits
from ..runtime.results import JobResult
from ..runtime.verdict import Verdict
from ..sanitize import sanitize_job
from ..sanitize.checks import CHOICES
from ..sanitize.sweep import sanitize_script
from . import repro_option
from .common import (
    COULD_NOT_RUN,
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

GPU_TOOLS = ("memcheck", "initcheck", "racecheck", "synccheck")
ENGINES = ("auto", "tdebug", "compute-sanitizer", "symbolic")


def _compute_sanitizer_found() -> bool:
    from ..sanitize.compute_sanitizer import find_compute_sanitizer

    return find_compute_sanitizer() is not None


NO_CS = "compute-sanitizer was not found (install the CUDA toolkit or put it on PATH)"


def plan_engines(device: str, engine: str) -> tuple[bool, bool, str]:
    """(run compute-sanitizer, run tdebug's interpreter pass on the GPU, a note to print or "").
    On the CPU path (no GPU, --device cpu, or the symbolic engine) both are False: the job runs as before.
    Raises click.UsageError for a contradiction (the GPU tools with --device cpu), CouldNotRun (exit 3) for a
    GPU or compute-sanitizer asked for and missing."""
    if device == "cpu" or engine == "symbolic":
        if engine == "compute-sanitizer":
            raise click.UsageError("--engine compute-sanitizer needs a GPU (--device auto or cuda)")
        return False, False, ""
    asked = "--device cuda" if device == "cuda" else f"--engine {engine}"
    try:
        on = device_mod.resolve(device)
    except device_mod.NoGpu:
        raise CouldNotRun(f"{asked}: {NO_GPU}") from None
    if on is device_mod.Device.CPU:
        if engine == "compute-sanitizer":
            raise CouldNotRun(f"{asked}: {NO_GPU}")
        return False, False, f"tdebug sanitize: {NO_GPU}; using the interpreter sanitizer on the CPU"
    if engine == "tdebug":
        return False, True, ""
    if not _compute_sanitizer_found():
        if engine == "compute-sanitizer" or device == "cuda":
            raise CouldNotRun(f"{asked}: {NO_CS}")
        return False, True, f"tdebug sanitize: {NO_CS}; tdebug's interpreter pass only"
    return True, engine == "auto", ""


def _render_result(result: JobResult, target: str, max_findings: int, engines: bool = False) -> None:
    from ..sanitize.combined import engine_names

    shown = 0
    seen = set()
    for case in result.cases:
        if case.status == "pass" or case.status in COULD_NOT_RUN:
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
            if engines:
                click.echo("  found by " + " and ".join(engine_names(f)))
            shown += 1


@click.command("sanitize", context_settings={"ignore_unknown_options": True})
@click.argument("target", required=False, type=click.Path(dir_okay=False))
@click.argument("script_args", nargs=-1, type=click.UNPROCESSED)
@click.option("--device", type=click.Choice(device_mod.ASKED), default=device_mod.DEFAULT, show_default=True,
              help="auto: the GPU engines when a GPU is present, else the interpreter sanitizer on the CPU.")
@click.option("--tool", "tools", type=click.Choice(GPU_TOOLS + ("all",)), multiple=True,
              help="GPU tools (default memcheck and initcheck; all adds racecheck and synccheck).")
@click.option("--engine", type=click.Choice(ENGINES), default="auto", show_default=True,
              help="auto: on a GPU compute-sanitizer and tdebug's interpreter pass at once, on a CPU tdebug's "
                   "sanitizer; compute-sanitizer: the GPU tools alone; tdebug: the interpreter pass alone; "
                   "symbolic: triton-viz's z3 sanitizer (CPU), for comparison.")
@click.option("--check", "checks", type=click.Choice(sorted(CHOICES)), multiple=True,
              help="Interpreter checks to run (default all but overflow-all: every int32 wrap, not only those "
                   "reaching an address or a store).")
@click.option("--shape", type=SHAPE, default=None, help="One case of this shape (default: the quick case matrix).")
@click.option("--dtype", type=click.Choice(["fp32", "fp16", "bf16"]), default="fp32", show_default=True)
@click.option("--layout", type=click.Choice(["contiguous", "sliced", "transposed", "offset"]), default="contiguous")
@click.option("--config", type=click.IntRange(min=0), default=None, help="Autotuned kernels: this config only.")
@click.option("--full", is_flag=True, help="The full case matrix of tdebug check, not the quick one.")
@click.option("--seed", type=SEED, default=None)
@click.option("--max-findings", type=click.IntRange(min=0), default=20, show_default=True,
              help="Findings shown per target (0: all).")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), default=None, help="Write findings as JSON.")
@click.option("--keep-log", type=click.Path(dir_okay=False), default=None, help="GPU: keep the raw tool log here.")
@executor_option
@click.option("--timeout", type=TIMEOUT, default=120.0, show_default=True, help="Seconds per case before a hang.")
@click.option("--max-programs", type=click.IntRange(min=0), default=None,
              help="Interpreter pass: stop (with a note) at a launch of more programs than this (0: no cap; "
                   "default on a GPU 16384, on a CPU none).")
@click.option("--max-mib", type=click.IntRange(min=0), default=None,
              help="Interpreter pass: stop (with a note) at a launch whose tensor arguments hold more MiB than "
                   "this (0: no cap; default on a GPU 256, on a CPU none).")
@repro_option.option
def command(target, script_args, device, tools, engine, checks, shape, dtype, layout, config, full, seed,
            max_findings, json_path, keep_log, timeout, max_programs, max_mib, repro_dir) -> None:
    """Sanitize TARGET (a catalogue file or any script; its arguments after --), or with no TARGET the
    whole catalogue (kernels/ and bugs/). Exit 1 when anything is found, 0 when clean, 3 when nothing was
    found but some part was not checked (the interpreter pass hit a size cap or could not run the script).

    On a GPU (default --engine auto) two engines run at once and one report merges them, each finding naming
    its engine: compute-sanitizer (memcheck and initcheck; see --tool) on the compiled kernels, and tdebug's
    interpreter pass over the same script, for what no GPU tool sees (races between programs on global
    memory, unwritten outputs, device_assert, ...). The interpreter pass is capped (--max-programs,
    --max-mib): a launch over a cap stops it, and the report says what was not checked.

    \b
    Interpreter checks: bounds (every address against the elements each tensor view really spans, before the
    access), uninit (reads of torch.empty memory nothing wrote), race (two programs touching one
    element, one of them storing, without atomics), unwritten (output elements no program wrote),
    assert (tl.device_assert, live), overflow (int32 offset arithmetic), nan (the op that first made a
    NaN/Inf from finite operands, when that value reaches memory through a store).

    \b
    A script with autotuned kernels runs once per config that survives their pruning; findings name
    the config; --config N runs config N only.
    """
    if engine == "symbolic" and (problem := triton_viz_problem()):
        raise click.UsageError(f"--engine symbolic {problem}")
    if target == "pytest" and not Path(target).exists():
        raise SystemExit(_pytest(script_args, seed))
    seed = fresh_seed() if seed is None else seed
    job_engine = "symbolic" if engine == "symbolic" else "tdebug"
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
    separate_outputs(("--json", json_path), ("--keep-log", keep_log), ("--repro", repro_dir))
    json_file = output_file(json_path, "--json", inputs)
    output_file(keep_log, "--keep-log", inputs + ([json_file] if json_file else []))
    # After the output paths: a path that cannot be written is refused (exit 2) before the device is asked for.
    use_tools, gpu_interpreter, line = plan_engines(device, engine)
    use_gpu = use_tools or gpu_interpreter
    if "divergence" in checks and not gpu_interpreter:
        why = "--check divergence compares each launch compiled and interpreted"
        if device == "cpu" or engine not in ("auto", "tdebug"):  # asked for together with what excludes it
            raise click.UsageError(f"{why}: it needs the GPU's interpreter pass (--device auto or cuda, --engine "
                                   "auto or tdebug)")
        raise CouldNotRun(f"{why}: {NO_GPU}")
    if keep_log and not use_tools:  # asked for a log no tool would write: never a silent no-op
        why = "--keep-log keeps compute-sanitizer's raw log"
        if device == "cpu" or engine not in ("auto", "compute-sanitizer"):
            raise click.UsageError(f"{why}: it needs the GPU tools (--device auto or cuda, --engine auto or "
                                   "compute-sanitizer)")
        raise CouldNotRun(f"{why}: {NO_GPU}")
    limits = _limits(max_programs, max_mib, use_gpu)
    repro_folder = repro_option.Folder(repro_dir)
    if line:  # a note, on stdout: stderr is for the one line of an error
        click.echo(line)
    gpu_tools = list(GPU_TOOLS) if "all" in tools else (list(tools) or ["memcheck", "initcheck"])
    report = []
    rows = []
    total = Verdict()
    nothing_checked: list[str] = []  # targets that ran no case, or a script that launched no Triton kernel
    for number, (path, kind) in enumerate(targets, 1):
        if len(targets) > 1:  # the whole catalogue takes minutes: say where it is (stderr; the table is stdout)
            click.echo(f"tdebug sanitize: [{number}/{len(targets)}] {Path(path).parent.name}/{Path(path).name}",
                       err=True)
        job = sanitize_job(path, kind, quick=not full, seed=seed, checks=list(checks) or None,
                           max_findings=0, engine=job_engine, argv=list(script_args), single=shape is not None,
                           shape=shape, dtype=dtype, layout=layout, config=config)
        if repro_folder.root is not None:
            job = job.but(repro=repro_folder.job_value())
        started = time.perf_counter()
        engines: dict[str, float] = {}
        notes, coverage = [], []
        if use_gpu:
            from ..sanitize.combined import sanitize_combined

            combined = sanitize_combined(job, gpu_tools, interpreter=gpu_interpreter, gpu_tools=use_tools,
                                         keep_log=keep_log, timeout=timeout, limits=limits)
            result, notes, coverage = combined.result, combined.notes, combined.coverage
            engines = {r.engine: round(r.seconds, 2) for r in combined.runs}
        else:
            if limits.max_programs or limits.max_bytes:
                job = job.but(limits=JobLimits(limits.max_programs, limits.max_bytes))
            if kind == TargetKind.SCRIPT and job_engine == "tdebug":
                result = sanitize_script(job, timeout, progress=lambda line: click.echo(line, err=True))
            else:
                result = run_job(job, mode="interpret", timeout=timeout)
        elapsed = time.perf_counter() - started
        if result.fatal:
            raise (click.UsageError if result.fatal_usage else CouldNotRun)(f"{path}: {result.fatal}")
        could_not_run(result.cases, instead=f"tdebug sanitize {path} --device cuda")  # said on stderr
        verdict = Verdict.of(result.cases, unchecked_notes=notes)
        total += verdict
        counts = Counter(verdict.findings)
        found, unchecked = verdict.found, verdict.incomplete
        if not found and not unchecked and (not result.cases or any(c.launched_nothing for c in result.cases)):
            nothing_checked.append(path)
        rows.append((path, counts, elapsed, len(result.cases), found, unchecked))
        if len(targets) == 1:
            _render_result(result, path, max_findings, engines=use_gpu)
            for note in result.notes:
                click.echo(render(note))
            for note in coverage:
                click.echo(f"note: {note}")
            for note in notes:
                click.echo(f"NOT CHECKED: {note}")
        report.append({"target": path, "seconds": elapsed, "engines": engines, "notes": notes,
                       "coverage": coverage, "cases": [
                           {"label": c.label, "status": c.status, "error": c.error,
                            "findings": [f.to_dict() for f in c.findings]} for c in result.cases]})
    repro_folder.report()
    ran = _engines_text(use_tools, gpu_interpreter, gpu_tools, job_engine)
    if len(targets) > 1:
        click.echo(f"{'file':48s} {'cases':>5s}  {'findings':30s} {'time':>7s}")
        for path, counts, elapsed, n, found, unchecked in rows:
            text = ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or (
                "NOT fully checked" if unchecked else "failed" if found else "nothing checked"
                if path in nothing_checked else "clean")
            click.echo(f"{Path(path).parent.name + '/' + Path(path).name:48s} {n:5d}  {text:30s} {elapsed:6.1f}s")
    else:
        path, counts, elapsed, n, found, unchecked = rows[0]
        click.echo(f"tdebug sanitize {path}: {verdict.summary()} ({n} case(s), {elapsed:.1f} s, {ran}, seed {seed})")
    if json_file:
        payload = {"tool": "tdebug sanitize", "seed": seed, "gpu": use_gpu, "engine": ran,
                   "verdict": total.to_json(), "targets": report}
        write_output(json_file, json.dumps(payload, indent=1, default=str), "--json", inputs)
    if not total.found and not total.incomplete and nothing_checked:
        raise NothingChecked(f"{nothing_checked[0]}" + (f" and {len(nothing_checked) - 1} more"
                                                         if len(nothing_checked) > 1 else "")
                             + " launched no Triton kernel: nothing was sanitized")
    if not total.found and any(r["notes"] for r in report):  # a size cap stopped the interpreter pass
        click.echo("tdebug sanitize: nothing found, but not everything was checked (NOT CHECKED above)", err=True)
    raise SystemExit(total.exit_code)


def _pytest(args: tuple[str, ...], seed: int | None) -> int:
    """`tdebug sanitize -- pytest ARGS`: the test suite under the sanitizer, as `pytest --tdebug ARGS` runs it
    (each test's launches checked, findings fail the test); pytest's exit code in tdebug's terms."""
    import sys

    from ..runtime import processes

    cmd = [sys.executable, "-m", "pytest", "--tdebug", *args] + (["--tdebug-seed", str(seed)] if seed else [])
    proc = processes.start(cmd, interactive=True)
    code = processes.reap(proc, None)
    if code == 5:
        raise NothingChecked("pytest collected no tests: nothing was sanitized")
    if code in (2, 3, 4):  # interrupted, internal error, usage error
        raise click.UsageError(f"pytest --tdebug {' '.join(args)} stopped with exit code {code}")
    return 0 if code == 0 else 1


def _limits(max_programs: int | None, max_mib: int | None, on_gpu: bool):
    """The interpreter pass's caps: the GPU defaults (a script written for the GPU may launch big grids on
    big tensors), none on the CPU unless asked."""
    from ..interpreter.hooks.limits import Limits
    from ..sanitize.combined import DEFAULT_LIMITS

    default = DEFAULT_LIMITS if on_gpu else Limits()
    programs = default.max_programs if max_programs is None else max_programs
    max_bytes = default.max_bytes if max_mib is None else max_mib << 20
    return Limits(programs, max_bytes)


def _engines_text(use_tools: bool, interpreter: bool, tools: list[str], job_engine: str) -> str:
    parts = []
    if use_tools:
        parts.append("compute-sanitizer " + "+".join(tools))
    if interpreter:
        parts.append("tdebug interpreter on the GPU's tensors")
    return " and ".join(parts) if parts else f"{job_engine} engine"
