"""The child side of a job: runs a target's cases or script and reports over a pipe, one JSON event a line.

tdebug.child (the child process's entry point) calls it with the collaborators the job asks for (a
sanitizer session, check's lint, guard bands). A crash or hang here never takes tdebug down: the parent
(tdebug.runtime.harness) notices the dead or silent child, records the case in flight, and starts a new
child for the rest.
"""

from __future__ import annotations

import bdb
import os
import runpy
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .. import settings
from ..catalogue.cases import autotune_configs, plan_cases
from ..catalogue.compare import TOLERANCES, compare_outputs
from ..catalogue.poison import poisoned_empty
from ..catalogue.spec import Case, load_target
from ..interpreter.versions import take_faults
from ..report import Finding
from . import reproducers
from .events import Event, EventKind
from .job import Job
from .processes import exit_now


class Channel:
    def __init__(self, fd: int) -> None:
        self._file = os.fdopen(fd, "w", buffering=1)

    def send(self, event: str, **data) -> None:
        """Send one Event (its kind, its data) to the parent."""
        line = Event(EventKind(event), data).line()
        try:
            self._file.write(line)
            self._file.flush()
        except BrokenPipeError:  # the parent is gone (killed, timed out): nobody to report to
            os._exit(1)
        except OSError as e:  # the script closed the pipe's fd (os.closerange over every fd)
            os.write(2, f"tdebug: the script closed tdebug's result pipe ({e.strerror}); its results are lost\n"
                     .encode())
            os._exit(3)

    def close(self) -> None:
        """At the worker's end: closed, not left to the garbage collector (a ResourceWarning, an error under
        PYTHONWARNINGS=error)."""
        try:
            self._file.close()
        except OSError:
            pass


def root_cause(exc: BaseException) -> BaseException:
    seen = 0
    # multiprocessing's pools re-raise a worker's exception with the worker's traceback as text for a cause
    # (RemoteTraceback): the exception itself says what happened in one line, the text is pages long.
    while exc.__cause__ is not None and seen < 10 and type(exc.__cause__).__name__ != "RemoteTraceback":
        exc = exc.__cause__
        seen += 1
    return exc


def quit_debugger(exc: BaseException) -> bool:
    """The person quit the debugger (`q`, or end of input at its prompt): the run ends as asked."""
    return isinstance(root_cause(exc), bdb.BdbQuit)


def exception_finding(exc: BaseException) -> Finding:
    """A finding for an exception raised by a launch: device_assert, a construct the CPU interpreter cannot
    run (check "unsupported": the run could not be done), an internal error of tdebug's own (check
    "internal": never the kernel's exception), or anything else."""
    from ..interpreter.frames import KernelError, library_dirs, raised_in_tdebug
    from ..interpreter.hooks.limits import LaunchTooLarge
    from ..interpreter.patches import DeviceAssertError
    from ..interpreter.unsupported import unsupported_reason

    cause = root_cause(exc)
    reason = unsupported_reason(cause)
    if out_of_memory(cause) and reason is None:
        return memory_finding(cause, raised_in_tdebug(cause))
    if reason is None and raised_in_tdebug(cause):
        return internal_finding(cause)
    if isinstance(cause, LaunchTooLarge):
        return Finding(check="not-checked", message=str(cause), kernel=cause.kernel)
    if isinstance(cause, DeviceAssertError):
        what = "int32 overflow" if cause.kind == "overflow" else "device_assert failed"
        return Finding(check=cause.kind, message=f"{what}: {cause.message} ({cause.failed} of {cause.total} lanes)",
                       file=cause.file, line=cause.line, pids=[cause.pid])
    file, line = "", 0
    libs = library_dirs()
    for fs in reversed(traceback.extract_tb(cause.__traceback__)):
        if not fs.filename.startswith(libs) and not fs.filename.startswith("<"):
            file, line = fs.filename, fs.lineno or 0
            break
    if reason is not None:
        return Finding(check="unsupported", message=reason, file=file, line=line)
    # tdebug's own detection raised as an exception (a spin that never ends, an access it stopped): the kernel's
    # finding on every device, not a script's failure that ended a run early
    extra = {"kernel_error": True} if isinstance(cause, KernelError) else {}
    return Finding(check="exception", message=f"{type(cause).__name__}: {cause}", file=file, line=line, extra=extra)


def out_of_memory(exc: BaseException) -> bool:
    """MemoryError, or torch's allocator refusing (a RuntimeError on the CPU, OutOfMemoryError on a GPU)."""
    return isinstance(exc, MemoryError) or type(exc).__name__ == "OutOfMemoryError" or (
        isinstance(exc, RuntimeError) and "can't allocate memory" in str(exc))


