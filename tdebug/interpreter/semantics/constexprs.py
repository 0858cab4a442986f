"""A `tl.dtype` that one jit function passes to another reads as the constexpr compiled Triton makes of it:
`dtype.value` is the dtype itself (the code generator wraps every dtype, int, float and bool argument of a jit
call in tl.constexpr; the interpreter passes the bare object, so `dtype.value` raised AttributeError)."""

from __future__ import annotations

from ..versions import patcher

patch = patcher("constexprs")


def _value(self):
    return self


def install() -> None:
    """For the length of each launch (Triton's patch scope), tl.dtype has the `value` of a constexpr."""
    import triton.language as tl
    from triton.runtime import interpreter

    def make(original):
        def _patch_lang(*args, **kwargs):
            scope = original(*args, **kwargs)
            if not isinstance(getattr(tl.core.dtype, "value", None), property):
                scope.set_attr(tl.core.dtype, "value", property(_value))
            return scope

        return _patch_lang

    patch(interpreter, "_patch_lang", make)
