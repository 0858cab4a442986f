"""Detectors as functions of a catalogue file: each runs the file (in worker processes) and says whether
it caught something. Shared by the detection matrix and `tdebug bugs check`.

With a bug's context (a BugEntry), a detector first runs the bug's own case (BUG.shape, dtype,
layout and config), then the case matrix; a bug with story_inputs also gets a story launch: the
story's inputs, which a correct kernel refuses (a device_assert, an exception) rather than misreads.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..runtime.harness import run_job
from ..runtime.job import Job, Plan, fresh_seed
from ..runtime.results import JobResult
from .workspace import SANITIZE_KINDS, BugEntry

CAUGHT, MISSED, ERROR = "caught", "missed", "error"
NOT_FINDINGS = frozenset({"exception", "no-kernel", "dtype", "crash", "hang"})  # a run's failure, not a detection
PROBE = Path(__file__).with_name("probe.py")
PROBE_MARK = "TDEBUG_PROBE "


@dataclass
class Options:
    quick: bool = True
    seed: int | None = 0
    timeout: float = 120.0
    stop_early: bool = True  # skip the case matrix once the bug's own case was caught

    def the_seed(self) -> int:
        if self.seed is None:
            self.seed = fresh_seed()
        return self.seed


@dataclass
class Run:
    """What one detector reported for one file."""

    detector: str
    status: str  # caught, missed, error
    seconds: float = 0.0
    kinds: tuple[str, ...] = ()
    note: str = ""
    results: list[JobResult] = field(default_factory=list)
    lint: list = field(default_factory=list)  # the check's lint findings


# -- jobs -----------------------------------------------------------------------------------------------

def check_job(path: Path, *, seed: int, quick: bool = False, shapes=None, dtypes=None, layouts=None,
              configs=None, reference_from: Path | None = None, device: str = "cpu") -> Job:
    """The worker job of tdebug check (check.against_reference.check_file), with a config list."""
    return Job(
        target=str(Path(path).resolve()), kind="spec", lint=True,
        plan=Plan(quick=quick, device=device, seed=seed, dtypes=dtypes, layouts=layouts, shapes=shapes or None,
                  configs=configs),
        reference_from=str(Path(reference_from).resolve()) if reference_from else None,
        guard=device == "cuda", pin_autotune=device == "cuda")


def bug_case_kwargs(bug: BugEntry) -> dict:
    return {"shapes": [bug.shape], "dtypes": [bug.dtype], "layouts": [bug.layout],
            "configs": [bug.config] if bug.config is not None else None}


def run_captured(job: Job, opts: Options) -> JobResult:
    """Run a worker job, keeping the children's output (crashing kernels print heap-corruption noise)."""
    return run_job(job, mode="gpu" if job.device == "cuda" else "interpret", timeout=opts.timeout, capture=True)


def failed(result: JobResult) -> bool:
    return bool(result.fatal) or any(not c.ok for c in result.cases)


def first_problem(result: JobResult) -> str:
    if result.fatal:
        return result.fatal
    for c in result.cases:
        if not c.ok:
            detail = c.error.splitlines()[0][:120] if c.error else ""
            if not detail:
                for comp in c.comparisons:
                    if not comp.get("ok", True):
                        detail = (f"{comp.get('unwritten', 0)} unwritten, {comp.get('mismatches', 0)} of "
                                  f"{comp.get('numel', 0)} outside tolerance, max abs err {comp.get('max_abs', 0):.3g}")
                        break
            if not detail and c.findings:
                detail = f"{c.findings[0].check}: {c.findings[0].message.splitlines()[0][:100]}"
            return f"{c.label}: {c.status}" + (f" ({detail})" if detail else "")
    return ""


def finding_kinds(result: JobResult, allowed=None) -> tuple[str, ...]:
    kinds = set()
    for c in result.cases:
        for f in c.findings:
            if f.check in NOT_FINDINGS:
                continue
            if allowed is None or f.check in allowed:
                kinds.add(f.check)
    return tuple(sorted(kinds))


def run_errors(result: JobResult) -> str:
    """Why a run itself broke (not a finding): its first exception, crash or hang."""
    if result.fatal:
        return result.fatal
    for c in result.cases:
        for f in c.findings:
            if f.check in ("exception", "crash", "hang"):
                return f"{c.label}: {f.message.splitlines()[0][:120]}"
    return ""