def memory_finding(exc: BaseException, in_tdebug: bool) -> Finding:
    """Out of memory: tdebug's own allocation (its shadows of the launch's tensors) is a run it could not do
    (exit 3); the script's or kernel's is its exception. The worker's cap is TDEBUG_MEMORY_LIMIT (MiB)."""
    cap = "the worker's memory cap (TDEBUG_MEMORY_LIMIT=MiB raises it, 0 lifts it) or the machine's memory"
    if in_tdebug:
        return Finding(check="not-checked", message=f"tdebug ran out of memory for its checks ({cap}): nothing "
                       "after this point was checked")
    file, line = "", 0
    for fs in reversed(traceback.extract_tb(exc.__traceback__)):
        if not fs.filename.startswith("<"):
            file, line = fs.filename, fs.lineno or 0
            break
    return Finding(check="exception", message=f"{type(exc).__name__}: the program ran out of memory ({cap})",
                   file=file, line=line)


def internal_finding(exc: BaseException) -> Finding:
    """tdebug's own code failed: one line naming tdebug, the running Triton and where in tdebug."""
    from ..interpreter.versions import triton_label

    package = Path(__file__).resolve().parent.parent
    where = ""
    for fs in reversed(traceback.extract_tb(exc.__traceback__)):
        path = Path(fs.filename)
        if path.is_relative_to(package):
            where = f" at {path.relative_to(package.parent)}:{fs.lineno}"
            break
    return Finding(check="internal", message=f"internal error in tdebug ({triton_label()}){where}: "
                   f"{type(exc).__name__}: {exc} (a bug in tdebug, not in the kernel)")


def fault_finding() -> Finding | None:
    """An internal finding for the first error tdebug's own code raised inside a patch since the last call,
    even one the user's code caught (a broad `except`, `pytest.raises(Exception)`): what it ran was then not
    checked as it should have been. None when there was none."""
    faults = take_faults()
    return internal_finding(faults[0]) if faults else None


# A case's status for the finding of the exception that ended it (anything else: "error").
EXCEPTION_STATUS = {"assert": "assert", "overflow": "overflow", "internal": "internal", "unsupported": "unsupported",
                    "not-checked": "not-checked"}


def snapshot(inputs) -> list:
    """Copies of the tensor inputs (others as they are), taken before the launch."""
    import torch

    return [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]


def _float64(x):
    import torch

    if isinstance(x, torch.Tensor) and x.is_floating_point():
        return x.to(torch.float64)
    return x


# --- GPU modes (issue 6): guard bands, case markers for compute-sanitizer logs, leaving after a CUDA error ---
CASE_MARKER = "@@tdebug-case "  # printed to stdout before each case when TDEBUG_CASE_MARKERS=1


def _poison_outputs() -> bool:
    """False under compute-sanitizer's initcheck: poisoning would initialise the memory it must see unwritten."""
    return not settings.get("TDEBUG_NO_POISON")


def cuda_context_lost(exc: BaseException) -> bool:
    """A CUDA error (device-side assert, illegal address, launch failure) leaves the process's context unusable."""
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        text = f"{type(e).__name__}: {e}"
        if "CUDA error" in text or "Triton Error [CUDA]" in text or type(e).__name__ == "AcceleratorError":
            return "out of memory" not in text
        e = e.__cause__ or e.__context__
    return False


def _case_marker(index: int) -> None:
    if settings.get("TDEBUG_CASE_MARKERS"):
        print(f"{CASE_MARKER}{index}", flush=True)


def _leave() -> None:
    """Exit at once after a CUDA error: the harness starts a fresh child for the next case."""
    exit_now(0)
# --- end GPU modes ---


def _leave_if_forked(follower, findings: list[dict], code: int) -> None:
    """A process the case's launcher forked came back here (it did not exit): its findings to the case's process,
    then out; it must not go on to the next case."""
    if follower is not None and follower.away:
        follower.exited(findings)
        exit_now(code)


def _followed(follower) -> list[dict]:
    """What the processes the case's launcher forked or spawned found (their files then cleared for the next
    case); a finding that stops a case counts as one (never a clean case)."""
    if follower is None:
        return []
    found = follower.collect()
    follower.clear()
    return found.findings


