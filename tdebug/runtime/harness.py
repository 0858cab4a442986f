"""The one place that knows how a case runs: in a child process (tdebug.child), under a mode.

A kernel that segfaults the interpreter, or hangs, kills or stalls only the child: the harness records
the case in flight as crashed / hung, starts a fresh child and goes on with the remaining cases.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from .. import settings
from ..report import Finding
from . import processes
from .events import Event, EventKind
from .job import Job
from .results import CaseResult, ChildLog, JobResult

MODE_ENV = {
    "interpret": {"TRITON_INTERPRET": "1"},
    "debug": {"TRITON_DEBUG": "1"},
    "gpu": {},
}
EXIT_WAIT = 10.0  # seconds a child gets to exit after its last event before its group is ended
IMPORT_WAIT = 300.0  # seconds tdebug's own imports (torch, Triton) may take in a child, whatever --timeout says


def signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def child_env(mode: str, extra: dict | None = None) -> dict:
    env = dict(os.environ)
    for knob in ("TRITON_INTERPRET", "TRITON_DEBUG"):
        env.pop(knob, None)
    env.update(MODE_ENV[mode])
    env.setdefault("PYTHONUNBUFFERED", "1")
    # Let the child import tdebug even when it is not installed (running from a checkout).
    root = str(Path(__file__).resolve().parent.parent.parent)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    if extra:
        env.update(extra)
    return env


def _drain(stream, parts: list[str], echo) -> None:
    """Read a child's pipe to the end (so a chatty child never blocks on a full pipe), optionally echoing."""
    import codecs

    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    fd = stream.fileno()
    while True:
        chunk = os.read(fd, 65536)
        text = decoder.decode(chunk, final=not chunk)
        if text:
            parts.append(text)
            if echo is not None:
                try:
                    echo.write(text)
                    echo.flush()
                except (OSError, ValueError):
                    pass
        if not chunk:
            break
    stream.close()


class EventPipe:
    """The read end of a child's result pipe: one JSON event a line (tdebug.runtime.worker.Channel writes them)."""

    def __init__(self, read_fd: int) -> None:
        # A raw fd and our own line buffer: a buffered reader could hold a whole event in its buffer
        # while select() on the empty pipe waits for the deadline.
        self.read_fd = read_fd
        self.pending = b""
        self.sel = selectors.DefaultSelector()
        self.sel.register(read_fd, selectors.EVENT_READ)

    def next_event(self, deadline: float | None) -> Event | None:
        """The next event, or None when the child closed the pipe; raises TimeoutError at the deadline."""
        while True:
            while b"\n" in self.pending:
                line, self.pending = self.pending.split(b"\n", 1)
                if line.strip():
                    return Event.parse(line)
            timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not self.sel.select(timeout):
                raise TimeoutError
            data = os.read(self.read_fd, 1 << 16)
            if not data:
                return None
            self.pending += data

    def close(self) -> None:
        self.sel.close()
        os.close(self.read_fd)


