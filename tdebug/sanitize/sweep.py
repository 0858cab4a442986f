"""Every autotune config of a script: the script runs once per config that survives its kernels' pruning.

The first run pins each autotuned kernel to its first surviving config and records, per launch, which
configs survive (the kernel's own prune_configs_by / early_config_prune, called as Triton calls it).
Run k (a fresh child each time) pins every autotuned kernel to its k-th survivor, so a grid computed
for one block size is seen under every other. A kernel whose grid is the same under every config, and
that left nothing unwritten under any, gets a note (no finding): correct, but bigger blocks launch idle
programs.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from .. import settings
from ..report import Finding
from ..runtime.gate import GO, STOP, Gate
from ..runtime.harness import run_job
from ..runtime.job import Job
from ..runtime.results import JobResult
from ..runtime.stdin import ReplayedStdin


def runs_needed(result: JobResult) -> int:
    """How many runs cover every surviving config of every autotuned launch of the first run."""
    return max((len(launch.get("survivors") or [0]) for case in result.cases for launch in case.launches),
               default=1)


def rank_label(first: JobResult, rank: int) -> str:
    """kernel #3, ...: the config each autotuned kernel of the first run runs in run `rank`."""
    picks: dict[str, int] = {}
    for case in first.cases:
        for launch in case.launches:
            survivors = launch.get("survivors") or [launch["config_index"]]
            picks.setdefault(launch["kernel"], survivors[rank] if rank < len(survivors) else survivors[0])
    return ", ".join(f"{kernel} #{index}" for kernel, index in picks.items())


def configs_label(launches: list[dict]) -> str:
    """kernel #1 BLOCK=128 warps=4 stages=3, ...: which config each autotuned kernel ran."""
    ran: dict[str, set[str]] = {}
    for launch in launches:
        ran.setdefault(launch["kernel"], set()).add(f"#{launch['config_index']} {launch['config']}")
    return "; ".join(f"{kernel} {', '.join(sorted(configs))}" for kernel, configs in ran.items())


def grid_notes(results: list[JobResult]) -> list[Finding]:
    """Kernels whose grid stayed the same whatever config ran (and that left nothing unwritten)."""
    grids: dict[str, dict[int, list]] = {}  # kernel -> config index -> grids of its launches, in order
    meta: dict[str, set[str]] = {}  # kernel -> the meta-parameters of the configs it ran (warps, stages aside)
    for result in results:
        for case in result.cases:
            for launch in case.launches:
                grids.setdefault(launch["kernel"], {}).setdefault(launch["config_index"], []).append(
                    tuple(launch["grid"]))
                meta.setdefault(launch["kernel"], set()).add(" ".join(
                    p for p in launch["config"].split() if not p.startswith(("warps=", "stages="))))
    unwritten = {f.kernel for result in results for case in result.cases for f in case.findings
                 if f.check == "unwritten"}
    notes = []
    for kernel, by_config in grids.items():
        if len(by_config) < 2 or len(meta[kernel]) < 2 or kernel in unwritten:
            continue
        distinct = {tuple(g) for g in by_config.values()}
        if len(distinct) != 1:
            continue
        from .unwritten import grid_text  # here: unwritten.py imports torch, which the CLI's parent need not

        grid = grid_text(next(iter(distinct))[0])
        configs = ", ".join(f"#{i}" for i in sorted(by_config))
        notes.append(Finding(
            check="note", kernel=kernel,
            message=f"the launch grid {grid} of {kernel} does not depend on its autotune config: the same under "
                    f"configs {configs}. It covers the output under every one of them (nothing was left "
                    "unwritten), but bigger blocks launch programs with nothing to do; "
                    "grid = lambda META: (triton.cdiv(n, META['BLOCK']),) sizes it for the chosen block"))
    return notes


