"""Reads a torch.empty buffer nothing has written (the bias was meant to be zeroed first)."""

import torch
import triton
import triton.language as tl


@triton.jit
def add_bias(x_ptr, bias_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    b = tl.load(bias_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + b, mask=mask)


n = 1000
x = torch.randn(n, device="cuda")
bias = torch.empty(n, device="cuda")  # bug: never written
out = torch.empty_like(x)
add_bias[(triton.cdiv(n, 256),)](x, bias, out, n, BLOCK=256)
torch.cuda.synchronize()
print("done")
