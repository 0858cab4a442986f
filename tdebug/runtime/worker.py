"""The child side of a job: runs a target's cases or script and reports over a pipe, one JSON event a line.

tdebug.child (the child process's entry point) calls it with the collaborators the job asks for (a
sanitizer session, check's lint, guard bands). A crash or hang here never takes tdebug down: the parent
(tdebug.runtime.harness) notices the dead or silent child, records the case in flight, and starts a new
child for the rest.
"""

from __future__ import annotations

import json
import os
import runpy
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..catalogue.cases import autotune_configs, plan_cases
from ..catalogue.compare import TOLERANCES, compare_outputs
from ..catalogue.poison import poisoned_empty
from ..catalogue.spec import Case, load_target
from ..report import Finding


class Channel:
    def __init__(self, fd: int) -> None:
        self._file = os.fdopen(fd, "w", buffering=1)

    def send(self, event: str, **data) -> None:
        try:
            self._file.write(json.dumps({"event": event, **data}, default=str) + "\n")
            self._file.flush()
        except BrokenPipeError:  # the parent is gone (killed, timed out): nobody to report to
            os._exit(1)


def root_cause(exc: BaseException) -> BaseException:
    seen = 0
    while exc.__cause__ is not None and seen < 10:
        exc = exc.__cause__
        seen += 1
    return exc


def exception_finding(exc: BaseException) -> Finding:
    """A finding for an exception raised by a launch: device_assert, bad dtype, or anything else."""
    from ..interpreter.frames import library_dirs
    from ..interpreter.limits import LaunchTooLarge
    from ..interpreter.patches import DeviceAssertError, UnsupportedDtypeError

    cause = root_cause(exc)
    if isinstance(cause, LaunchTooLarge):
        return Finding(check="not-checked", message=str(cause), kernel=cause.kernel)
    if isinstance(cause, DeviceAssertError):
        what = "int32 overflow" if cause.kind == "overflow" else "device_assert failed"
        return Finding(check=cause.kind, message=f"{what}: {cause.message} ({cause.failed} of {cause.total} lanes)",
                       file=cause.file, line=cause.line, pids=[cause.pid])
    if isinstance(cause, UnsupportedDtypeError):
        return Finding(check="dtype", message=str(cause))
    file, line = "", 0
    libs = library_dirs()
    for fs in reversed(traceback.extract_tb(cause.__traceback__)):
        if not fs.filename.startswith(libs) and not fs.filename.startswith("<"):
            file, line = fs.filename, fs.lineno or 0
            break
    return Finding(check="exception", message=f"{type(cause).__name__}: {cause}", file=file, line=line)


def _float64(x):
    import torch

    if isinstance(x, torch.Tensor) and x.is_floating_point():
        return x.to(torch.float64)
    return x


# --- GPU modes (issue 6): guard bands, case markers for compute-sanitizer logs, leaving after a CUDA error ---
CASE_MARKER = "@@tdebug-case "  # printed to stdout before each case when TDEBUG_CASE_MARKERS=1


def _poison_outputs() -> bool:
    """False under compute-sanitizer's initcheck: poisoning would initialise the memory it must see unwritten."""
    return os.environ.get("TDEBUG_NO_POISON") != "1"


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
    if os.environ.get("TDEBUG_CASE_MARKERS") == "1":
        print(f"{CASE_MARKER}{index}", flush=True)