def run_case(spec, case: Case, sanitizer, guard_factory: Callable[[], Any] | None = None, target: str = "",
             follower=None) -> dict:
    """Run one case: inputs, launch (outputs poisoned), then findings and the comparison with the reference.
    guard_factory: GPU modes pass one that makes a guard-band session (tdebug.sanitize.guard_bands).
    target: the file, for the `tdebug run` command that a failing case's localisation ends with."""
    import torch

    from ..interpreter.hooks.stores import RECORDER
    from ..interpreter.patches import STATE, begin_case

    begin_case(case.config)
    started, cpu_started = time.perf_counter(), time.process_time()
    result: dict = {"case": case.__dict__, "label": case.label(), "findings": [], "comparisons": []}
    guards = None
    if reproducers.WRITER is not None:
        reproducers.WRITER.begin_case(f"{Path(target).name} [{case.label()}]")
    try:
        inputs = spec.make_inputs(case)
        if guard_factory is not None:  # GPU modes: guard bands around every tensor argument and allocation
            guards = guard_factory()
            inputs = guards.wrap_inputs(spec.launch, inputs)
        if sanitizer is not None:
            sanitizer.begin_case()
        before = snapshot(inputs)  # the reference sees the inputs as they were: a kernel may work in place
        with poisoned_empty() if _poison_outputs() else _null(), guards.outputs() if guards else _null():
            out = spec.launch(*inputs)
        if case.device == "cuda":
            torch.cuda.synchronize()
    except BaseException as exc:  # noqa: BLE001 - reported, never swallowed
        if isinstance(exc, KeyboardInterrupt):
            raise
        if quit_debugger(exc):
            result.update(status="quit", time=time.perf_counter() - started)
            return result
        finding = exception_finding(exc)
        result["findings"].append(finding.to_dict())
        _leave_if_forked(follower, result["findings"], 1)
        result["findings"] += _followed(follower)
        result["status"] = EXCEPTION_STATUS.get(finding.check, "error")
        result["error"] = finding.message
        if case.device == "cuda" and cuda_context_lost(exc):
            result["context_lost"] = True
        if sanitizer is not None:
            result["findings"] += [f.to_dict() for f in sanitizer.end_case()]
        if reproducers.WRITER is not None:
            reproducers.WRITER.case_done(result["findings"])
        result["time"], result["cpu_time"] = time.perf_counter() - started, time.process_time() - cpu_started
        return result
    _leave_if_forked(follower, [], 0)
    result["findings"] += _followed(follower)
    if sanitizer is not None:
        result["findings"] += [f.to_dict() for f in sanitizer.end_case()]
    if guards is not None:
        result["findings"] += [f.to_dict() for f in guards.check(out)]
    traced_elsewhere = not getattr(sanitizer, "computes_outputs", True)  # triton-viz runs its own launch path
    if os.environ.get("TRITON_INTERPRET") == "1" and not STATE.launches and not traced_elsewhere:
        result["findings"].append(Finding(check="no-kernel", message="the launcher ran no Triton kernel").to_dict())
    if STATE.launches:
        result["launches"] = [r.__dict__ for r in STATE.launches]
    if not getattr(sanitizer, "computes_outputs", True):
        result["status"] = "fail" if result["findings"] else "pass"  # outputs are not computed: no comparison
        result["time"], result["cpu_time"] = time.perf_counter() - started, time.process_time() - cpu_started
        return result
    ref = spec.reference(*[_float64(x) for x in before])
    tol = spec.tolerances.get(case.dtype) or TOLERANCES.get(case.dtype)
    comps = compare_outputs(out, ref, tol)
    result["comparisons"] = [c.__dict__ for c in comps]
    if RECORDER.launches and not all(c.ok for c in comps):  # under the interpreter: where it went wrong
        from .localise import localise_case

        result["localisation"] = localise_case(out, ref, comps, target, case.__dict__)
    ok = all(c.ok for c in comps) and not result["findings"]
    if reproducers.WRITER is not None:
        reproducers.WRITER.case_done(result["findings"], None if all(c.ok for c in comps) else (out, ref, comps))
    result["status"] = "pass" if ok else "fail"
    result["time"], result["cpu_time"] = time.perf_counter() - started, time.process_time() - cpu_started
    return result


def judged_spec(target, reference_from: str | None):
    """The target's spec, judged by another file's reference and inputs when reference_from is given."""
    spec = target.spec
    if not reference_from:
        return spec
    from dataclasses import replace

    judge = load_target(reference_from).spec
    return replace(spec, reference=judge.reference, make_inputs=judge.make_inputs,
                   tolerances=judge.tolerances or spec.tolerances)


class PlanError(ValueError):
    """The request does not fit the target (a shape of the wrong rank, a config that does not exist)."""


