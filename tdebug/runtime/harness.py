"""The one place that knows how a case runs: in a child process (tdebug.child), under a mode.

A kernel that segfaults the interpreter, or hangs, kills or stalls only the child: the harness records
the case in flight as crashed / hung, starts a fresh child and goes on with the remaining cases.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from ..report import Finding
from .results import CaseResult, ChildLog, JobResult

MODE_ENV = {
    "interpret": {"TRITON_INTERPRET": "1"},
    "debug": {"TRITON_DEBUG": "1"},
    "gpu": {},
}


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

    def next_event(self, deadline: float | None) -> dict | None:
        """The next event, or None when the child closed the pipe; raises TimeoutError at the deadline."""
        while True:
            while b"\n" in self.pending:
                line, self.pending = self.pending.split(b"\n", 1)
                if line.strip():
                    return json.loads(line)
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
    def __init__(self, job: dict, mode: str, interactive: bool, capture: bool, env_extra: dict | None,
                 wrapper: list[str] | None, tee: bool = False) -> None:
        self.job_file = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
        json.dump(job, self.job_file)
        self.job_file.close()
        read_fd, write_fd = os.pipe()
        env = child_env(mode, env_extra)
        env["TDEBUG_RESULT_FD"] = str(write_fd)
        cmd = (wrapper or []) + [sys.executable, "-m", "tdebug.child", self.job_file.name]
        out = subprocess.PIPE if capture else None
        self.proc = subprocess.Popen(
            cmd, env=env, pass_fds=(write_fd,), stdin=None if interactive else subprocess.DEVNULL,
            stdout=out, stderr=out, start_new_session=not interactive)
        os.close(write_fd)
        self.events = EventPipe(read_fd)
        self.captured = ""
        self.stdout = ""
        self.stderr = ""
        self._parts: tuple[list[str], list[str]] = ([], [])
        self._threads: list[threading.Thread] = []
        if capture:
            for stream, parts, echo in ((self.proc.stdout, self._parts[0], sys.stdout),
                                        (self.proc.stderr, self._parts[1], sys.stderr)):
                thread = threading.Thread(target=_drain, args=(stream, parts, echo if tee else None), daemon=True)
                thread.start()
                self._threads.append(thread)

    def next_event(self, deadline: float | None) -> dict | None:
        return self.events.next_event(deadline)

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            self.proc.kill()

    def finish(self) -> int:
        code = self.proc.wait()
        for thread in self._threads:
            thread.join(timeout=30)
        self.stdout, self.stderr = "".join(self._parts[0]), "".join(self._parts[1])
        self.captured = self.stdout + self.stderr
        self.events.close()
        os.unlink(self.job_file.name)
        return code


def case_from_event(ev: dict) -> CaseResult:
    return CaseResult(
        index=ev["index"], label=ev.get("label", ""), status=ev.get("status", "error"),
        findings=[Finding.from_dict(f) for f in ev.get("findings", [])],
        comparisons=ev.get("comparisons", []), time=ev.get("time", 0.0), error=ev.get("error", ""),
        launches=ev.get("launches", []), case=ev.get("case", {}), exit_code=ev.get("exit_code"))


def crash_hint(target: str, label: str, mode: str, argv: list[str] | None = None) -> str:
    shape = label.split(" ")[0] if label and label[0].isdigit() else ""
    args = f" --shape {shape}" if shape else ""
    if argv:
        args += " -- " + " ".join(argv)
    if mode == "interpret":
        return ("a crash in the interpreter is almost always an out-of-bounds store or load (a missing "
                f"mask on a ragged edge); next: tdebug sanitize {target}{args}")
    return f"the process died on the GPU; next: tdebug sanitize {target}{args} --tool memcheck"


def run_job(job: dict, mode: str = "interpret", timeout: float | None = 120.0, interactive: bool = False,
            capture: bool = False, on_event: Callable[[str, dict], None] | None = None,
            env_extra: dict | None = None, wrapper: list[str] | None = None, tee: bool = False) -> JobResult:
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
    target = job.get("target", "")
    while True:
        child = _Child({**job, "start": start}, mode, interactive, capture, env_extra, wrapper, tee)
        in_flight: int | None = None
        context_lost: int | None = None
        started_at = 0.0
        done = False
        hung = False
        try:
            while True:
                deadline = None if (timeout is None or in_flight is None) else started_at + timeout
                if in_flight is None and timeout is not None:
                    deadline = time.monotonic() + max(timeout, 300.0)  # import + planning
                try:
                    ev = child.next_event(deadline)
                except TimeoutError:
                    hung = True
                    child.kill()
                    break
                if ev is None:
                    break
                kind = ev["event"]
                if kind == "plan":
                    result.kernel = ev.get("kernel", "")
                    result.labels = ev.get("labels", [])
                    result.lint = [Finding.from_dict(f) for f in ev.get("lint", [])]
                elif kind == "start":
                    in_flight, started_at = ev["index"], time.monotonic()
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
                    on_event(kind, ev)
        finally:
            code = child.finish()
        if result.cases and child.captured:
            result.cases[-1].stderr = child.captured
        if capture:
            result.logs.append(ChildLog(start, child.stdout, child.stderr, code))
        if (done and code >= 0) or result.fatal:
            return result
        if done:
            # Everything was reported, then the process died (heap corruption found at exit, say).
            what = signal_name(code)
            last = result.cases[-1] if result.cases else None
            message = f"the process died after the launch ({what}): memory was corrupted; " + crash_hint(
                target, last.label if last else "", mode, job.get("argv"))
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
                    result.fatal = "timed out while importing the target"
                return result
            if start + len(result.cases) >= len(result.labels):
                return result
            in_flight = result.cases[-1].index + 1 if result.cases else start
        label = result.labels[in_flight] if in_flight < len(result.labels) else target
        if hung:
            status, message = "hang", (
                f"no result after {timeout:.0f} s: the kernel loops forever (a data-dependent bound), is very "
                "slow (raise --timeout), or corrupted memory and deadlocked; next: tdebug sanitize "
                f"{target}" + (" -- " + " ".join(job["argv"]) if job.get("argv") else ""))
        else:
            what = signal_name(code) if code < 0 else f"exit code {code}"
            hint = crash_hint(target, label, mode, job.get("argv"))
            status, message = "crash", f"the launch crashed the process ({what}); {hint}"
        case = CaseResult(index=in_flight, label=label, status=status, error=message,
                          findings=[Finding(check=status, message=message)], exit_code=code,
                          stderr=child.captured)
        result.cases.append(case)
        if on_event is not None:
            on_event("result", {"index": in_flight, "label": label, "status": status, "error": message})
        start = in_flight + 1
        if start >= len(result.labels):
            return result