def _leave() -> None:
    """Exit at once after a CUDA error: the harness starts a fresh child for the next case."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(0)
# --- end GPU modes ---


def run_case(spec, case: Case, sanitizer, guard_factory: Callable[[], Any] | None = None) -> dict:
    """Run one case: inputs, launch (outputs poisoned), then findings and the comparison with the reference.
    guard_factory: GPU modes pass one that makes a guard-band session (tdebug.sanitize.guard_bands)."""
    import torch

    from ..interpreter.patches import STATE

    STATE.config_index = case.config
    STATE.launches.clear()
    started = time.perf_counter()
    result: dict = {"case": case.__dict__, "label": case.label(), "findings": [], "comparisons": []}
    guards = None
    try:
        inputs = spec.make_inputs(case)
        if guard_factory is not None:  # GPU modes: guard bands around every tensor argument and allocation
            guards = guard_factory()
            inputs = guards.wrap_inputs(spec.launch, inputs)
        if sanitizer is not None:
            sanitizer.begin_case()
        with poisoned_empty() if _poison_outputs() else _null(), guards.outputs() if guards else _null():
            out = spec.launch(*inputs)
        if case.device == "cuda":
            torch.cuda.synchronize()
    except BaseException as exc:  # noqa: BLE001 - reported, never swallowed
        if isinstance(exc, KeyboardInterrupt):
            raise
        finding = exception_finding(exc)
        result["findings"].append(finding.to_dict())
        result["status"] = finding.check if finding.check in ("assert", "overflow") else "error"
        result["error"] = finding.message
        if case.device == "cuda" and cuda_context_lost(exc):
            result["context_lost"] = True
        if sanitizer is not None:
            result["findings"] += [f.to_dict() for f in sanitizer.end_case()]
        result["time"] = time.perf_counter() - started
        return result
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
        result["time"] = time.perf_counter() - started
        return result
    ref = spec.reference(*[_float64(x) for x in inputs])
    tol = spec.tolerances.get(case.dtype) or TOLERANCES.get(case.dtype)
    comps = compare_outputs(out, ref, tol)
    result["comparisons"] = [c.__dict__ for c in comps]
    ok = all(c.ok for c in comps) and not result["findings"]
    result["status"] = "pass" if ok else "fail"
    result["time"] = time.perf_counter() - started
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


def plan_job_cases(job: dict, spec) -> list[Case]:
    """The cases a job asks for: explicit, a single one (tdebug run), or the planned matrix."""
    n_configs = len(autotune_configs(spec.kernel))
    if job.get("cases") is not None:
        cases = [Case(**{**c, "shape": tuple(c["shape"])}) for c in job["cases"]]
    elif job.get("single"):
        plan = job["plan"]
        shape = spec.normalize_shape(tuple(plan["shapes"][0])) if plan.get("shapes") else tuple(spec.default_shape)
        configs = plan.get("configs")
        variants = plan.get("variants") or list(spec.variants)[:1]
        case = Case(shape, plan["dtypes"][0], plan["layouts"][0], plan["seed"], plan["device"],
                    configs[0] if configs else (0 if autotune_configs(spec.kernel) else None), variants[0])
        cases = [case]
    else:
        cases = plan_cases(spec, **job["plan"])
    for c in cases:
        if c.config is not None and not 0 <= c.config < n_configs:
            raise PlanError(f"--config {c.config}: {spec.name} has {n_configs} autotune configs (0..{n_configs - 1})"
                            if n_configs else f"--config: {spec.name} is not autotuned")
        if c.variant not in spec.variants:
            raise PlanError(f"--variant {c.variant!r}: {spec.name} has variants "
                            + ", ".join(repr(v) for v in spec.variants))
    return cases


def run_spec_job(job: dict, channel: Channel, target, sanitizer, lint: Callable[[Any], list[Finding]] | None = None,
                 guard_factory: Callable[[], Any] | None = None) -> None:
    """A catalogue file's planned cases, one result event each; lint (check's autotune lint) runs first when given."""
    spec = judged_spec(target, job.get("reference_from"))
    try:
        cases = plan_job_cases(job, spec)
    except ValueError as e:
        raise PlanError(str(e)) from None
    if job.get("start", 0) == 0:
        lint_findings = [f.to_dict() for f in lint(target)] if lint is not None else []
        channel.send("plan", kernel=spec.name, cases=[c.__dict__ for c in cases],
                     labels=[c.label() for c in cases], lint=lint_findings)
    for index in range(job.get("start", 0), len(cases)):
        channel.send("start", index=index)
        _case_marker(index)
        result = run_case(spec, cases[index], sanitizer, guard_factory)
        channel.send("result", index=index, **result)
        if result.get("context_lost"):
            _leave()


def run_script_job(job: dict, channel: Channel, sanitizer) -> None:
    target = job["target"]
    channel.send("plan", kernel=Path(target).name, cases=[{"script": target}], labels=[Path(target).name], lint=[])
    channel.send("start", index=0)
    sys.argv = [target] + list(job.get("argv", []))
    sys.path.insert(0, str(Path(target).parent))
    started = time.perf_counter()
    result: dict = {"label": Path(target).name, "findings": [], "comparisons": []}
    if sanitizer is not None:
        sanitizer.begin_case()
    exit_code = 0
    try:
        with poisoned_empty() if sanitizer is not None else _null():
            runpy.run_path(target, run_name="__main__")
    except SystemExit as exc:
        exit_code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException as exc:  # noqa: BLE001 - reported
        if isinstance(exc, KeyboardInterrupt):
            raise
        finding = exception_finding(exc)
        result["findings"].append(finding.to_dict())
        result["error"] = finding.message
        exit_code = 1
        if cuda_context_lost(exc):
            result["context_lost"] = True
    if sanitizer is not None:
        result["findings"] += [f.to_dict() for f in sanitizer.end_case()]
    result["exit_code"] = exit_code
    result["time"] = time.perf_counter() - started
    checks = {f["check"] for f in result["findings"]}
    if checks & {"assert", "overflow"}:
        result["status"] = "assert"
    elif result["findings"] or exit_code:
        result["status"] = "fail" if not result.get("error") else "error"
    else:
        result["status"] = "pass"
    channel.send("result", index=0, **result)
    if result.get("context_lost"):
        _leave()


class _null:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False
