"""A correct in-place kernel (x += 1): its reference must see x as it was before the launch."""

import torch
import triton
import triton.language as tl

import tdebug


@triton.jit
def add_one_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1.0, mask=mask)


def add_one_(x: torch.Tensor) -> torch.Tensor:
    n = x.numel()
    add_one_kernel[(triton.cdiv(n, 128),)](x, n, BLOCK=128)
    return x


SPEC = tdebug.KernelSpec(
    name="add_one_",
    launch=add_one_,
    reference=lambda x: x + 1.0,
    make_inputs=lambda case: (tdebug.randn(case, case.shape, salt=1),),
    kernel=add_one_kernel,
    dims=("N",),
    default_shape=(1000,),
    shapes=[(1000,), (257,)],
    quick_shapes=[(1000,), (257,)],
    layouts=("contiguous",),
)
