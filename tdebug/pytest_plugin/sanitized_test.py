"""What a sanitized test comes to: the failure text pytest shows (findings with their source lines, a
crash or hang pinned on the launch in flight, the test's own failure) and the record that goes into
the JSON report."""

from __future__ import annotations

import json
import signal
from dataclasses import dataclass, field

import pytest

from ..report import Finding, render
from ..runtime import host_memory
from ..runtime.harness import signal_name
from ..runtime.suite import slowest_kernel
from .forked import BEFORE_LAUNCH, ChildRun


class TdebugFailure(Exception):
    """A test failed because of what tdebug saw (findings, a crash, a hang); the text is the report."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


@dataclass
class SanitizedTest:
    """The findings and the crash of one test, its text for pytest and its record for the JSON report."""

    findings: list[Finding] = field(default_factory=list)
    crash: str = ""  # the crash or hang report, "" when every child reported back
    launches: int = 0  # launches in the first pass
    configs: list[int] = field(default_factory=list)  # the autotune config passes that ran
    own_failure: str = ""  # the test's own failure text (an assertion, an exception), "" if it passed
    seconds: float = 0.0  # the test's call in its children, every config pass (wall)
    launch_seconds: float = 0.0  # of which in Triton launches: the interpreter and tdebug's checks
    wait_seconds: float = 0.0  # and before them, waiting for host memory (the GPU's large launches take turns)
    in_process: bool = False  # run in the pytest process (CUDA was up there), not in a forked child
    timed: list[dict] = field(default_factory=list)  # every pass's launches ({"kernel", "seconds"}): the slowest

    @property
    def failed(self) -> bool:
        """A finding or a crash; a note (a launch not compared, or run compiled only) is said, never a failure."""
        return bool(self.crash) or any(f.check != "note" for f in self.findings)

    def text(self, where: str = "this test") -> str:
        parts = []
        if self.crash:
            parts.append(self.crash)
        if self.findings:
            n = sum(f.count for f in self.findings)
            parts.append(f"tdebug: {len(self.findings)} finding(s) ({n} lane(s)/element(s)) in {where}'s Triton "
                         "launches:")
            parts += [render_finding(f) for f in self.findings]
        if self.own_failure:
            parts.append("---- the test's own failure ----\n" + self.own_failure)
        return "\n\n".join(parts)

    def record(self) -> dict:
        """Plain JSON types only: pytest-xdist carries it from a worker to the controller on the report."""
        return json.loads(json.dumps({"findings": [f.to_dict() for f in self.findings], "crash": self.crash,
                                      "launches": self.launches, "configs": self.configs,
                                      "in_process": self.in_process,
                                      "time": {"seconds": round(self.seconds, 3),
                                               "launch_seconds": round(self.launch_seconds, 3),
                                               "wait_seconds": round(self.wait_seconds, 3),
                                               "launches": len(self.timed),  # every config pass's
                                               "slowest_kernel": slowest_kernel(self.timed)}}, default=str))


SANITIZED_TEST = pytest.StashKey[SanitizedTest]()


def render_finding(f: Finding) -> str:
    text = render(f)
    configs = f.extra.get("configs") or []
    if configs:
        text += "\n  autotune config" + ("s " if len(configs) > 1 else " ") + ", ".join(configs)
    return text


def _in_flight(child: ChildRun) -> str:
    launches = child.launches()
    if not launches:
        return "before any Triton launch (in the test's own code or a library it calls)"
    last = launches[-1]
    config = f", config #{last['config_index']} ({last['config']})" if last.get("config") else ""
    return f"during or after launch {len(launches)} of the test (kernel {last['kernel']}{config})"


def crash_text(child: ChildRun, timeout: float | None) -> str:
    """Why a child gave no result: killed by a signal, exited early, or hung."""
    where = _in_flight(child)
    if child.hung and child.first_launch is None:
        return (f"tdebug: HANG: the test ran {child.seconds:.0f} s and began no Triton launch (the limit before a "
                f"first launch is {BEFORE_LAUNCH} x --tdebug-timeout {timeout:g} s); it was killed {where}. Its own "
                "code or a fixture never ended, or ran that long on a loaded machine.")
    if child.hung:
        return (f"tdebug: HANG: no result {child.seconds - child.first_launch:.0f} s after the test's first Triton "
                f"launch (--tdebug-timeout {timeout:g} s, counted from that launch; {child.first_launch:.1f} s "
                f"before it), the test was killed {where}. A kernel that never ends (a data-dependent loop bound) or "
                "one too slow for the interpreter at this size (raise --tdebug-timeout or "
                "@pytest.mark.tdebug(timeout=...), or test a smaller shape).")
    if child.exit_code == -signal.SIGKILL:  # tdebug sends it only to a hung child: someone else did
        memory = host_memory.total_bytes()
        return (f"tdebug: CRASH: the test's process was killed (SIGKILL) {where}; the session goes on. Not by "
                "tdebug: most often Linux's out-of-memory killer, which sends it to the process holding most "
                f"memory. This one had reached {child.peak_rss / 2**30:.1f} GiB resident, of "
                f"{memory / 2**30:.1f} GiB in the machine; with pytest-xdist each worker holds a test of its own: "
                "fewer workers (-n), a smaller shape, or @pytest.mark.tdebug(skip=True) on the largest cases.")
    if child.exit_code < 0:
        return (f"tdebug: CRASH: the test's process died ({signal_name(child.exit_code)}) {where}; the session "
                "goes on. Under the sanitizer out-of-bounds lanes of tensor arguments are masked off, so look "
                "for an address it cannot see: a pointer cast from an integer or loaded from memory, a launch "
                "with no tensor argument, or native code. The Python traceback at the crash is under "
                "'Captured stderr call'.")
    return (f"tdebug: CRASH: the test's process exited with code {child.exit_code} {where} before reporting "
            "(os._exit in the test, or tdebug's own error: see 'Captured stderr call').")
