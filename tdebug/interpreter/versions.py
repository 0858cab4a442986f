"""The one place that touches Triton's internals: every patch of an interpreter, autotuner or language
object goes through `patch`, and wrappers read a call's arguments by name through `bind`, so a parameter
that a Triton release adds or moves (3.9's `is_volatile` on create_masked_load) does not break them."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import triton


def _version_tuple(text: str) -> tuple[int, ...]:
    parts = []
    for piece in text.split("+")[0].split(".")[:3]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


TRITON_VERSION: str = triton.__version__
TRITON: tuple[int, ...] = _version_tuple(TRITON_VERSION)

# (id(owner), attribute name) -> (owner, name, the original), so tests can restore Triton as it was.
_ORIGINALS: dict[tuple[int, str], tuple[Any, str, Any]] = {}


def patch(owner: Any, name: str, make: Callable[[Callable], Callable]) -> Callable:
    """Replace owner.name with make(original) and remember the original; returns the replacement."""
    original = getattr(owner, name)
    _ORIGINALS.setdefault((id(owner), name), (owner, name, original))
    replacement = make(original)
    setattr(owner, name, replacement)
    return replacement


def bind(original: Callable, args: tuple, kwargs: dict) -> inspect.BoundArguments:
    """A call's arguments by name, defaults applied, whatever the running version's signature is;
    call `original(*bound.args, **bound.kwargs)` after changing `bound.arguments[...]`."""
    bound = _signature(original).bind(*args, **kwargs)
    bound.apply_defaults()
    return bound


_SIGNATURES: dict[Any, inspect.Signature] = {}


def _signature(fn: Callable) -> inspect.Signature:
    key = getattr(fn, "__func__", fn)
    sig = _SIGNATURES.get(key)
    if sig is None:
        sig = _SIGNATURES[key] = inspect.signature(fn)
    return sig


def unpatch_all() -> None:
    """Put back every original that `patch` replaced (for tests)."""
    for owner, name, original in _ORIGINALS.values():
        setattr(owner, name, original)
    _ORIGINALS.clear()
