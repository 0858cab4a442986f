"""`tdebug bugs check`: is the user's copy of a bug fixed?

The copy is judged by its fixed kernel's reference and inputs (reference_from), so editing the
reference in the copy changes nothing, and by the detectors that caught the bug. Steps, stopping at
the first that fails:

1. the bug's own case (BUG.shape, dtype, layout, config): the symptom must be gone;
2. the reference check on every case (or the quick ones), every autotune config, poisoned outputs
   (a kernel that writes nothing leaves poison; a launcher that never runs a Triton kernel is
   reported by the worker as no-kernel);
3. the autotune lint must be silent;
4. the interpreter sanitizer (and triton-viz's, when the bug lists it) must find nothing;
5. bugs with story inputs: the story's bad inputs must be refused (device_assert or an exception)
   without touching memory outside the tensors;
6. bugs with a user_check: it must accept the kernel's output and reject wrong ones.
(5 and 6 run right after 1: they are where those bugs show.)

A GPU-only bug cannot be confirmed on a CPU: its copy is checked for regressions and reported as
unverified.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..report import render
from ..runtime.job import Job
from ..runtime.results import JobResult
from .detectors import (
    CAUGHT,
    PROBE,
    Options,
    bug_case_kwargs,
    check_job,
    failed,
    first_problem,
    probe_outputs,
    run_captured,
    run_sanitizer,
    story_job,
)
from .workspace import BugEntry

# What the story's bad inputs must not cause. (An assert that stops the launch leaves outputs unwritten: fine.)
MEMORY_KINDS = ("bounds", "uninit", "race")


@dataclass
class Step:
    name: str
    ok: bool
    seconds: float = 0.0
    summary: str = ""
    details: list[str] = field(default_factory=list)


@dataclass
class ExerciseResult:
    status: str  # pass, fail, unverified
    steps: list[Step] = field(default_factory=list)
    reason: str = ""
    skipped: list[str] = field(default_factory=list)  # steps not run after a failure
    seed: int = 0


def _case_details(result: JobResult, limit: int = 3) -> list[str]:
    from ..runtime.results import render_case

    lines: list[str] = []
    if result.fatal:
        lines.append(result.fatal)
    bad = [c for c in result.cases if not c.ok]
    for case in bad[:limit]:
        lines += render_case(case)
    if len(bad) > limit:
        lines.append(f"... and {len(bad) - limit} more failing case(s)")
    return lines


def _finding_details(results: list[JobResult], kinds=None, limit: int = 3) -> list[str]:
    lines: list[str] = []
    seen = set()
    for r in results:
        for c in r.cases:
            for f in c.findings:
                if (kinds is not None and f.check not in kinds) or f.key() in seen:
                    continue
                seen.add(f.key())
                if len(seen) > limit:
                    return lines + ["... more findings: tdebug sanitize on the copy shows them all"]
                lines += [f"[{c.label}] " + render(f).splitlines()[0]] + render(f).splitlines()[1:]
    return lines


def _check_step(name: str, job: dict, opts: Options) -> tuple[Step, JobResult]:
    started = time.perf_counter()
    result = run_captured(job, opts)
    ok = not failed(result)
    total = len(result.cases)
    bad = sum(not c.ok for c in result.cases)
    summary = f"{total - bad}/{total} cases pass" if ok or total else first_problem(result)
    if not ok:
        summary = f"{bad}/{total} cases fail: {first_problem(result)}" if total else first_problem(result)
    step = Step(name, ok, time.perf_counter() - started, summary, [] if ok else _case_details(result))
    return step, result


def _sanitizer_step(copy: Path, bug: BugEntry | None, opts: Options, engine: str) -> Step:
    run = run_sanitizer(copy, bug, Options(opts.quick, opts.seed, opts.timeout, stop_early=False), engine,
                        story=False)
    name = "sanitizer" if engine == "tdebug" else "symbolic sanitizer (triton-viz)"
    if run.status == CAUGHT:
        return Step(name, False, run.seconds, "found: " + ", ".join(run.kinds),
                    _finding_details(run.results, set(run.kinds)))
    return Step(name, True, run.seconds, "no findings" + (f" ({run.note})" if run.note else ""))


def _story_step(copy: Path, bug: BugEntry, opts: Options) -> Step:
    started = time.perf_counter()
    result = run_captured(story_job(copy, bug, opts, "tdebug"), opts)
    seconds = time.perf_counter() - started
    findings = [f for c in result.cases for f in c.findings]
    memory = sorted((f for f in findings if f.check in MEMORY_KINDS), key=lambda f: MEMORY_KINDS.index(f.check))
    refused = [f for f in findings if f.check in ("assert", "exception")]
    if memory:
        return Step("story inputs", False, seconds,
                    f"the story's inputs still reach memory outside the tensors ({memory[0].check})",
                    _finding_details([result], {memory[0].check}))
    if refused:
        return Step("story inputs", True, seconds, f"refused: {refused[0].message.splitlines()[0][:120]}")
    if result.fatal:
        return Step("story inputs", False, seconds, result.fatal)
    return Step("story inputs", False, seconds,
                "the story's inputs were accepted silently: the bad input must be reported "
                "(tl.device_assert in the kernel, or a check in the caller)")


def _user_check_shapes(bug: BugEntry) -> list[tuple[int, ...]]:
    """The bug's shape, and for a matmul (MxNxK) a longer K (larger outputs) and a short one (small outputs)."""
    shapes = [bug.shape] if bug.shape else []
    if bug.shape and len(bug.shape) == 3:
        m, n, k = bug.shape
        shapes += [(64, 64, 4 * k), (64, 64, 16)]
    return shapes


