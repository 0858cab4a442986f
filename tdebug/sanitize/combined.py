"""`tdebug sanitize` on a GPU: compute-sanitizer's tools and tdebug's interpreter pass over the same job, run at
once, merged into one report.

compute-sanitizer sees what the compiled kernel really does on the GPU (memcheck: out-of-bounds accesses,
initcheck: reads of memory nothing wrote). It cannot see races between programs on global memory (racecheck
covers shared memory only) or output elements no program wrote. tdebug's interpreter pass runs the same script
(or catalogue cases) with TRITON_INTERPRET=1 on the same machine, the script's tensors staying on the GPU and
each launch interpreted on host copies, under every detector the interpreter sanitizer has (races, unwritten
outputs, bounds against the elements a view really spans, uninitialised reads, live device_assert, int32
overflow, and whatever detectors it gains). Each finding keeps the engine that made it; a finding both engines
make (same class, same source line) is shown once, naming both.

The interpreter pass is bounded (interpreter.hooks.limits): a launch with more programs or more bytes of tensor
arguments than the caps stops it with a note. What it did not check is said, never reported clean.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from ..interpreter.hooks.limits import Limits
from ..report import Finding
from ..runtime.harness import run_job
from ..runtime.job import Job, JobLimits
from ..runtime.results import CaseResult, JobResult
from . import compute_sanitizer as cs_mod
from .sweep import sanitize_script

TDEBUG = "tdebug"
GPU_RUN = "the run on the GPU"  # what the GPU pass itself reports: the script's exception, a crash, a hang
# Findings that say a run could not go on (not detections): from the interpreter pass they become notes.
RUN_FAILURES = frozenset({"exception", "crash", "hang", "dtype", "no-kernel", "not-checked", "internal",
                          "unsupported"})
# An interpreter pass that stopped so (tdebug's own failure, a construct it cannot run): the case was not fully
# checked, whatever the GPU found (exit 3, never "1 internal" counted as a finding).
COULD_NOT_CHECK = ("internal", "unsupported")
# What the interpreter pass covers that no GPU tool does: said in the note when it could not finish.
ONLY_TDEBUG = "races between programs, unwritten outputs, device_assert, divergence"
DEFAULT_LIMITS = Limits(max_programs=16384, max_bytes=256 << 20)


@dataclass
class EngineRun:
    engine: str  # "memcheck", "initcheck", ... or "tdebug"
    result: JobResult
    seconds: float


@dataclass
class Combined:
    result: JobResult
    runs: list[EngineRun] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what was not checked, and why (never "clean")
    coverage: list[str] = field(default_factory=list)  # which engine ran which cases, by design
    seconds: float = 0.0


def interpreter_job(job: Job, limits: Limits, divergence: bool = True) -> Job:
    """The interpreter pass's job: the sanitize job as the CPU path runs it, with the size caps, and (on the
    GPU) each launch on CUDA tensors also run compiled from the same snapshot: the divergence check."""
    return job.but(limits=JobLimits(limits.max_programs, limits.max_bytes), divergence=divergence)


def run_interpreter(job: Job, limits: Limits, timeout: float) -> EngineRun:
    """The interpreter pass; a script once per autotune config surviving its kernels' pruning, as on the CPU."""
    started = time.perf_counter()
    task = interpreter_job(job, limits)
    if job.kind == "script" and job.engine == "tdebug":
        result = sanitize_script(task, timeout, capture=True)
    else:
        result = run_job(task, mode="interpret", timeout=timeout, capture=True)
    return EngineRun(TDEBUG, result, time.perf_counter() - started)


def sanitize_combined(job: Job, tools: Sequence[str], *, interpreter: bool = True, gpu_tools: bool = True,
                      keep_log: str | None = None, timeout: float = 120.0,
                      limits: Limits = DEFAULT_LIMITS) -> Combined:
    """Run the chosen engines over one sanitize job (as tdebug.sanitize.sanitize_job builds it), all at once,
    and merge their findings per case."""
    started = time.perf_counter()
    cs = cs_mod.find_compute_sanitizer() if gpu_tools else None
    if gpu_tools and cs is None:
        raise FileNotFoundError("compute-sanitizer was not found (install the CUDA toolkit or put it on PATH)")
    names = cs_mod.expand_tools(tools) if gpu_tools else []
    with ThreadPoolExecutor(max_workers=1) as pool:
        interp_future = pool.submit(run_interpreter, job, limits, timeout) if interpreter else None
        tool_runs = cs_mod.run_tools(job, names, cs, timeout) if names else []
        interp = interp_future.result() if interp_future is not None else None
    if keep_log:
        cs_mod.write_logs(keep_log, tool_runs)
    runs = [EngineRun(r.tool, r.result, r.seconds) for r in tool_runs] + ([interp] if interp else [])
    gpu = tag_gpu_run(cs_mod.combine(tool_runs)) if tool_runs else None
    strict = "divergence" in ((job.sanitize.checks if job.sanitize is not None else ()) or ())
    result, notes, coverage = merge_engines(gpu, interp.result if interp else None, strict_divergence=strict)
    return Combined(result, runs, notes, coverage, time.perf_counter() - started)


