"""Code that torch.compile must run eagerly under tdebug (a Triton launch under the interpreter, a poisoned
torch.empty): torch._dynamo.disable applied when torch._dynamo is first imported, not before (importing it
costs as much as importing torch, and most programs never compile)."""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
from collections.abc import Callable
from typing import Any

REASON = "tdebug runs Triton launches and torch.empty eagerly, under its interpreter and checks (a graph break)"

_CALLBACKS: list[Callable[[], None]] = []


def loaded() -> bool:
    """Whether torch._dynamo (torch.compile's tracer) is imported in this process."""
    module = sys.modules.get("torch._dynamo")
    return module is not None and hasattr(module, "disable")


def eager(fn: Callable) -> Callable:
    """fn made opaque to dynamo: a traced call of it is a graph break, and it runs eagerly with dynamo's
    frame hook off (so nothing it calls is traced either). Only once torch._dynamo is loaded."""
    import torch._dynamo

    return torch._dynamo.disable(fn, reason=REASON)


def when_loaded(callback: Callable[[], None]) -> None:
    """Call callback now if torch._dynamo is imported, else right after it is (once, however often asked)."""
    if loaded():
        callback()
        return
    if callback not in _CALLBACKS:
        _CALLBACKS.append(callback)
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())


def _fire() -> None:
    callbacks = list(_CALLBACKS)
    _CALLBACKS.clear()
    for callback in callbacks:
        callback()


class _Loader(importlib.abc.Loader):
    """torch._dynamo's own loader, then the callbacks."""

    def __init__(self, loader: Any) -> None:
        self.loader = loader

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module) -> None:
        self.loader.exec_module(module)
        _fire()


class _Finder(importlib.abc.MetaPathFinder):
    """Finds torch._dynamo through the other finders and wraps its loader."""

    def find_spec(self, fullname: str, path=None, target=None):
        if fullname != "torch._dynamo":
            return None
        sys.meta_path.remove(self)  # the other finders find it; one import, and the hook's work is done
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            sys.meta_path.insert(0, self)
            return spec
        spec.loader = _Loader(spec.loader)
        return spec
