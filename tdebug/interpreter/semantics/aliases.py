"""Builtins reached through a module-level alias (`my_cast = tl.cast`, `my_tanh = libdevice.tanh`, as
unsloth writes them) work inside interpreted kernels, as they do in compiled Triton.

Triton's interpreter makes `tl.*` callable inside a kernel by swapping the attributes of the `tl`
modules for versions bound to its semantic, for the length of a launch (`_patch_lang`). A name bound
to a builtin at import time still holds the unbound original, which raises "Did you forget to add
@triton.jit ?". Here, each time the interpreter patches the language for a kernel or a device
function, the names of that function's module that hold a builtin are patched too, in the same scope,
so they are restored with the rest when the launch ends.
"""

from __future__ import annotations

from operator import itemgetter
from typing import Any

from ..versions import patcher

patch = patcher("aliases")


class _Namespace:
    """A module's globals dict seen as an object, so Triton's patch scope can set and restore names in it."""

    def __init__(self, names: dict[str, Any]) -> None:
        object.__setattr__(self, "_names", names)

    def __getattr__(self, name: str) -> Any:
        try:
            return self._names[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name: str, value: Any) -> None:
        self._names[name] = value

    def __delattr__(self, name: str) -> None:
        del self._names[name]


_BUILTIN: dict[int, tuple[Any, bool]] = {}  # id(object) -> (the object, is it a Triton builtin?)
_MAX_BUILTIN = 1 << 16  # objects remembered, at most (emptied past it)


def _is_builtin(value: Any) -> bool:
    """tl.core.is_builtin(value), remembered per object: the flag is set when Triton defines a builtin, and
    asking it of a module whose `__getattr__` is Python (torch's) costs a microsecond or more, at every launch."""
    found = _BUILTIN.get(id(value))
    if found is not None and found[0] is value:
        return found[1]
    import triton.language as tl

    if len(_BUILTIN) >= _MAX_BUILTIN:
        _BUILTIN.clear()
    flag = bool(tl.core.is_builtin(value))
    _BUILTIN[id(value)] = (value, flag)  # (held: its id is not reused while remembered)
    return flag


def patch_aliases(fn, scope) -> None:
    """Point every module-level name of fn that holds a builtin at its interpreted version."""
    from triton.runtime import interpreter

    names = fn.__globals__
    changes = scope._changes
    # The objects fn's globals hold that the interpreter has just swapped out (most modules hold none: `tl` only)
    held = set(map(id, names.values())).intersection(map(id, map(itemgetter(2), changes)))
    held.discard(id(interpreter._MISSING))
    # What the interpreter swapped in for each of them: the original -> its replacement
    replaced = {id(original): getattr(owner, name) for owner, name, original in changes
                if id(original) in held} if held else {}
    namespace = _Namespace(names)
    known = _BUILTIN.get
    for name, value in list(names.items()):
        key = id(value)
        if key in replaced and replaced[key] is not value:
            scope.set_attr(namespace, name, replaced[key])
            continue
        found = known(key)  # (_is_builtin's lookup, inline: once per global per launch)
        if found[1] if found is not None and found[0] is value else _is_builtin(value):
            interpreter._patch_attr(namespace, name, value, interpreter.interpreter_builder, scope)


def install() -> None:
    from triton.runtime import interpreter

    def make(original):
        def _patch_lang(fn):
            scope = original(fn)
            patch_aliases(fn, scope)
            return scope

        return _patch_lang

    patch(interpreter, "_patch_lang", make)
