"""A K loop over `range(0, tl.cdiv(K, BLOCK))`: plain Triton 3.6 under numpy >= 2.4 raises "only
0-dimensional arrays can be converted to Python scalars" here; tdebug's patches make it run."""

import torch
import triton
import triton.language as tl


@triton.jit
def row_sums_kernel(x_ptr, out_ptr, K, BLOCK: tl.constexpr):
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK)):
        offs = k * BLOCK + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + offs, mask=offs < K, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0))


x = torch.randn(100)
out = torch.empty(1)
row_sums_kernel[(1,)](x, out, x.numel(), BLOCK=16)
assert torch.allclose(out[0], x.sum(), rtol=1e-5, atol=1e-5), (out, x.sum())