def _parallel_runs() -> int:
    """How many autotune configs' runs may go at once: a quarter of the cores (each run is a Python process
    beside compute-sanitizer's), one on a small machine (a CPU-only CI box runs them one after another)."""
    return max(1, (os.cpu_count() or 1) // 4)


def forks_runs() -> bool:
    """Whether a script's runs after the first go to one worker that forks a process per run (POSIX), instead
    of a fresh worker per run (TDEBUG_SWEEP=spawn: the latter, as a reference)."""
    return hasattr(os, "fork") and settings.get("TDEBUG_SWEEP") == "fork"


def sanitize_script(job: Job, timeout: float | None = 120.0,
                    progress: Callable[[str], None] | None = None, capture: bool = False) -> JobResult:
    """Sanitize a script under every surviving autotune config (or the one job.config names); capture: keep
    the children's output instead of showing it (the GPU's interpreter pass, beside compute-sanitizer)."""
    replay = ReplayedStdin()  # every run reads the same standard input
    try:
        if capture and _parallel_runs() > 1 and job.config is None and replay.kind != "file":
            results = _parallel_sweep(job, timeout, replay)
        else:
            results = _one_after_another(job, timeout, progress, capture, replay)
    finally:
        replay.close()
    first = results[0]
    if len(results) == 1 and (first.fatal or job.config is not None):
        _label(first, job)
        return first
    combined = JobResult(kernel=first.kernel)
    failed = next((r for r in results if r.fatal), None)
    if failed is not None:  # a later config's run could not be done: never "clean" for what it did not check
        combined.fatal, combined.fatal_usage = failed.fatal, failed.fatal_usage
    for result in results:
        _label(result, job)
        for case in result.cases:
            case.index = len(combined.cases)
            combined.cases.append(case)
            combined.labels.append(case.label)
    combined.notes = grid_notes(results)
    return combined


def _one_after_another(job: Job, timeout: float | None, progress: Callable[[str], None] | None, capture: bool,
                       replay: ReplayedStdin) -> list[JobResult]:
    """The first run, then the other configs' runs: forked from one worker on the CPU, else one at a time."""
    first = run_job(job.but(config_rank=0), mode="interpret", timeout=timeout, capture=capture,
                    stdin=replay.stdin())
    results = [first]
    if first.fatal or job.config is not None:
        return results
    runs = runs_needed(first)
    name = Path(job.target).name
    ranks = list(range(1, runs))

    def announce(rank: int) -> None:
        if progress is not None:
            progress(f"tdebug sanitize: {name}: run {rank + 1} of {runs} (one per surviving autotune config: "
                     f"{rank_label(first, rank)})")

    # On the CPU, one worker forks a process per run: torch, Triton and tdebug imported once. (The GPU's pass,
    # capture=True, keeps a fresh process per run: a CUDA context does not survive a fork.)
    if ranks and not capture and forks_runs():
        forked = tuple(ranks)

        def on_event(kind: str, data: dict) -> None:
            if kind == "start":
                announce(forked[data["index"]])

        results.append(run_job(job.but(sweep_ranks=forked), mode="interpret", timeout=timeout, capture=capture,
                               on_event=on_event, stdin=replay.stdin()))
        ranks = []
    for rank in ranks:
        announce(rank)
        results.append(run_job(job.but(config_rank=rank), mode="interpret", timeout=timeout, capture=capture,
                               stdin=replay.stdin()))
    return results


def _parallel_sweep(job: Job, timeout: float | None, replay: ReplayedStdin) -> list[JobResult]:
    """The GPU's interpreter pass on a machine with cores to spare: the other configs' runs go at once, in
    independent children. Those the pool can hold at once are started beside the first run and wait, imported,
    at a gate (runtime/gate.py): their start-up overlaps the first run's. The first run's first launch says how
    many of its configs survive: those runs go; ranks a later kernel of the first run needs beyond those go (or
    start) when it ends, and pre-started runs no kernel needs stop. Results come in rank order whatever order the
    runs ended in (a piped stdin: none pre-started)."""
    width = _parallel_runs()
    started: dict[int, Future] = {}  # run_job calls on_event in this thread: no lock
    # Pre-started only where every run reads the same stdin from the start (a piped one is recorded by the first
    # run as it reads, and replayed to the runs started after it).
    gates = {rank: Gate() for rank in range(1, width)} if replay.kind == "other" else {}
    try:
        with ThreadPoolExecutor(max_workers=width) as pool:
            def submit(rank: int, env: dict | None = None) -> None:
                started[rank] = pool.submit(run_job, job.but(config_rank=rank), mode="interpret", timeout=timeout,
                                            capture=True, stdin=replay.stdin(), env_extra=env)

            for rank, gate in gates.items():
                submit(rank, gate.env())

            def start(ranks: range) -> None:
                for rank in ranks:
                    if rank in gates:
                        gates[rank].decide(GO)
                    elif rank not in started:
                        submit(rank)

            def on_event(kind: str, data: dict) -> None:
                if kind == "launch" and data.get("survivors", 0) > 1:
                    start(range(1, data["survivors"]))

            try:
                first = run_job(job.but(config_rank=0), mode="interpret", timeout=timeout, capture=True,
                                on_event=on_event, stdin=replay.stdin())
                needed = 1 if first.fatal else runs_needed(first)
                start(range(1, needed))
            finally:
                for gate in gates.values():
                    gate.decide(STOP)  # pre-started and not needed (or we are stopping): it ends, unrun
            others = [started[rank].result() for rank in sorted(started)]  # every child ends before we go on
    finally:
        for gate in gates.values():
            gate.close()
    if first.fatal:  # the first run could not be done: the verdict is its own, whatever the others found
        return [first]
    return [first, *(result for rank, result in zip(sorted(started), others) if rank < needed)]


def _label(result: JobResult, job: Job) -> None:
    for case in result.cases:
        ran = configs_label(case.launches)
        if ran:
            case.label = f"{Path(job.target).name} [{ran}]"
