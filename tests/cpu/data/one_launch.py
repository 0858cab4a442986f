"""One small launch of a correct kernel: what start-up costs are measured on (tests/cpu/test_startup.py)."""

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


x = torch.randn(100)
y = torch.randn(100)
out = torch.empty(100)
add_kernel[(1,)](x, y, out, 100, BLOCK=128)
assert torch.equal(out, x + y)