class _Child:
    def __init__(self, job: Job, mode: str, interactive: bool, capture: bool, env_extra: dict | None,
                 wrapper: list[str] | None, tee: bool = False, stdin=None) -> None:
        fd, self.job_path = tempfile.mkstemp(prefix="tdebug-job-", suffix=".json")
        with os.fdopen(fd, "w") as f:
            f.write(job.to_json())
        read_fd, write_fd = os.pipe()
        env = child_env(mode, env_extra)
        # The child's engine reads how to run a launch's programs here; "auto" leaves the caller's choice.
        env["TDEBUG_EXECUTOR"] = job.executor if job.executor != "auto" else settings.get("TDEBUG_EXECUTOR")
        env["TDEBUG_RESULT_FD"] = str(write_fd)
        if not wrapper:  # the child dies with us (tdebug.child); under a wrapper its parent is the wrapper
            env["TDEBUG_PARENT_PID"] = str(os.getpid())
        cmd = (wrapper or []) + processes.python_module("tdebug.child") + [self.job_path]
        out = subprocess.PIPE if capture else None
        # A script reads our standard input; a catalogue file's cases read nothing.
        if stdin is None:  # stdin given: what a script re-run per autotune config reads (tdebug.runtime.stdin)
            stdin = None if interactive or job.kind == "script" else subprocess.DEVNULL
        try:
            # JOB.json.d: the folder where a script's forked and spawned children write their launches
            temp = [self.job_path, self.job_path + ".d"]
            self.proc = processes.start(cmd, interactive=interactive, temp=temp, env=env,
                                        pass_fds=(write_fd,), stdin=stdin, stdout=out, stderr=out)
        except BaseException:
            os.close(read_fd)
            os.unlink(self.job_path)
            raise
        finally:
            os.close(write_fd)
        self.interactive = interactive
        self.events = EventPipe(read_fd)
        self.captured = ""
        self.stdout = ""
        self.stderr = ""
        self.ended = False  # True when the harness had to end the process (a hang, or it would not exit)
        self._parts: tuple[list[str], list[str]] = ([], [])
        self._threads: list[threading.Thread] = []
        if capture:
            for stream, parts, echo in ((self.proc.stdout, self._parts[0], sys.stdout),
                                        (self.proc.stderr, self._parts[1], sys.stderr)):
                thread = threading.Thread(target=_drain, args=(stream, parts, echo if tee else None), daemon=True)
                thread.start()
                self._threads.append(thread)

    def next_event(self, deadline: float | None) -> Event | None:
        return self.events.next_event(deadline)

    def kill(self) -> None:
        """End the child's whole process group (it hung, or tdebug is stopping)."""
        self.ended = True
        processes.end(self.proc)

    def finish(self, exit_wait: float | None = EXIT_WAIT) -> int:
        """Reap the child (ending its group if it does not exit within exit_wait seconds), collect what it
        printed, remove its job file; its exit code."""
        try:
            if processes.reap(self.proc, exit_wait) is None:
                self.ended = True
        finally:
            for thread in self._threads:
                thread.join(timeout=5)
            self.events.close()
            processes.remove([Path(self.job_path), Path(self.job_path + ".d")])
        self.stdout, self.stderr = "".join(self._parts[0]), "".join(self._parts[1])
        self.captured = self.stdout + self.stderr
        return self.proc.returncode


def case_from_event(ev: Event | Mapping) -> CaseResult:
    return CaseResult(
        index=ev["index"], label=ev.get("label", ""), status=ev.get("status", "error"),
        findings=[Finding.from_dict(f) for f in ev.get("findings", [])],
        comparisons=ev.get("comparisons", []), time=ev.get("time", 0.0), cpu_time=ev.get("cpu_time", 0.0),
        error=ev.get("error", ""),
        launches=ev.get("launches", []), case=ev.get("case", {}), exit_code=ev.get("exit_code"),
        localisation=ev.get("localisation", []), kernel_files=ev.get("kernel_files", {}),
        launch_count=ev.get("launch_count") if ev.get("launches_known") else None)


def crash_hint(target: str, label: str, mode: str, argv: list[str] | None = None) -> str:
    shape = label.split(" ")[0] if label and label[0].isdigit() else ""
    args = f" --shape {shape}" if shape else ""
    if argv:
        args += " -- " + " ".join(argv)
    if mode == "interpret":
        return ("a crash in the interpreter is almost always an out-of-bounds store or load (a missing "
                f"mask on a ragged edge); next: tdebug sanitize {target}{args}")
    return f"the process died on the GPU; next: tdebug sanitize {target}{args} --tool memcheck"


def _death(job: Job, code: int, label: str, mode: str, launched: bool) -> tuple[str, str]:
    """(status, message) for a child that died with a case in flight: a launch's crash only when one ran."""
    target = job.target
    if job.kind == "script":
        if code >= 0:
            return "fail", (f"the script exited with code {code} before tdebug could read its results "
                            "(os._exit, or a crash in native code)")
        if not launched:
            return "crash", f"the script died ({signal_name(code)}) before it launched any Triton kernel"
    what = signal_name(code) if code < 0 else f"exit code {code}"
    return "crash", f"the launch crashed the process ({what}); {crash_hint(target, label, mode, list(job.argv))}"