# ---- merging ----

def tag_gpu_run(result: JobResult) -> JobResult:
    """The GPU pass's own findings (the script's exception, a crash) say so: their source is the worker's default."""
    for case in result.cases:
        case.findings = [f if f.source == cs_mod.SOURCE or "engines" in f.extra
                         else Finding(**{**f.__dict__, "extra": {**f.extra, "engines": [GPU_RUN]}})
                         for f in case.findings]
    return result


def _same_place(a: Finding, b: Finding) -> bool:
    if a.check != b.check or a.line != b.line or not a.file or not b.file:
        return False
    if os.path.realpath(a.file) == os.path.realpath(b.file):
        return True
    return os.path.basename(a.file) == os.path.basename(b.file)


def engine_names(f: Finding) -> list[str]:
    """Which engines made a finding, as a person reads them: 'compute-sanitizer memcheck', 'tdebug interpreter'."""
    names = f.extra.get("engines")
    if names:
        return list(names)
    if f.source == cs_mod.SOURCE:
        return [f"{cs_mod.SOURCE} {f.extra.get('tool', '')}".strip()]
    if f.source == TDEBUG:
        return ["tdebug interpreter"]
    return [f.source]


def _both(mine: Finding, theirs: Finding) -> Finding:
    """tdebug's finding (it names the tensor and elements), noting the GPU tool that saw the same."""
    extra = {**mine.extra, "engines": engine_names(mine) + engine_names(theirs), "also": theirs.message}
    return Finding(**{**mine.__dict__, "extra": extra})


def _explained(f: Finding, gpu: CaseResult | None) -> bool:
    """An interpreter-pass exception that is no stop of the pass: tdebug's detection raised in the kernel (a spin
    that never ends: on the GPU the run hangs), or the script's own exception where the GPU run raised it too
    (the script ends there on both devices, so nothing after it goes unchecked)."""
    if f.check != "exception":
        return False
    return bool(f.extra.get("kernel_error")) or (gpu is not None and any(
        g.check == "exception" and _same_place(f, g) for g in gpu.findings))


def _interpreter_notes(case: CaseResult | None, label: str, gpu: CaseResult | None = None) -> list[str]:
    if case is None:
        return [f"{label}: tdebug's interpreter pass did not reach this case ({ONLY_TDEBUG} NOT checked)"]
    stops = [f for f in case.findings if f.check in RUN_FAILURES and not _explained(f, gpu)]
    if case.status == "hang":
        return [f"{label}: tdebug's interpreter pass ran past --timeout and was stopped; {ONLY_TDEBUG} NOT checked "
                "(raise --timeout, or give the script smaller sizes)"]
    if not stops:
        return []
    why = stops[0].message.splitlines()[0]
    if stops[0].check == "not-checked":
        return [f"{label}: {why}; {ONLY_TDEBUG} checked only before it (raise the cap, or give the script "
                "smaller sizes)"]
    return [f"{label}: tdebug's interpreter pass stopped ({stops[0].check}: {why}); {ONLY_TDEBUG} checked only "
            "up to there"]


def merge_case(gpu: CaseResult | None, interp: CaseResult | None, label: str, index: int,
               interpreter_ran: bool) -> tuple[CaseResult, list[str]]:
    """One case from both engines: the GPU run's status and comparisons, the interpreter's detections added,
    a finding both made shown once; notes for what the interpreter pass did not check."""
    notes = _interpreter_notes(interp, label, gpu) if interpreter_ran else []
    if interp is None:
        assert gpu is not None
        return gpu, notes
    incomplete = bool(notes)
    detections = [f for f in interp.findings if (f.check not in RUN_FAILURES or _explained(f, gpu))
                  and not (incomplete and f.check == "unwritten")]  # later launches might have written them
    if incomplete and any(f.check == "unwritten" for f in interp.findings):
        notes.append(f"{label}: unwritten outputs not judged: the interpreter pass stopped before the script's end")
    base = gpu or CaseResult(index=index, label=label, status="pass", case=interp.case, launches=interp.launches)
    theirs = list(base.findings)
    merged: list[Finding] = []
    for f in detections:
        twin = next((g for g in theirs if (g.source == cs_mod.SOURCE or f.check == "exception")
                     and _same_place(f, g)), None)
        if twin is not None:
            theirs.remove(twin)
            merged.append(_both(f, twin))
        else:
            merged.append(f)
    findings = theirs + merged
    status = base.status if (base.status != "pass" or not detections) else "fail"
    if gpu is None and interp.status not in ("pass", "error", "hang", "crash"):
        status = interp.status
    stopped = next((f for f in interp.findings if f.check in COULD_NOT_CHECK), None)
    if stopped is not None and base.status not in COULD_NOT_CHECK:
        status = stopped.check
        findings.append(stopped)
    case = CaseResult(index=index, label=label, status=status, findings=findings, comparisons=base.comparisons,
                      time=max(base.time, interp.time), error=base.error, launches=base.launches or interp.launches,
                      case=base.case or interp.case, exit_code=base.exit_code, stderr=base.stderr)
    return case, notes


