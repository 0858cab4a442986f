"""What the CPU interpreter cannot run (inline asm, a libdevice function tdebug has no numpy for, a builder
op Triton's interpreter lacks): told apart from the kernel's own errors, so a run ends "could not run"."""

from __future__ import annotations

import re

from ..catalogue.dynamo import REASON
from .frames import KernelError

_MISSING_OP = re.compile(r"'InterpreterBuilder' object has no attribute '(\w+)'")


class NotRunnable(KernelError, NotImplementedError):
    """Raised by tdebug's interpreter patches for a construct they cannot compute on the CPU."""


def unsupported_reason(exc: BaseException) -> str | None:
    """Why the interpreter could not run a kernel, or None when `exc` is the kernel's own error."""
    if isinstance(exc, NotRunnable):
        return str(exc)
    text = str(exc)
    missing = _MISSING_OP.search(text)
    if missing:
        op = missing.group(1).removeprefix("create_").removeprefix("get_")
        return f"Triton's CPU interpreter has no '{op}' operation"
    if isinstance(exc, NotImplementedError) and text.endswith(" not supported in interpreter mode"):
        what = text.removesuffix(" not supported in interpreter mode")  # inline_asm, extern_elementwise
        return f"{what} is not supported by Triton's CPU interpreter"
    if type(exc).__name__ == "InductorError" and "active drivers" in text:
        return ("torch.compile's inductor generated Triton kernels for the CPU (cpu_backend=\"triton\"), which "
                "Triton cannot compile without a GPU driver; tdebug checks the Triton kernels your code launches, "
                "not inductor's: use the default CPU backend (C++)")
    if type(exc).__name__ == "Unsupported" and REASON in text:  # torch._dynamo.exc.Unsupported
        return ("torch.compile(fullgraph=True) refuses the graph break that tdebug puts at each Triton launch "
                "(and torch.empty) to run it under the interpreter's checks: compile without fullgraph=True")
    return None