def plan_job_cases(job: Job, spec) -> list[Case]:
    """The cases a job asks for: explicit, a single one (tdebug run), or the planned matrix."""
    n_configs = len(autotune_configs(spec.kernel))
    plan = job.plan
    if job.cases is not None:
        cases = list(job.cases)
    elif job.single:
        shape = spec.normalize_shape(tuple(plan.shapes[0])) if plan.shapes else tuple(spec.default_shape)
        variants = plan.variants or list(spec.variants)[:1]
        case = Case(shape, plan.dtypes[0], plan.layouts[0], plan.seed, plan.device,
                    plan.configs[0] if plan.configs else (0 if autotune_configs(spec.kernel) else None), variants[0])
        cases = [case]
    else:
        cases = plan_cases(spec, **plan.to_dict())
    for c in cases:
        if c.config is not None and not 0 <= c.config < n_configs:
            raise PlanError(f"--config {c.config}: {spec.name} has {n_configs} autotune configs (0..{n_configs - 1})"
                            if n_configs else f"--config: {spec.name} is not autotuned")
        if c.variant not in spec.variants:
            named = [v for v in spec.variants if v]
            raise PlanError(f"--variant {c.variant!r}: {spec.name} has variants " + ", ".join(map(repr, named))
                            if named else f"--variant {c.variant!r}: {spec.name} has no variants (leave --variant out)")
    return cases


def run_spec_job(job: Job, channel: Channel, target, sanitizer, lint: Callable[[Any], list[Finding]] | None = None,
                 guard_factory: Callable[[], Any] | None = None, follower=None) -> None:
    """A catalogue file's planned cases, one result event each; lint (check's autotune lint) runs first when given."""
    spec = judged_spec(target, job.reference_from)
    try:
        cases = plan_job_cases(job, spec)
    except ValueError as e:
        raise PlanError(str(e)) from None
    if job.start == 0:
        lint_findings = [f.to_dict() for f in lint(target)] if lint is not None else []
        channel.send("plan", kernel=spec.name, cases=[c.__dict__ for c in cases],
                     labels=[c.label() for c in cases], lint=lint_findings)
    for index in range(job.start, len(cases)):
        channel.send("start", index=index)
        _case_marker(index)
        result = run_case(spec, cases[index], sanitizer, guard_factory, target=job.target, follower=follower)
        channel.send("result", index=index, **result)
        if result.get("context_lost"):
            _leave()
        if result["status"] == "quit":
            return


class _LaunchEvents(list):
    """STATE.launches while a script runs: tells the parent when the first Triton launch starts, so that
    a crash after it is told as a launch's crash, and one before it is not; and how many autotune configs of
    that launch survive pruning (a sweep may start the other configs' runs then)."""

    def __init__(self, channel: Channel) -> None:
        super().__init__()
        self.channel = channel

    def append(self, record) -> None:
        if not self:
            self.channel.send("launch", kernel=getattr(record, "kernel", ""),
                              survivors=len(getattr(record, "survivors", None) or ()))
        super().append(record)


def _script_exit(exc: SystemExit, result: dict) -> int:
    """The exit code of a script's sys.exit(...); a non-zero one is the script's failure, told with its line."""
    code = exc.code
    if code is None or code == 0:
        return 0
    if isinstance(code, int):
        message = f"the script exited with code {code}"
    else:  # sys.exit("message"): Python prints the message and exits 1
        print(code, file=sys.stderr)
        message, code = f"the script exited: {code}", 1
    where = exception_finding(exc)
    result["findings"].append(Finding(check="exit", message=message, file=where.file, line=where.line).to_dict())
    result["error"] = message
    return code


def script_frame(exc: BaseException, target: str) -> tuple[str, int]:
    """The innermost frame of the script's own file in an exception's traceback (('', 0) if none)."""
    path = str(Path(target).resolve())
    for fs in reversed(traceback.extract_tb(exc.__traceback__)):
        if fs.filename == path or fs.filename == target:
            return fs.filename, fs.lineno or 0
    return "", 0


def autotuned_launches(records) -> list[dict]:
    """The launches of autotuned kernels, once per (kernel, grid, config, surviving configs), with a count:
    a script may launch a kernel thousands of times."""
    seen: dict[tuple, dict] = {}
    for r in records:
        if r.config_index is None:
            continue
        key = (r.kernel, tuple(r.grid), r.config_index, tuple(r.survivors))
        if key in seen:
            seen[key]["count"] += 1
        else:
            seen[key] = {**r.__dict__, "count": 1}
    return list(seen.values())