def resolve_kernel_files(gpu: JobResult, interp: JobResult) -> None:
    """compute-sanitizer's line info names a kernel's file by its base name only; the interpreter pass launched
    the same kernels and knows their paths (a kernel in an imported package, a script run through a wrapper).
    With the path known, initcheck's reads of a kernel's own TMA descriptor are dropped as where it was found."""
    files = {kernel: path for case in interp.cases for kernel, path in case.kernel_files.items()}
    for case in gpu.cases:
        found = case.findings
        for f in found:
            path = files.get(f.kernel)
            if f.source == cs_mod.SOURCE and f.file and not os.path.isabs(f.file) and path \
                    and os.path.basename(path) == f.file:
                f.file = path
        case.findings = [f for f in found if not cs_mod.descriptor_scratch_finding(f)]
        if found and not case.findings and case.status == "fail" and all(c.get("ok", True) for c in case.comparisons):
            case.status = "pass"


def unchecked_notes(interp: JobResult, strict: bool = False, soft: list[str] | None = None) -> list[str]:
    """Take out of the interpreter pass's cases what it says it could not check (a kernel the divergence check
    could not run compiled): notes, never findings of the kernel; a case left with no finding passes. A launch
    whose divergence could not be compared is a plain note (into `soft`: the memory checks' verdict stands),
    unless `strict` (`--check divergence` asked for it by name): then it is not checked."""
    notes: list[str] = []
    for case in interp.cases:
        said = [f for f in case.findings if f.extra.get("unchecked")]
        if not said:
            continue
        for f in said:
            lenient = soft is not None and not strict and f.extra.get("unchecked") == "divergence"
            (soft if lenient else notes).append(f"{case.label}: {f.message}")
        case.findings = [f for f in case.findings if not f.extra.get("unchecked")]
        if not case.findings and case.status == "fail":
            case.status = "pass"
    return notes


def merge_engines(gpu: JobResult | None, interp: JobResult | None,
                  strict_divergence: bool = False) -> tuple[JobResult, list[str], list[str]]:
    """Both engines' results, case by case, matched by label; the notes on what the interpreter pass did not
    check; and coverage lines: on a GPU a catalogue file plans its GPU dtypes (bf16 too), the interpreter
    its CPU ones, so a case only one of them plans is that engine's alone (and the launches whose divergence
    could not be compared, unless `strict_divergence`: then they are notes of what was not checked)."""
    coverage: list[str] = []
    notes: list[str] = unchecked_notes(interp, strict_divergence, coverage) if interp is not None else []
    if interp is not None and interp.fatal and gpu is not None and not gpu.fatal:
        notes.append(f"tdebug's interpreter pass could not start ({interp.fatal}); {ONLY_TDEBUG} NOT checked")
        interp = None
    if gpu is None:
        assert interp is not None
        return interp, notes, coverage
    if interp is None or gpu.fatal:
        return gpu, notes, coverage
    resolve_kernel_files(gpu, interp)
    gpu_cases = {c.label: c for c in gpu.cases}
    interp_cases = {c.label: c for c in interp.cases}
    labels = list(gpu.labels) + [lb for lb in interp.labels if lb not in gpu.labels]
    out = JobResult(kernel=gpu.kernel, labels=labels, lint=gpu.lint, logs=gpu.logs + interp.logs)
    for index, label in enumerate(labels):
        g, i = gpu_cases.get(label), interp_cases.get(label)
        if g is None and i is None:
            continue
        planned = label in interp.labels
        case, case_notes = merge_case(g, i, label, index, interpreter_ran=planned)
        out.cases.append(case)
        notes += case_notes
    gpu_only = [lb for lb in gpu.labels if lb not in interp.labels]
    interp_only = [lb for lb in interp.labels if lb not in gpu.labels]
    if gpu_only:
        coverage.append(f"{len(gpu_only)} case(s) compute-sanitizer only (the interpreter does not plan them, "
                        f"e.g. bf16, which it computes wrongly): {', '.join(gpu_only[:4])}"
                        + (" ..." if len(gpu_only) > 4 else ""))
    if interp_only:
        coverage.append(f"{len(interp_only)} case(s) tdebug interpreter only (not in the GPU plan): "
                        f"{', '.join(interp_only[:4])}" + (" ..." if len(interp_only) > 4 else ""))
    return out, notes, coverage
