"""A child started before it is known to be needed: it imports tdebug, torch and Triton, then waits at a gate
until its parent says go (run the job) or stop (end with nothing to report).

The GPU's interpreter pass sweeps a script's autotune configs in separate processes (a CUDA context does not
survive a fork); how many configs survive is known only at the first run's first launch, seconds into it. Children
started at once and held at the gate overlap their start-up (most of a run on a GPU machine) with the first run.
The gate is a file named in the child's environment (TDEBUG_GATE): empty while the parent has not decided.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ENV = "TDEBUG_GATE"
GO, STOP = "go", "stop"
POLL = 0.02  # seconds between looks at the gate
KEEPALIVE = 1.0  # seconds between the child's "still waiting" events (the parent's --timeout counts from each)


class Gate:
    """The parent's side: a file the child watches; decided once (go or stop), removed by close()."""

    def __init__(self) -> None:
        fd, name = tempfile.mkstemp(prefix="tdebug-gate-")
        os.close(fd)
        self.path = Path(name)
        self.decision: str | None = None

    def env(self) -> dict[str, str]:
        return {ENV: str(self.path)}

    def decide(self, decision: str) -> None:
        """Say go or stop (the first word counts); written whole, then renamed, so the child never reads half."""
        if self.decision is not None:
            return
        self.decision = decision
        partial = self.path.with_suffix(".tmp")
        partial.write_text(decision)
        os.replace(partial, self.path)

    def close(self) -> None:
        self.decide(STOP)  # a child still waiting ends
        for path in (self.path, self.path.with_suffix(".tmp")):
            path.unlink(missing_ok=True)


def wait(keepalive: Callable[[], None], environ: dict | None = None) -> bool:
    """The child's side: True to go on with the job (no gate, or the parent said go), False to stop. While it
    waits it calls keepalive every KEEPALIVE seconds; a gate file that vanished means the parent is gone: stop."""
    path = (environ if environ is not None else os.environ).get(ENV)
    if not path:
        return True
    last = time.monotonic()
    while True:
        try:
            decision = Path(path).read_text().strip()
        except OSError:
            return False
        if decision:
            return decision == GO
        if time.monotonic() - last >= KEEPALIVE:
            keepalive()
            last = time.monotonic()
        time.sleep(POLL)
