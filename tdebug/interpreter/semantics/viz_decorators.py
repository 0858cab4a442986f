"""Scripts whose kernels carry `@triton_viz.trace(...)` run their kernels plainly under tdebug's sanitizer.

triton-viz's trace wraps a kernel in its own launch path (its sanitizer computes symbolically, its
tracer replaces the grid executor), so tdebug's sanitizer would never see the accesses. Under
`tdebug sanitize`, once the script imports triton_viz, `triton_viz.trace(...)` returns the kernel it
is given unchanged and `triton_viz.launch()` (which would serve a web page and never return) says it
was skipped. What the script reads back from triton-viz's own records afterwards is then empty.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.util
import sys
from collections.abc import Iterator
from types import ModuleType

MODULE = "triton_viz"


def _unwrap(module: ModuleType) -> None:
    """Plain attributes of triton-viz, not Triton internals: set directly (versions.py is for Triton's)."""

    def trace(*args, **kwargs):
        def decorator(kernel):
            return getattr(kernel, "fn", kernel) if type(kernel).__name__ == "TritonTrace" else kernel

        return decorator

    def launch(*args, **kwargs):
        print("tdebug: triton_viz.launch() skipped under tdebug sanitize (tdebug viz draws the accesses)",
              file=sys.stderr)

    module.trace = trace
    if hasattr(module, "launch"):
        module.launch = launch


@contextlib.contextmanager
def _builder_kept() -> Iterator[None]:
    """triton-viz rebinds the interpreter's builder when imported (a thread-local grid index: a read-only
    `grid_idx` property and its own `set_grid_idx`), which breaks tdebug's wrappers of the builder; with
    its trace set aside it never runs a kernel, so the builder is put back as it was."""
    from triton.runtime import interpreter

    owners = (interpreter.InterpreterBuilder, interpreter.interpreter_builder)
    before = [dict(vars(owner)) for owner in owners]
    try:
        yield
    finally:
        for owner, kept in zip(owners, before):
            for name in set(vars(owner)) - set(kept):
                delattr(owner, name)
            for name, value in kept.items():
                if vars(owner).get(name, _ABSENT) is not value:
                    setattr(owner, name, value)


_ABSENT = object()


class _AfterImport(importlib.abc.MetaPathFinder):
    """Unwraps triton_viz right after the script imports it (importing it ourselves costs seconds, and
    triton-viz 3.0 does not import at all on Triton 3.9)."""

    def find_spec(self, name, path=None, target=None):
        if name != MODULE:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def exec_and_unwrap(module: ModuleType) -> None:
            with _builder_kept():
                exec_module(module)
            _unwrap(module)

        spec.loader.exec_module = exec_and_unwrap
        return spec


def install() -> None:
    if MODULE in sys.modules:
        _unwrap(sys.modules[MODULE])
    elif not any(isinstance(f, _AfterImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterImport())
