"""Block-pointer and tensor-descriptor accesses reach the memory ops with a mask like any other access.

Triton's interpreter (3.6 to 3.8) turns a `tl.make_block_ptr` load or store, and a 3.6 descriptor
load, into a masked load/store whose mask is a bare numpy array instead of a TensorHandle; anything
wrapping the memory ops then fails on it (`'numpy.dtypes.BoolDType' object has no attribute
'primitive_bitwidth'`). Here the mask comes back as a TensorHandle, and a block pointer's mask also
records which dimensions the access left out of `boundary_check`, so a bounds finding can say so. The
pointers keep the provenance of the block's base (provenance.py): a lane past the end of its tensor is out of
bounds wherever the allocator put the next tensor, the same on a GPU's caching allocator as on the CPU's.
Triton 3.9 removed block pointers (`make_block_ptr` raises) and already wraps descriptor masks.
"""

from __future__ import annotations

import numpy as np

from ..hooks.provenance import inherit
from ..versions import patcher

patch = patcher("block_pointers")

UNCHECKED = "tdebug.unchecked_dims"  # TensorHandle.attr key: block dims outside boundary_check


def unchecked_dims(mask) -> tuple[int, ...] | None:
    """The dimensions a block-pointer access left out of boundary_check (None: not a block pointer)."""
    attr = getattr(mask, "attr", None)
    return attr.get(UNCHECKED) if attr else None


def install() -> None:
    import triton.language as tl
    from triton.runtime import interpreter

    def as_handle(mask):
        return interpreter.TensorHandle(mask, tl.int1) if isinstance(mask, np.ndarray) else mask

    block = getattr(interpreter, "BlockPointerHandle", None)
    if block is not None:
        def make_block(original):
            def materialize_pointers(self, boundary_check):
                ptrs, mask = original(self, boundary_check)
                inherit(ptrs, (self.base,))
                mask = as_handle(mask)
                checked = set(boundary_check or ())
                mask.attr = {**mask.attr, UNCHECKED: tuple(d for d in range(len(self.block_shape))
                                                           if d not in checked)}
                return ptrs, mask

            return materialize_pointers

        patch(block, "materialize_pointers", make_block)

    descriptor = getattr(interpreter, "TensorDescHandle", None)
    if descriptor is not None:
        def make_descriptor(original):
            def materialize_pointers(self, *args, **kwargs):
                ptrs, mask = original(self, *args, **kwargs)
                inherit(ptrs, (self.base,))
                return ptrs, as_handle(mask)

            return materialize_pointers

        patch(descriptor, "materialize_pointers", make_descriptor)
