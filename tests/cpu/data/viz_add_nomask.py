"""Test data for tdebug viz: a vector add with no masks (1000 elements, BLOCK 256: 24 lanes run off the end)."""

import torch
import triton
import triton.language as tl

import tdebug


@triton.jit
def add_nomask_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    tl.store(out_ptr + offs, x + y)


def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    add_nomask_kernel[(triton.cdiv(n, 256),)](x, y, out, n, BLOCK=256)
    return out


def make_inputs(case: tdebug.Case) -> tuple:
    (n,) = case.shape
    return tdebug.randn(case, (n,), salt=1), tdebug.randn(case, (n,), salt=2)


SPEC = tdebug.KernelSpec(name="add_nomask", launch=add, reference=lambda x, y: x + y, make_inputs=make_inputs,
                         kernel=add_nomask_kernel, dims=("N",), default_shape=(1000,), shapes=[(1000,)],
                         layouts=("contiguous",))
