"""A script whose Triton kernel never returns (a data-dependent loop bound it never reaches)."""

import torch
import triton
import triton.language as tl


@triton.jit
def spin_kernel(x_ptr, n):
    i = tl.load(x_ptr)
    while i < n:
        i = i * 1
    tl.store(x_ptr, i)


x = torch.zeros(1, dtype=torch.int32)
print("launching", flush=True)
spin_kernel[(1,)](x, 10)