def _user_check_step(copy: Path, bug: BugEntry, opts: Options) -> Step:
    started = time.perf_counter()
    shapes = ",".join("x".join(map(str, s)) for s in _user_check_shapes(bug))
    job = Job(target=str(PROBE), kind="script",
              argv=("user_check", str(copy.resolve()), str(bug.fixes), shapes, bug.dtype, bug.layout,
                    str(opts.the_seed())))
    result = run_captured(job, opts)
    seconds = time.perf_counter() - started
    outputs = probe_outputs(result)
    if not outputs:
        errors = [f.message for c in result.cases for f in c.findings] or [result.fatal or "the probe printed nothing"]
        return Step("user_check", False, seconds, f"could not run user_check: {errors[0].splitlines()[0][:160]}")
    verdict = outputs[-1]
    if verdict.get("ok"):
        return Step("user_check", True, seconds, "accepts the kernel's output and rejects wrong ones")
    problems = verdict.get("problems", [])
    return Step("user_check", False, seconds, problems[0] if problems else "user_check failed", problems[1:5])


def check_exercise(bug: BugEntry, copy: Path, *, quick: bool = False, seed: int | None = None,
                   timeout: float = 120.0, gpu: bool | None = None,
                   on_step: Callable[[Step], None] | None = None) -> ExerciseResult:
    """Run the exercise's steps on the user's copy; stop at the first failure."""
    opts = Options(quick=quick, seed=seed, timeout=timeout, stop_early=False)
    seed = opts.the_seed()
    if gpu is None:
        from ..runtime import device as device_mod

        gpu = device_mod.resolve() is device_mod.Device.CUDA
    plan: list[tuple[str, Callable[[], Step]]] = []
    state: dict[str, JobResult] = {}

    def bug_case() -> Step:
        device = "cuda" if bug.gpu_only else "cpu"
        step, state["case"] = _check_step("the bug's case", check_job(
            copy, seed=seed, reference_from=bug.fixes, device=device, **bug_case_kwargs(bug)), opts)
        return step

    def reference() -> Step:
        step, state["plan"] = _check_step("reference check" + (" (quick)" if quick else ""), check_job(
            copy, seed=seed, quick=quick, reference_from=bug.fixes), opts)
        return step

    def lint() -> Step:
        found = next((r.lint for r in state.values() if r.lint), [])
        if found:
            return Step("autotune lint", False, 0.0, found[0].message.splitlines()[0][:160],
                        [render(f, context=False) for f in found[1:3]])
        return Step("autotune lint", True, 0.0, "nothing to report")

    # The steps that show this bug come first, so an unfixed copy fails fast.
    cpu_only_bug = bug.gpu_only and not gpu
    if bug.shape and not cpu_only_bug:
        plan.append(("the bug's case", bug_case))
    if bug.has_story_inputs and bug.shape:
        plan.append(("story inputs", lambda: _story_step(copy, bug, opts)))
    if bug.has_user_check or bug.expects_clean:
        plan.append(("user_check", lambda: _user_check_step(copy, bug, opts)))
    plan.append(("reference check", reference))
    plan.append(("autotune lint", lint))
    # A GPU-only bug's case (tensors of 2**31 elements) is not run on a CPU: the case matrix only.
    context = None if cpu_only_bug else bug
    plan.append(("sanitizer", lambda: _sanitizer_step(copy, context, opts, "tdebug")))
    if "symbolic" in bug.caught_by:
        from .matrix import unavailable_detectors

        if "symbolic" not in unavailable_detectors():
            plan.append(("symbolic", lambda: _sanitizer_step(copy, context, opts, "symbolic")))

    result = ExerciseResult("pass", seed=seed)
    for index, (_name, run) in enumerate(plan):
        step = run()
        result.steps.append(step)
        if on_step is not None:
            on_step(step)
        if not step.ok:
            result.status = "fail"
            result.skipped = [n for n, _ in plan[index + 1:]]
            return result
    if cpu_only_bug:
        result.status = "unverified"
        result.reason = (f"bug {bug.key} shows only on a GPU ({bug.symptom}); the CPU steps pass, but only "
                         f"`tdebug bugs check {bug.key}` on a GPU machine can confirm the fix")
    return result
