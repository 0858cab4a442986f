"""Which tensor argument a pointer was computed from: its provenance, carried through pointer arithmetic.

A pointer argument's handle is tagged with the storage of the tensor it points into; every builder op whose
result is a pointer (addptr, splat, broadcast, reshape, expand_dims, select, bitcast, ...) passes the tag on
when its pointer operands agree. The sanitizer then judges an access against the storage its pointer came
from: a lane of `x_ptr + offs` that runs past x is out of bounds even where the allocator happened to put
another argument right after x. That makes findings independent of where tensors lie in memory (the same
findings run after run) and keeps an unmasked store from writing into a neighbouring tensor. Pointers built
from integers (pointer tables) carry no tag: the live-pointer checks judge them (sanitize/live.py).
"""

from __future__ import annotations

from ..versions import patcher

patch = patcher("provenance")

TAG = "_tdebug_from"  # handle attribute: the data_ptr of the storage the pointer was derived from
EXTENTS: dict[int, int] = {}  # a tag -> its storage's size in bytes (as of the latest launch that passed it)


def tag(handle, tensor) -> None:
    """Tag a pointer argument's handle with the storage of the tensor it points into."""
    storage = tensor.untyped_storage()
    ptr = storage.data_ptr()
    setattr(handle, TAG, ptr)
    EXTENTS[ptr] = storage.nbytes()


def origin(handle) -> int | None:
    return getattr(handle, TAG, None)


def inherit(out, inputs) -> None:
    """Give `out` (a pointer handle, or a tuple of them) the tag its pointer inputs agree on."""
    tag = None
    for v in inputs:
        if isinstance(v, (list, tuple)):
            found = [getattr(x, TAG) for x in v if hasattr(x, TAG)]
        else:
            one = getattr(v, TAG, None)
            if one is None:
                continue
            found = (one,)
        for t in found:
            if tag is None:
                tag = t
            elif t != tag:
                return  # pointers into different tensors: no provenance
    if tag is None:
        return
    for o in out if isinstance(out, tuple) else (out,):
        dtype = getattr(o, "dtype", None)
        if dtype is not None and getattr(dtype, "is_ptr", _no)():
            setattr(o, TAG, tag)


def _no() -> bool:
    return False


def _passes_on(original):
    def op(*args, **kwargs):
        out = original(*args, **kwargs)
        if out is not None:
            inherit(out, args + tuple(kwargs.values()) if kwargs else args)
        return out

    return op


# Builder ops that make a pointer from pointers (int_to_ptr makes one from an integer: no tag).
POINTER_OPS = ("create_addptr", "create_splat", "create_broadcast", "create_expand_dims", "create_reshape",
               "create_trans", "create_select", "create_bitcast", "create_cat", "create_join", "create_split",
               "create_unsplat", "create_gather")


def install() -> None:
    from triton.runtime import interpreter

    def implicit_cvt(original):
        def _implicit_cvt(arg):
            out = original(arg)
            base = getattr(arg, "base", arg)  # TensorWrapper
            if hasattr(base, "untyped_storage") and hasattr(out, "handle"):
                tag(out.handle, base)
            return out

        return _implicit_cvt

    patch(interpreter, "_implicit_cvt", implicit_cvt)
    builder = interpreter.interpreter_builder
    for name in POINTER_OPS:
        if hasattr(builder, name):
            patch(builder, name, _passes_on)
