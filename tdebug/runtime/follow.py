"""Launches outside the script's main thread and process: serialised across threads, and followed into the
processes the script forks or spawns (each writes its launches and their findings to a file of its own in a
folder the script's process reads when the script ends), so none of them is lost or counted as "no kernel".
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..report import Finding

ENV = "TDEBUG_FOLLOW"  # JSON: the folder and the sanitizer's settings, for a spawned worker (tdebug.child.follow)
_LAUNCH_LOCK = threading.RLock()
# Prefixed to a spawned worker's `python -c` code: tdebug's own, not a user's tdebug.py in the working folder.
SPAWNED = ("import sys; first = sys.path.pop(0) if sys.path[:1] == [''] else None; import tdebug.child; "
           "tdebug.child.follow_spawned(); first is None or sys.path.insert(0, first); ")


class _Serialised:
    """One launch at a time across threads: the interpreter (its builder's grid and program index) and the
    sanitizer keep per-launch state in globals. Layer "serialise": outermost around a launch."""

    @staticmethod
    def around_launch(proceed, executor, *args, **kwargs):
        with _LAUNCH_LOCK:
            return proceed(executor, *args, **kwargs)


def serialise_launches() -> None:
    """Hold one lock around each launch (a listener of grid_loop's, layer "serialise")."""
    from ..interpreter.batched import grid_loop

    grid_loop.listen("serialise", _Serialised())


@dataclass
class Followed:
    """What the followed processes reported: launches, findings, processes that died in a launch."""

    launches: int = 0
    pids: set[int] = field(default_factory=set)
    findings: list[dict] = field(default_factory=list)


class Follower:
    """Follows the launches of forked and spawned children of a script's process (the one that runs it)."""

    def __init__(self, folder: Path, sanitizer: Any, settings: dict | None = None, home: int | None = None,
                 active: bool = True) -> None:
        self.folder = Path(folder)
        self.sanitizer = sanitizer
        self.settings = settings or {}
        self.home = os.getpid() if home is None else home  # the script's process reports over the channel
        # False until adopt(): pytest's own forks (a test's child, a catalogue case's) are not followed children
        self.active = active

    @property
    def away(self) -> bool:
        """True in a forked or spawned child of the script's process."""
        return self.active and os.getpid() != self.home

    def install(self) -> None:
        from ..interpreter.batched import grid_loop

        grid_loop.listen("follow", self)  # around_launch
        os.register_at_fork(after_in_child=self._forked)
        self._follow_spawn()

    def around_launch(self, proceed, executor, *args, **kwargs):
        """In a followed child: the launch's begin, then its end with the sanitizer's findings, to the file."""
        if not self.away:
            return proceed(executor, *args, **kwargs)
        name = getattr(getattr(executor, "fn", None), "__name__", "kernel")
        self._write({"record": "begin", "kernel": name})
        try:
            return proceed(executor, *args, **kwargs)
        finally:
            findings = []
            if self.sanitizer is not None:
                findings = [f.to_dict() for f in self.sanitizer.end_case()]
                self.sanitizer.begin_case()
            self._write({"record": "end", "kernel": name, "findings": findings})

    def adopt(self, folder: Path) -> None:
        """This process is now the one whose children are followed, into `folder` (a forked test's child)."""
        self.home, self.active = os.getpid(), True
        self.folder = Path(folder)
        self.folder.mkdir(exist_ok=True)
        os.environ[ENV] = json.dumps({"folder": str(self.folder), **self.settings})

    def _forked(self) -> None:
        if self.active and self.sanitizer is not None:
            self.sanitizer.begin_case()  # the parent's findings so far are the parent's to report

    def _follow_spawn(self) -> None:
        """multiprocessing's spawn start method: its workers start with tdebug's sanitizer installed."""
        import multiprocessing.spawn as spawn

        os.environ[ENV] = json.dumps({"folder": str(self.folder), **self.settings})
        original = spawn.get_command_line

        def get_command_line(**kwds):
            cmd = list(original(**kwds))
            if "-c" in cmd:
                at = cmd.index("-c") + 1
                cmd[at] = SPAWNED + cmd[at]
            return cmd

        spawn.get_command_line = get_command_line

    def exited(self, findings: list[dict]) -> None:
        """A forked child left the script's code with an exception (an access tdebug stopped, the script's own
        error): its findings reach the script's process, whatever status the script gives the child."""
        if self.away and findings:
            self._write({"record": "exit", "findings": findings})

    def _write(self, record: dict) -> None:
        path = self.folder / f"{os.getpid()}.jsonl"
        with contextlib.suppress(OSError), open(path, "a") as f:
            f.write(json.dumps(record, default=str) + "\n")

    def clear(self) -> None:
        """Forget what the followed processes wrote so far (a catalogue file's next case starts afresh)."""
        for path in self.folder.glob("*.jsonl"):
            with contextlib.suppress(OSError):
                path.unlink()

    def collect(self) -> Followed:
        """Read what every followed process wrote; a launch begun and never ended is a crash of that process."""
        out = Followed()
        for path in sorted(self.folder.glob("*.jsonl")):
            pid = int(path.stem)
            open_launch = ""
            for line in path.read_text().splitlines():
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                if record["record"] == "begin":
                    open_launch = record["kernel"]
                    out.launches += 1
                    out.pids.add(pid)
                else:
                    open_launch = ""
                    for f in record.get("findings", []):
                        f["message"] = f"{f['message']} (in child process {pid})"
                        out.findings.append(f)
            if open_launch:
                message = (f"child process {pid} died during a launch of {open_launch} (a crash in the "
                           "interpreter is almost always an out-of-bounds store or load), or was still in it "
                           "when the script ended")
                out.findings.append(Finding(check="crash", message=message, kernel=open_launch).to_dict())
        return out


def spawned_settings() -> dict | None:
    """The settings a spawned worker inherited from the script's process (None: not under tdebug)."""
    text = os.environ.get(ENV)
    return json.loads(text) if text else None
