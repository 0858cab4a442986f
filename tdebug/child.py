"""The child process's entry point (`python -m tdebug.child JOB.json`): runs one job under what its recipe
installs (runtime.recipe: the patched interpreter, the sanitizers), with check's lint, as cli/ does in the parent.

It is started by tdebug.runtime.harness with the mode's environment (TRITON_INTERPRET=1 or TRITON_DEBUG=1)
already set, so Triton reads it at import; results go back over the pipe whose fd is in TDEBUG_RESULT_FD.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from . import settings
from .catalogue.spec import load_target
from .runtime import gate, host_memory
from .runtime.job import Job, JobLimits, SanitizeOptions
from .runtime.processes import die_with_parent
from .runtime.recipe import Installed, Recipe, install
from .runtime.worker import Channel, PlanError, exception_finding, run_script_job, run_spec_job


def _end_with_parent() -> None:
    """Have this process killed when tdebug dies (TDEBUG_PARENT_PID is set when tdebug is the direct parent)."""
    parent = os.environ.get("TDEBUG_PARENT_PID")
    if parent:
        die_with_parent(int(parent))


def _result_fd() -> int:
    """The result pipe's fd, moved out of the way of a script that closes the fds it thinks it owns
    (os.closerange(3, 256)): high, and close-on-exec (a program the script runs does not hold it open)."""
    import fcntl
    import resource

    fd = int(os.environ.pop("TDEBUG_RESULT_FD"))
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    high = min(soft if soft != resource.RLIM_INFINITY else 4096, 4096) - 8
    if high <= fd:
        return fd
    try:
        moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, high)
    except OSError:
        return fd
    os.close(fd)
    return moved


MEMORY_ENV = "TDEBUG_MEMORY_LIMIT"  # MiB the worker may allocate (0: no cap); default 3/4 of the machine's memory


def memory_cap() -> int | None:
    """The worker's cap on its data (bytes), or None: TDEBUG_MEMORY_LIMIT (MiB), else 3/4 of the machine's memory
    (its container's, where lower)."""
    mib = settings.get(MEMORY_ENV)
    if mib is not None:
        return mib << 20 if mib > 0 else None
    total = host_memory.total_bytes()
    return total * 3 // 4 if total else None


def _cap_memory() -> None:
    """A runaway kernel or script fails with MemoryError instead of bringing in the machine's OOM killer."""
    import resource

    cap = memory_cap()
    if cap is None or not hasattr(resource, "RLIMIT_DATA"):
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    if soft == resource.RLIM_INFINITY or cap < soft:
        try:
            resource.setrlimit(resource.RLIMIT_DATA, (cap, hard))
        except (ValueError, OSError):
            return


def main(argv: list[str]) -> int:
    _end_with_parent()
    _cap_memory()
    job = Job.from_json(Path(argv[0]).read_text())
    channel = Channel(_result_fd())
    if job.kind == "spec":  # a catalogue file may import modules of the folder tdebug runs in: last
        sys.path.append(os.getcwd())
    try:
        return _run(job, channel, argv[0])
    except Exception as exc:  # noqa: BLE001 - whatever escaped the cases is tdebug's failure: one line, exit 3
        finding = exception_finding(exc)
        if finding.check != "internal":
            where = f" ({finding.file}:{finding.line})" if finding.file else ""
            finding.message = f"tdebug could not finish the job: {finding.message}{where}"
        channel.send("fatal", message=finding.message, usage=False)
        return 3
    finally:
        channel.close()


def follow_spawned() -> None:
    """In a worker that multiprocessing spawned from a script under tdebug: the same interpreter patches and
    sanitizer, its launches written for the script's process to collect (tdebug.runtime.follow)."""
    from .runtime.follow import spawned_settings

    settings = spawned_settings()
    if settings is None:
        return
    options, limits = settings.get("sanitize"), settings.get("limits")
    job = Job(target=sys.argv[0] or "<spawned>", kind="script", engine=settings.get("engine") or "tdebug",
              sanitize=SanitizeOptions(**options) if options else None, limits=JobLimits(**limits) if limits else None)
    _install(job, follow_folder=Path(settings["folder"]), home=-1)


def _install(job: Job, follow_folder: Path | None = None, home: int | None = None) -> Installed:
    """The job's parts installed: its recipe, the sanitizer it asks for and, on a GPU's interpreter pass, the
    divergence check (each launch on CUDA tensors also run compiled from the same snapshot)."""
    sanitizer = None
    if job.sanitize is not None:
        from .sanitize.session import session_for

        sanitizer = session_for(job.sanitize, job.engine)
    recipe = Recipe.for_job(job, follow_folder, home)
    listeners = []
    if job.divergence and recipe.interpret and hasattr(sanitizer, "case_findings"):
        from .sanitize.divergence import DivergenceCheck

        listeners.append(DivergenceCheck.into(sanitizer, job.target, list(job.argv)))
    return install(recipe, sanitizer, listeners)


def _run(job: Job, channel: Channel, job_file: str) -> int:
    installed = _install(job, follow_folder=Path(job_file + ".d"))  # a script's or a launcher's forks followed
    sanitizer, follower = installed.sanitizer, installed.follower
    # A child started ahead of need (the GPU pass's autotune sweep) waits here, imported, until told go or stop.
    if not gate.wait(lambda: channel.send("ready")):
        channel.send("done")
        return 0
    os.environ.pop(gate.ENV, None)
    channel.send("ready")  # tdebug, torch and Triton are imported: from here on the job's --timeout applies
    debugger = None
    try:
        target = None
        if job.kind == "spec":
            try:
                target = load_target(job.target)
            except Exception as exc:  # noqa: BLE001 - a broken user file is reported, not a traceback
                finding = exception_finding(exc)
                where = f" ({finding.file}:{finding.line})" if finding.file else ""
                channel.send("fatal", message=f"cannot import {job.target}: {finding.message}{where}", usage=False)
                return 1
        if job.breaks is not None:
            from .interpreter.hooks import breakpoints

            points = breakpoints.resolve_breaks(job.target, list(job.breaks))
            pid = job.pid
            debugger = breakpoints.start(points, pid)
        if job.kind == "spec":
            lint = guard_factory = None
            if job.lint:
                from .check.lint import lint_kernel as lint
            if job.guard:
                from .sanitize.guard_bands import GuardSession as guard_factory
            try:
                run_spec_job(job, channel, target, sanitizer, lint=lint, guard_factory=guard_factory,
                             follower=follower)
            except PlanError as e:
                channel.send("fatal", message=str(e), usage=True)
                return 2
        else:
            if job.sweep_ranks:
                from .runtime.script_sweep import run_script_sweep

                run_script_sweep(job, channel, sanitizer, follower)
            else:
                run_script_job(job, channel, sanitizer, follower)
    finally:
        if debugger is not None:
            from .interpreter.hooks import breakpoints

            breakpoints.stop(debugger)
    if debugger is not None:
        from .interpreter.hooks import breakpoints

        why = breakpoints.never_ran(job.pid, [r.grid for r in installed.launches if r.grid])
        if why:
            channel.send("fatal", message=why, usage=True)
            return 2
    channel.send("done")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