# -- detectors ------------------------------------------------------------------------------------------

def run_check(path: Path, bug: BugEntry | None, opts: Options, reference_from: Path | None = None) -> Run:
    """The reference check: poisoned outputs, adversarial shapes and layouts, every autotune config.
    caught: some case failed (wrong values, unwritten elements, an exception, a crash or hang)."""
    started = time.perf_counter()
    results: list[JobResult] = []
    seed = opts.the_seed()
    if bug is not None and bug.shape:
        job = check_job(path, seed=seed, reference_from=reference_from, **bug_case_kwargs(bug))
        results.append(run_captured(job, opts))
    if not results or not (opts.stop_early and failed(results[-1])):
        results.append(run_captured(check_job(path, seed=seed, quick=opts.quick, reference_from=reference_from), opts))
    bad = [r for r in results if failed(r)]
    kinds = tuple(sorted({c.status for r in bad for c in r.cases if not c.ok} | ({"fatal"} if any(
        r.fatal for r in bad) else set())))
    lint = next((r.lint for r in results if r.lint), [])
    return Run("check", CAUGHT if bad else MISSED, time.perf_counter() - started, kinds,
               first_problem(bad[0]) if bad else "", results, lint)


def lint_of(check: Run) -> Run:
    """The autotune lint, as reported by the check's run."""
    lint = check.lint
    note = lint[0].message[:200] if lint else ""
    return Run("lint", CAUGHT if lint else MISSED, 0.0, ("lint",) if lint else (), note, [], lint)


def story_job(target: Path, bug: BugEntry, opts: Options, engine: str) -> Job:
    """Launch target on the bug's story inputs, under a sanitizer engine."""
    from ..sanitize import sanitize_job

    argv = ["story", str(Path(target).resolve()), str(bug.path), bug.shape_text(), bug.dtype, bug.layout,
            str(opts.the_seed())]
    return sanitize_job(PROBE, "script", argv=argv, engine=engine, seed=opts.the_seed())


def probe_outputs(result: JobResult) -> list[dict]:
    """The TDEBUG_PROBE lines a probe printed."""
    out = []
    for log in result.logs:
        for line in (log.stdout or "").splitlines():
            if line.startswith(PROBE_MARK):
                try:
                    out.append(json.loads(line[len(PROBE_MARK):]))
                except ValueError:
                    pass
    return out


def run_sanitizer(path: Path, bug: BugEntry | None, opts: Options, engine: str = "tdebug", story: bool = True) -> Run:
    """tdebug's interpreter sanitizer (engine tdebug) or triton-viz's symbolic one (engine symbolic).
    caught: a finding of a sanitizer kind (bounds, uninit, race, unwritten, assert, overflow, nan for tdebug;
    any detection for symbolic). A bug's story launch counts too."""
    from ..sanitize import sanitize_job

    name = "sanitize" if engine == "tdebug" else "symbolic"
    allowed = SANITIZE_KINDS if engine == "tdebug" else None
    started = time.perf_counter()
    seed = opts.the_seed()
    results: list[JobResult] = []
    if bug is not None and bug.shape:
        job = sanitize_job(path, "spec", single=True, shape=bug.shape, dtype=bug.dtype, layout=bug.layout,
                           config=bug.config, engine=engine, seed=seed)
        results.append(run_captured(job, opts))
    if not results or not (opts.stop_early and finding_kinds(results[-1], allowed)):
        results.append(run_captured(sanitize_job(path, "spec", quick=opts.quick, engine=engine, seed=seed), opts))
    if story and bug is not None and bug.has_story_inputs and bug.shape:
        results.append(run_captured(story_job(path, bug, opts, engine), opts))
    kinds = tuple(sorted({k for r in results for k in finding_kinds(r, allowed)}))
    seconds = time.perf_counter() - started
    if kinds:
        return Run(name, CAUGHT, seconds, kinds, "", results)
    broken = next((e for e in map(run_errors, results) if e), "")
    return Run(name, MISSED, seconds, (), f"the run itself failed: {broken}" if broken else "", results)