def _seed_script(seed: int) -> None:
    """The run's seed (printed; --seed gives it) seeds what a script draws its inputs from (torch, numpy, random):
    the same --seed, the same inputs, so a finding on random inputs can be had again."""
    import random

    import numpy as np
    import torch

    torch.manual_seed(seed)
    np.random.seed(seed % 2**32)
    random.seed(seed)


def run_script_job(job: Job, channel: Channel, sanitizer, follower=None, index: int = 0) -> None:
    """Run a script as __main__ (its arguments in job.argv); its exit code, exception and launches reported,
    with those of the processes it forked or spawned (follower: tdebug.runtime.follow.Follower). index: the
    run's case in a sweep (run_script_sweep planned the cases); 0 and planned here otherwise."""
    from ..interpreter.patches import STATE, announce_launches, begin_case

    target = job.target
    if not job.sweep_ranks:
        channel.send("plan", kernel=Path(target).name, cases=[{"script": target}], labels=[Path(target).name],
                     lint=[])
    channel.send("start", index=index)
    sys.argv = [target] + list(job.argv)
    sys.path.insert(0, str(Path(target).parent))
    started = time.perf_counter()
    result: dict = {"label": Path(target).name, "findings": [], "comparisons": []}
    begin_case(job.config, job.config_rank)
    # Launches are seen where tdebug's interpreter patches run them (not under triton-viz's own launch path).
    result["launches_known"] = STATE.installed and getattr(sanitizer, "computes_outputs", True)
    announce_launches(_LaunchEvents(channel))
    if reproducers.WRITER is not None:
        reproducers.WRITER.begin_case(Path(target).name + (f" {' '.join(job.argv)}" if job.argv else ""))
    if sanitizer is not None:
        sanitizer.begin_case()
    exit_code = 0
    if job.seed is not None:
        _seed_script(job.seed)
    try:
        with poisoned_empty() if sanitizer is not None else _null():
            runpy.run_path(target, run_name="__main__")
    except SystemExit as exc:
        exit_code = _script_exit(exc, result)
    except BaseException as exc:  # noqa: BLE001 - reported
        if quit_debugger(exc):
            result["status"] = "quit"
        elif isinstance(exc, KeyboardInterrupt):  # the script's own (tdebug stops this process with SIGTERM)
            where = script_frame(exc, target)
            message = "the script raised KeyboardInterrupt (its own, or signal.raise_signal(SIGINT))"
            result["findings"].append(Finding(check="exception", message=message, file=where[0],
                                              line=where[1]).to_dict())
            result["error"] = message
            exit_code = 1
        else:
            finding = exception_finding(exc)
            result["findings"].append(finding.to_dict())
            result["error"] = finding.message
            exit_code = 1
            if cuda_context_lost(exc):
                result["context_lost"] = True
    if follower is not None and follower.away:  # a forked child left the script's code: its launches are written
        follower.exited(result["findings"])  # and why it left, when it raised
        exit_now(exit_code)
    if sanitizer is not None:
        result["findings"] += [f.to_dict() for f in sanitizer.end_case()]
    followed = follower.collect() if follower is not None else None
    if followed is not None:
        result["findings"] += followed.findings
    if reproducers.WRITER is not None:
        reproducers.WRITER.case_done(result["findings"])
    if "torch._inductor.codecache" in sys.modules and os.environ.get("TRITON_INTERPRET") == "1":
        print("tdebug: torch.compile ran: the code inductor generated (C++ on a CPU) is not checked; the Triton "
              "kernels the script launches itself are", file=sys.stderr)
    internal = fault_finding()
    if internal is not None and not any(f["check"] == "internal" for f in result["findings"]):
        result["findings"].append(internal.to_dict())
        result["error"] = internal.message
    result["exit_code"] = exit_code
    result["time"] = time.perf_counter() - started
    result["launch_count"] = len(STATE.launches) + (followed.launches if followed is not None else 0)
    result["launches"] = autotuned_launches(STATE.launches)
    result["kernel_files"] = {r.kernel: r.file for r in STATE.launches if r.file}
    checks = {f["check"] for f in result["findings"]}
    if result.get("status") == "quit":
        pass
    elif "internal" in checks:
        result["status"] = "internal"
    elif "unsupported" in checks:
        result["status"] = "unsupported"
    elif "not-checked" in checks:
        result["status"] = "not-checked"
    elif checks & {"assert", "overflow"}:
        result["status"] = "assert"
    elif result["findings"] or exit_code:
        result["status"] = "fail" if not result.get("error") else "error"
    else:
        result["status"] = "pass"
    channel.send("result", index=index, **result)
    if result.get("context_lost"):
        _leave()


class _null:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False
