"""A scale kernel whose grid forgets the last (partial) block: check must say 'never written'."""

import torch
import triton
import triton.language as tl

import tdebug


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, 2 * tl.load(x_ptr + offs, mask=m), mask=m)


def scale(x):
    out = torch.empty_like(x)
    n = x.numel()
    scale_kernel[(n // 128,)](x, out, n, BLOCK=128)  # floor: the partial last block is skipped
    return out


SPEC = tdebug.KernelSpec(
    name="scale_skip_last", launch=scale, reference=lambda x: 2 * x,
    make_inputs=lambda case: (tdebug.randn(case, case.shape, layout="contiguous"),),
    kernel=scale_kernel, default_shape=(1000,), shapes=[(1000,)], layouts=("contiguous",), dtypes=("fp32",),
)
