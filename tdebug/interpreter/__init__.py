"""tdebug's patched Triton interpreter, in four folders: batched/ (the engine that runs a launch's programs
serially or in lock-step batches, and the Launch it makes), fast/ (shortcuts through Triton's front end with
unchanged results), semantics/ (the interpreter's answers made compiled Triton's) and hooks/ (what the checks
hang on: memory events, provenance, store records, overflow, breakpoints, size caps). On top: versions.py, the
one place that knows each supported Triton's internals and patches them; patches.py, which installs the
patches a process needs (live device_assert, autotune pinning, launch records among them); frames.py and
unsupported.py, which every folder uses.

The names below load on first use: the CLI's parent process imports versions.py alone (no numpy, no Triton)."""

from __future__ import annotations

import importlib
from typing import Any

_NAMES = {"current_pid": "frames", "user_frame": "frames", "STATE": "patches", "DeviceAssertError": "patches",
          "install": "patches", "pin_autotune": "patches"}

__all__ = ["STATE", "DeviceAssertError", "current_pid", "install", "pin_autotune", "user_frame"]


def __getattr__(name: str) -> Any:
    if name in _NAMES:
        return getattr(importlib.import_module(f".{_NAMES[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
