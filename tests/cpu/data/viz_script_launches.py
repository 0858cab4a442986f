"""Test data for tdebug viz: a plain script (no SPEC) that launches two kernels, one on a 3-D tensor."""

import torch
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


@triton.jit
def batched_fill_kernel(out_ptr, stride_b, stride_m, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    b = tl.program_id(0)
    rows = tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    ptrs = out_ptr + b * stride_b + rows[:, None] * stride_m + cols[None, :]
    tl.store(ptrs, tl.zeros((BLOCK_M, BLOCK_N), tl.float32) + b, mask=(rows[:, None] < M) & (cols[None, :] < N))


x = torch.arange(100, dtype=torch.float32)
y = torch.empty_like(x)
scale_kernel[(triton.cdiv(100, 64),)](x, y, 100, BLOCK=64)
z = torch.empty((3, 5, 6), dtype=torch.float32)
batched_fill_kernel[(3,)](z, z.stride(0), z.stride(1), 5, 6, BLOCK_M=8, BLOCK_N=8)
print("script done", float(y.sum()), float(z.sum()))
