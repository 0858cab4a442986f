"""The parent side of `tdebug viz`: run the traced launch in a child process and read back its maps.

The child (python -m tdebug.viz.trace_child) runs with TRITON_INTERPRET=1 (tdebug.runtime.harness.child_env) and
writes one LaunchMap per launch to a temporary directory as soon as the launch ends, so a child that
dies mid-way (a segfault, a timeout) still leaves the launches before it to draw.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..runtime import processes
from ..runtime.harness import child_env
from ..runtime.job import VizJob
from .errors import ErrorMap, load_error_maps
from .model import LaunchMap, load_launches


@dataclass
class TraceResult:
    launches: list[LaunchMap] = field(default_factory=list)
    errors: list[ErrorMap] = field(default_factory=list)  # a wrong catalogue case: its outputs' error maps
    info: dict = field(default_factory=dict)  # the child's result.json (empty if it died first)
    exit_code: int = 0
    output: str = ""  # the child's stdout + stderr
    timed_out: bool = False

    @property
    def crashed(self) -> str:
        """Why the child died, or ''."""
        if self.timed_out:
            return "the launch did not finish in time (a hang, or raise --timeout)"
        if self.info:
            return ""
        if self.exit_code < 0:
            try:
                name = signal.Signals(-self.exit_code).name
            except ValueError:
                name = f"signal {-self.exit_code}"
            return f"the traced process died ({name})"
        return f"the traced process exited with code {self.exit_code} before finishing"


def _job_file(job: VizJob, workdir: Path) -> Path:
    path = workdir / "job.json"
    path.write_text(job.to_json())
    return path


def _command(job_path: Path) -> list[str]:
    return processes.python_module("tdebug.viz.trace_child") + [str(job_path)]


def trace(job: VizJob, timeout: float = 300.0, meanwhile: Callable[[], None] | None = None) -> TraceResult:
    """Run the job's launches traced in a child; the maps of every launch that finished.

    meanwhile: work for this process while the child runs (importing the drawing code).
    """
    workdir = Path(tempfile.mkdtemp(prefix="tdebug-viz-"))
    try:
        job = job.but(out=str(workdir / "maps"), serve=None)
        proc = processes.start(_command(_job_file(job, workdir)), temp=[workdir], env=child_env("interpret"),
                               stdin=_stdin(job), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        result = TraceResult()
        started = time.monotonic()
        try:
            if meanwhile is not None:
                meanwhile()
            out, _ = proc.communicate(timeout=max(1.0, timeout - (time.monotonic() - started)))
        except subprocess.TimeoutExpired:
            processes.end(proc)
            out, _ = proc.communicate()
            result.timed_out = True
        finally:
            processes.end(proc)  # done: what it started and left running; Ctrl-C: all of it
        result.output = (out or b"").decode(errors="replace")
        result.exit_code = proc.returncode
        return _collect(result, workdir / "maps")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _stdin(job: VizJob) -> int | None:
    """A script reads our standard input; a catalogue file's case reads nothing."""
    return None if job.kind == "script" else subprocess.DEVNULL


def _collect(result: TraceResult, maps: Path) -> TraceResult:
    if maps.is_dir():
        result.launches = load_launches(maps)
        result.errors = load_error_maps(maps)
        info = maps / "result.json"
        if info.is_file():
            result.info = json.loads(info.read_text())
    return result


class Server:
    """A child that traces, then serves triton-viz's visualizer on 127.0.0.1:port until stopped."""

    def __init__(self, job: VizJob, port: int) -> None:
        self.workdir = Path(tempfile.mkdtemp(prefix="tdebug-viz-"))
        self.maps = self.workdir / "maps"
        job = job.but(out=str(self.maps), serve={"port": port})
        self.proc = processes.start(_command(_job_file(job, self.workdir)), temp=[self.workdir],
                                    env=child_env("interpret"), stdin=_stdin(job))

    def wait_traced(self, timeout: float) -> TraceResult:
        """Block until the launches are traced (the server is then starting) or the child dies."""
        deadline = time.monotonic() + timeout
        result = TraceResult()
        while time.monotonic() < deadline:
            if (self.maps / "result.json").is_file():
                return _collect(result, self.maps)
            code = self.proc.poll()
            if code is not None:
                result.exit_code = code
                return _collect(result, self.maps)
            time.sleep(0.1)
        result.timed_out = True
        self.stop()
        return _collect(result, self.maps)

    def wait(self) -> int:
        return self.proc.wait()

    def stop(self) -> None:
        processes.end(self.proc, grace=5.0)  # the server's whole group: SIGTERM, then SIGKILL after 5 s
        shutil.rmtree(self.workdir, ignore_errors=True)
