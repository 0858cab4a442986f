"""The child process's entry point (`python -m tdebug.child JOB.json`): wires the runtime, the patched
interpreter, the sanitizers and check's lint together for one job, as cli/ does in the parent.

It is started by tdebug.runtime.harness with the mode's environment (TRITON_INTERPRET=1 or TRITON_DEBUG=1)
already set, so Triton reads it at import; results go back over the pipe whose fd is in TDEBUG_RESULT_FD.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from .catalogue.spec import load_target
from .runtime.worker import Channel, PlanError, exception_finding, run_script_job, run_spec_job


def _sanitizer(job: dict):
    """The sanitizer session a job asks for (installed), or None."""
    if job.get("sanitize") is None:
        return None
    if job.get("engine") == "symbolic":
        from .sanitize.symbolic import SymbolicSession as Session
    else:
        from .interpreter import viz_decorators
        from .sanitize.session import SanitizerSession as Session

        viz_decorators.install()  # a script's own @triton_viz.trace would hide its kernels from us
    session = Session(**job["sanitize"])
    session.install()
    return session


def _end_with_parent() -> None:
    """On Linux, have this process killed when tdebug dies, even by SIGKILL (which tdebug cannot clean up
    after): no child is left behind at 100% CPU. TDEBUG_PARENT_PID is set when tdebug is the direct parent."""
    parent = os.environ.get("TDEBUG_PARENT_PID")
    if not parent or not sys.platform.startswith("linux"):
        return
    import ctypes
    import signal

    try:
        ctypes.CDLL(None).prctl(1, int(signal.SIGKILL))  # 1: PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != int(parent):  # tdebug died before the prctl
        os._exit(1)


def main(argv: list[str]) -> int:
    _end_with_parent()
    job = json.loads(Path(argv[0]).read_text())
    channel = Channel(int(os.environ["TDEBUG_RESULT_FD"]))
    try:
        return _run(job, channel)
    except Exception as exc:  # noqa: BLE001 - whatever escaped the cases is tdebug's failure: one line, exit 3
        finding = exception_finding(exc)
        if finding.check != "internal":
            where = f" ({finding.file}:{finding.line})" if finding.file else ""
            finding.message = f"tdebug could not finish the job: {finding.message}{where}"
        channel.send("fatal", message=finding.message, usage=False)
        return 3


def _run(job: dict, channel: Channel) -> int:
    if os.environ.get("TRITON_INTERPRET") == "1":
        from .interpreter import patches as interpret

        interpret.install(exact_values=job.get("engine") != "symbolic")
        if job.get("engine") != "symbolic":  # triton-viz's symbolic launches compute no stores to record
            from .interpreter import stores

            stores.install()  # which program stored each element: a failing case's localisation
    elif job.get("pin_autotune"):  # GPU modes: run the case's config instead of benchmarking them all
        from .interpreter.patches import pin_autotune

        pin_autotune()
    sanitizer = _sanitizer(job)
    if job.get("limits") and os.environ.get("TRITON_INTERPRET") == "1":
        from .interpreter import limits

        limits.install(limits.Limits(**job["limits"]))  # after the sanitizer: checked before its shadows
    if job.get("repro") and os.environ.get("TRITON_INTERPRET") == "1":
        from .runtime.repro import ReproWriter

        # after the sanitizer: its launch wrapper counts a launch's findings before this one looks
        ReproWriter(job["repro"], label=Path(job["target"]).name).install(
            sanitizer if hasattr(sanitizer, "case_findings") else None)
    channel.send("ready")  # tdebug, torch and Triton are imported: from here on the job's --timeout applies
    debugger = None
    try:
        target = None
        if job["kind"] == "spec":
            try:
                target = load_target(job["target"])
            except Exception as exc:  # noqa: BLE001 - a broken user file is reported, not a traceback
                finding = exception_finding(exc)
                where = f" ({finding.file}:{finding.line})" if finding.file else ""
                channel.send("fatal", message=f"cannot import {job['target']}: {finding.message}{where}", usage=False)
                return 1
        if job.get("breaks") is not None:
            from .interpreter import breakpoints

            points = breakpoints.resolve_breaks(job["target"], job["breaks"])
            pid = tuple(job["pid"]) if job.get("pid") is not None else None
            debugger = breakpoints.start(points, pid)
        if job["kind"] == "spec":
            lint = guard_factory = None
            if job.get("lint"):
                from .check.lint import lint_kernel as lint
            if job.get("guard"):
                from .sanitize.guard_bands import GuardSession as guard_factory
            try:
                run_spec_job(job, channel, target, sanitizer, lint=lint, guard_factory=guard_factory)
            except PlanError as e:
                channel.send("fatal", message=str(e), usage=True)
                return 2
        else:
            run_script_job(job, channel, sanitizer)
    finally:
        if debugger is not None:
            from .interpreter import breakpoints

            breakpoints.stop(debugger)
    channel.send("done")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
