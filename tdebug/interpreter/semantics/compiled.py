"""Triton launches reached from torch.compile'd code run eagerly, under the interpreter and every check:
once torch._dynamo is imported, the interpreter's launch (InterpretedFunction.run) and tdebug's pinned
autotuner (Autotuner.run) are opaque to it, so tracing one is a graph break and the launch runs on the real
tensors. Without this, dynamo traces into the interpreter with fake tensors and fails."""

from __future__ import annotations

from ...catalogue import dynamo
from ..versions import patcher

patch = patcher("compiled")

INSTALLED: list[str] = []  # the internals made eager (tests read it)


def _make_eager() -> None:
    from triton.runtime import autotuner, interpreter

    for owner, name in ((interpreter.InterpretedFunction, "run"), (autotuner.Autotuner, "run")):
        patch(owner, name, dynamo.eager)
        INSTALLED.append(f"{owner.__name__}.{name}")


def install() -> None:
    """After the other interpreter patches (Autotuner.run is tdebug's pinned one by then)."""
    dynamo.when_loaded(_make_eager)
