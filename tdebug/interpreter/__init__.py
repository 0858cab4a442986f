"""tdebug's patched Triton interpreter: live device_assert, autotune pinning, launch records, breakpoints
by line and program id, and (versions.py) the one place that knows each supported Triton's internals."""

from .frames import current_pid, user_frame
from .patches import STATE, DeviceAssertError, install, pin_autotune

__all__ = ["STATE", "DeviceAssertError", "current_pid", "install", "pin_autotune", "user_frame"]
