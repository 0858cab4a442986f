"""How `tdebug sanitize` launches a job (a catalogue file's cases or a script) under the interpreter sanitizer."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..runtime.harness import run_job
from ..runtime.job import Job, Plan, SanitizeOptions, fresh_seed
from ..runtime.results import JobResult
from .checks import CHECKS
from .sweep import sanitize_script


def sanitize_job(path: str | Path, kind: str, *, quick: bool = True, seed: int | None = None,
                 checks: list[str] | None = None, max_findings: int = 50, engine: str = "tdebug",
                 argv: list[str] | None = None, single: bool = False, shape=None, dtype: str = "fp32",
                 layout: str = "contiguous", config: int | None = None) -> Job:
    """The worker job that sanitizes a catalogue file (its case matrix, or one case) or a script."""
    seed = fresh_seed() if seed is None else seed
    configs = (config,) if config is not None else None
    plan = None
    if kind == "spec" and single:
        plan = Plan(device="cpu", seed=seed, dtypes=(dtype,), layouts=(layout,),
                    shapes=(shape,) if shape else None, configs=configs)
    elif kind == "spec":
        plan = Plan(device="cpu", seed=seed, quick=quick, configs=configs)
    return Job(target=str(Path(path).resolve()), kind=kind, argv=tuple(argv or ()), plan=plan,
               single=kind == "spec" and single,
               # a script: this autotune config only (else one run per surviving config)
               config=config if kind != "spec" else None,
               sanitize=SanitizeOptions(checks=tuple(checks or sorted(CHECKS)), max_findings=max_findings),
               engine=engine, seed=seed if kind != "spec" else None)


def sanitize_file(path: str | Path, *, quick: bool = True, timeout: float = 120.0, engine: str = "tdebug",
                  seed: int | None = None, checks: list[str] | None = None, kind: str = "spec",
                  on_event: Callable[[str, dict], None] | None = None,
                  progress: Callable[[str], None] | None = None, **job_options) -> JobResult:
    """Run a catalogue file's cases (or a script, once per surviving autotune config) under the
    interpreter sanitizer."""
    job = sanitize_job(path, kind, quick=quick, seed=seed, checks=checks, engine=engine, **job_options)
    if kind == "script" and engine == "tdebug":
        return sanitize_script(job, timeout, progress)
    return run_job(job, mode="interpret", timeout=timeout, on_event=on_event)
