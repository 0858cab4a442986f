"""Test data for tdebug viz: a tiled 2-D transpose with no masks on 100x70 (64x64 tiles).

Under Triton 3.6's plain interpreter this dies with SIGSEGV (the stores run far past the output);
traced by tdebug viz, the out-of-bounds lanes are drawn instead of executed.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def transpose_kernel(x_ptr, out_ptr, M, N, stride_xm, stride_om, BLOCK: tl.constexpr):
    rows = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    tile = tl.load(x_ptr + rows[:, None] * stride_xm + cols[None, :])
    tl.store(out_ptr + cols[None, :] * stride_om + rows[:, None], tile)


M, N = 100, 70
x = torch.randn(M, N)
out = torch.empty(N, M)
transpose_kernel[(triton.cdiv(M, 64), triton.cdiv(N, 64))](x, out, M, N, x.stride(0), out.stride(0), BLOCK=64)
print("transpose done")