def run_job(job: Job, mode: str = "interpret", timeout: float | None = 120.0, interactive: bool = False,
            capture: bool = False, on_event: Callable[[str, dict], None] | None = None,
            env_extra: dict | None = None, wrapper: list[str] | None = None, tee: bool = False,
            stdin=None) -> JobResult:
    """Run a worker job to completion, restarting the child after a crash or hang.

    timeout: seconds allowed for one case (None: no limit, as when a person is in the debugger).
    capture: keep the child's stdout/stderr (on CaseResult.stderr of the last case, and per child in
    JobResult.logs) instead of passing it through; tee: capture and still show it as it comes.
    A child that reports a case with context_lost (a CUDA error left its context unusable) exits; the
    next child goes on from the case after it.
    """
    capture = capture or tee
    result = JobResult()
    start = 0
    target = job.target
    exit_wait = EXIT_WAIT if timeout is None else min(timeout, EXIT_WAIT)
    while True:
        child = _Child(job.but(start=start), mode, interactive, capture, env_extra, wrapper, tee, stdin)
        in_flight: int | None = None
        launched = False  # a Triton launch had started in the case in flight
        context_lost: int | None = None
        ready = False  # the child has imported tdebug, torch and Triton: from here on --timeout applies
        last_event = time.monotonic()
        done = False
        hung = False
        if interactive:
            processes.debugger.set()  # Ctrl-C belongs to the debugger in the foreground
        try:
            while True:
                if timeout is None:
                    deadline = None
                else:  # a case, or importing the target and planning, gets --timeout
                    deadline = last_event + (timeout if ready else max(timeout, IMPORT_WAIT))
                try:
                    ev = child.next_event(deadline)
                except TimeoutError:
                    hung = True
                    child.kill()
                    break
                if ev is None:
                    break
                kind = ev.kind
                if kind != EventKind.LAUNCH:  # a launch is part of its case: the case's deadline stands
                    last_event = time.monotonic()
                ready = True
                if kind == "plan":
                    result.kernel = ev.get("kernel", "")
                    result.labels = ev.get("labels", [])
                    result.lint = [Finding.from_dict(f) for f in ev.get("lint", [])]
                elif kind == "start":
                    in_flight, launched = ev["index"], False
                elif kind == "launch":
                    launched = True
                elif kind == "result":
                    result.cases.append(case_from_event(ev))
                    in_flight = None
                    if ev.get("context_lost"):
                        context_lost = ev["index"]
                elif kind == "done":
                    done = True
                elif kind == "fatal":
                    result.fatal, result.fatal_usage = ev["message"], ev.get("usage", False)
                if on_event is not None:
                    on_event(kind.value, dict(ev.data))
        except BaseException:
            child.kill()  # Ctrl-C, SIGTERM, a broken event: the child's whole group goes too
            raise
        finally:
            processes.debugger.clear()
            code = child.finish(exit_wait)
        if result.cases and child.captured:
            result.cases[-1].stderr = child.captured
        if capture:
            result.logs.append(ChildLog(start, child.stdout, child.stderr, code))
        if (done and (code >= 0 or child.ended)) or result.fatal:
            return result
        if done:
            # Everything was reported, then the process died (heap corruption found at exit, say).
            what = signal_name(code)
            last = result.cases[-1] if result.cases else None
            message = f"the process died after the launch ({what}): memory was corrupted; " + crash_hint(
                target, last.label if last else "", mode, list(job.argv))
            if last is not None:
                last.status, last.error = "crash", message
                last.findings.append(Finding(check="crash", message=message))
                last.exit_code = code
            return result
        if context_lost is not None and in_flight is None and not hung:
            # The worker left on purpose after a CUDA error (the context is unusable): go on after that case.
            start = context_lost + 1
            if start >= len(result.labels):
                return result
            continue
        # The child died or stalled.
        if in_flight is None:
            if not result.labels:
                result.fatal = (child.captured.strip().splitlines() or [f"the worker exited with code {code}"])[-1]
                if hung:
                    result.fatal = f"timed out after {timeout:.0f} s importing the target (raise --timeout)"
                return result
            if start + len(result.cases) >= len(result.labels):
                return result
            in_flight = result.cases[-1].index + 1 if result.cases else start
        label = result.labels[in_flight] if in_flight < len(result.labels) else target
        if hung and job.kind == "script" and not launched:
            status, message = "hang", (f"no result after {timeout:.0f} s: the script did not finish, and it had "
                                       "launched no Triton kernel (raise --timeout if it is just slow)")
        elif hung:
            status, message = "hang", (
                f"no result after {timeout:.0f} s: the kernel loops forever (a data-dependent bound), is very "
                "slow (raise --timeout), or corrupted memory and deadlocked; next: tdebug sanitize "
                f"{target}" + (" -- " + " ".join(job.argv) if job.argv else ""))
        else:
            status, message = _death(job, code, label, mode, launched)
        case = CaseResult(index=in_flight, label=label, status=status, error=message,
                          findings=[Finding(check=status, message=message)], exit_code=code,
                          stderr=child.captured)
        result.cases.append(case)
        if on_event is not None:
            on_event("result", {"index": in_flight, "label": label, "status": status, "error": message})
        start = in_flight + 1
        if start >= len(result.labels):
            return result
