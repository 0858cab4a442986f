"""tdebug's patched Triton interpreter: live device_assert, autotune pinning, launch records, breakpoints
by line and program id, and (versions.py) the one place that knows each supported Triton's internals.

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
