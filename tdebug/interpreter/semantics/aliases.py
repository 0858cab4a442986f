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


def patch_aliases(fn, scope) -> None:
    """Point every module-level name of fn that holds a builtin at its interpreted version."""
    import triton.language as tl
    from triton.runtime import interpreter

    names = fn.__globals__
    held = set(map(id, names.values()))
    # What the interpreter has just swapped in, for the objects fn's globals hold: the original -> its replacement.
    replaced = {id(original): getattr(owner, name) for owner, name, original in scope._changes
                if id(original) in held and original is not interpreter._MISSING}
    namespace = _Namespace(names)
    for name, value in list(names.items()):
        if id(value) in replaced and replaced[id(value)] is not value:
            scope.set_attr(namespace, name, replaced[id(value)])
        elif tl.core.is_builtin(value):
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
