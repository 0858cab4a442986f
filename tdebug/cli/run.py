"""`tdebug run TARGET`: one launch under a mode (the CPU interpreter, or the GPU in debug mode)."""

from __future__ import annotations

from pathlib import Path

import click

from ..interpreter.hooks.breakpoints import BreakpointError, parse_break, parse_pid, resolve_breaks
from ..runtime import device as device_mod
from ..runtime.harness import run_job
from ..runtime.job import Job, Plan
from ..runtime.results import render_case
from ..runtime.verdict import COULD_NOT_RUN, Status, Verdict
from . import repro_option
from .common import (
    TIMEOUT,
    CouldNotRun,
    NothingChecked,
    TargetKind,
    case_options,
    classify_target,
    could_not_run,
    executor_option,
    fresh_seed,
)


def autotune_lines(cases) -> list[str]:
    """Which config each autotuned kernel of a script ran under the interpreter, and what else it could."""
    lines, seen = [], set()
    for case in cases:
        for launch in case.launches:
            key = (launch["kernel"], launch["config_index"])
            if key in seen:
                continue
            seen.add(key)
            others = [i for i in launch.get("survivors", []) if i != launch["config_index"]]
            lines.append(f"tdebug: {launch['kernel']} ran autotune config #{launch['config_index']} "
                         f"({launch['config']})" + (f"; --config N runs another (surviving its pruning: "
                                                    f"{', '.join(f'#{i}' for i in others)})" if others else ""))
    return lines


@click.command("run", context_settings={"ignore_unknown_options": False})
@click.argument("target", type=click.Path(dir_okay=False))
@click.argument("script_args", nargs=-1, type=click.UNPROCESSED)
@click.option("--mode", type=click.Choice(["interpret", "debug"]), default="interpret", show_default=True,
              help="interpret: Triton's CPU interpreter with tdebug's checks; debug: the GPU with TRITON_DEBUG=1.")
@case_options
@click.option("--config", "config", type=click.IntRange(min=0), default=None,
              help="Autotuned kernels: run this config (index; default: the first that survives the "
                   "kernel's pruning).")
@click.option("--break", "breaks", multiple=True, is_flag=False, flag_value="0",
              help="Stop in pdb++ at the kernel's first line, at LINE of its file, or at FILE:LINE (a kernel in "
                   "a module it imports); repeatable.")
@click.option("--variant", default=None, help="A kernel's code path, e.g. causal (see the file's SPEC.variants).")
@click.option("--pid", default=None, help="With --break: only in this program, e.g. 1 or 1,0.")
@executor_option
@click.option("--timeout", type=TIMEOUT, default=120.0, show_default=True,
              help="Seconds before a launch is declared hung (off while in the debugger).")
@repro_option.option
def command(target, script_args, mode, shape, dtype, layout, seed, config, breaks, variant, pid, timeout,
            repro_dir) -> None:
    """Run TARGET (a catalogue file, or any script: arguments after --) and report.

    A catalogue file is launched on inputs built from --shape/--dtype/--layout/--seed and checked
    against its float64 reference. tl.device_assert is live in both modes.
    """
    kind = classify_target(target)
    try:
        device = device_mod.resolve("cuda" if mode == "debug" else "cpu").value
    except device_mod.NoGpu:
        raise CouldNotRun("--mode debug needs a CUDA GPU and none is visible; use --mode interpret") from None
    try:
        wanted_pid = parse_pid(pid)
        break_lines = None
        if breaks or wanted_pid is not None:
            lines = [b for b in breaks if b != "0"]
            resolve_breaks(target, lines)  # validate now: one clear error instead of a child's traceback
            break_lines = [":".join(map(str, parse_break(b, target))) for b in lines]
    except BreakpointError as e:
        raise click.UsageError(str(e)) from None
    if break_lines is not None and mode != "interpret":
        raise click.UsageError("--break works under --mode interpret (the GPU runs compiled code)")
    seed = fresh_seed() if seed is None else seed
    plan = None
    if kind == TargetKind.SPEC:
        plan = Plan(device=device, seed=seed, dtypes=(dtype,), layouts=(layout,), shapes=(shape,) if shape else None,
                    configs=(config,) if config is not None else None, variants=(variant,) if variant else None)
    if repro_dir and mode != "interpret":
        raise click.UsageError("--repro works under --mode interpret (it saves the interpreter's launches)")
    repro_folder = repro_option.Folder(repro_dir)
    job = Job(target=str(Path(target).resolve()), kind=kind, argv=tuple(script_args), plan=plan,
              single=kind == TargetKind.SPEC, config=config if kind == TargetKind.SCRIPT else None,
              breaks=tuple(break_lines) if break_lines is not None else None, pid=wanted_pid or None,
              repro=repro_folder.job_value() if repro_folder.root is not None else None,
              seed=seed if kind == TargetKind.SCRIPT else None)
    interactive = break_lines is not None
    kind_said = False  # the header was printed as the run started
    if mode == "debug":  # GPU debug mode (issue 6): the child's output shown and parsed for device asserts
        from ..sanitize.gpu_debug import run_debug

        result = run_debug(job, timeout=timeout)
    else:
        said: list[str] = []

        def header(event: str, data: dict) -> None:
            """The run's header as soon as the plan is known: before the debugger session, not after it."""
            if event == "plan" and kind == TargetKind.SPEC and not said:
                said.append(data.get("kernel", ""))
                click.echo(f"{data.get('kernel', '')}: {mode} mode, seed {seed}")

        result = run_job(job, mode="interpret", timeout=None if interactive else timeout, interactive=interactive,
                         on_event=header)
        kind_said = bool(said)
    if result.fatal:
        raise (click.UsageError if result.fatal_usage else CouldNotRun)(result.fatal)
    repro_folder.report()
    if kind == TargetKind.SPEC and not kind_said:
        click.echo(f"{result.kernel}: {mode} mode, seed {seed}")
    for case in result.cases:
        if case.status == Status.QUIT:
            click.echo(f"quit the debugger: {case.label} stopped there, as asked")
            continue
        if (kind == TargetKind.SCRIPT and case.ok) or case.status in COULD_NOT_RUN:
            continue
        for line in render_case(case):
            click.echo(line)
    if kind == TargetKind.SCRIPT and mode == "interpret":
        for line in autotune_lines(result.cases):
            click.echo(line, err=True)
    verdict = Verdict.of(result.cases)
    could_not_run(result.cases, instead=f"tdebug run {target} --mode debug")  # said on stderr, one line each
    if verdict.found and not verdict.incomplete and kind == TargetKind.SCRIPT:
        code = result.cases[0].exit_code  # the script's own exit code is reported, never passed through
        click.echo(f"{target} failed" + (f" (exit code {code})" if code else ""))
    if verdict.nothing_checked:
        raise NothingChecked(f"{target}: no case ran: nothing was checked" if not result.cases
                             else f"{target} launched no Triton kernel: nothing was checked")
    raise SystemExit(verdict.exit_code)
