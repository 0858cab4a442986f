"""A catalogue-style add whose store has no mask: out of bounds for n=1000, clean for n=1024 (a multiple
of BLOCK). Used by the GPU tests (memcheck case attribution, guard bands)."""

import torch
import triton
import triton.language as tl

import tdebug


@triton.jit
def add_store_nomask(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y)


def add(x, y):
    out = torch.empty_like(x)
    n = x.numel()
    add_store_nomask[(triton.cdiv(n, 256),)](x, y, out, n, BLOCK=256)
    return out


def make_inputs(case):
    (n,) = case.shape
    return tdebug.randn(case, (n,), salt=1), tdebug.randn(case, (n,), salt=2)


SPEC = tdebug.KernelSpec(name="add_store_nomask", launch=add, reference=lambda x, y: x + y,
                         make_inputs=make_inputs, kernel=add_store_nomask, dims=("N",),
                         default_shape=(1000,), shapes=[(1000,), (1024,)], layouts=("contiguous",))
