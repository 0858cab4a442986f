"""A @triton.jit helper that calls itself without end stops at a fixed depth with one short RecursionError.

Left alone, Triton's interpreter wraps the RecursionError at every level in an InterpreterError whose message
is the repr of the level below: the message doubles its escapes per level and the process grows to tens of GB.
"""

from __future__ import annotations

from ..frames import KernelError
from ..versions import patcher

patch = patcher("recursion")

MAX_DEPTH = 64  # nested @triton.jit calls within one program; real kernels nest a handful


class JitRecursionError(KernelError, RecursionError):
    """A @triton.jit function nested MAX_DEPTH calls deep: it recurses without end (the kernel's bug)."""


def _root(exc: BaseException) -> BaseException:
    seen = 0
    while exc.__cause__ is not None and seen < MAX_DEPTH + 10:
        exc, seen = exc.__cause__, seen + 1
    return exc


def install() -> None:
    from triton.runtime import interpreter

    depth = [0]

    def make(original):
        def __call__(self, *args, **kwargs):
            depth[0] += 1
            try:
                if depth[0] > MAX_DEPTH:
                    raise JitRecursionError(f"@triton.jit function {self.__name__} is {MAX_DEPTH} calls deep: "
                                            "it recurses without end (a missing base case)")
                return original(self, *args, **kwargs)
            except Exception as exc:
                root = _root(exc)
                if isinstance(root, (JitRecursionError, RecursionError)) and root is not exc:
                    raise root from None  # unwrapped: the level above must not repr a growing chain
                raise
            finally:
                depth[0] -= 1

        return __call__

    patch(interpreter.InterpretedFunction, "__call__", make)
