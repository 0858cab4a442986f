"""int32 arithmetic that overflows: a flat index row * stride computed in int32 (debug mode's check)."""

import torch
import triton
import triton.language as tl


@triton.jit
def gather_rows(x_ptr, out_ptr, row, stride, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    start = row * stride  # int32 * int32: overflows for row=70000, stride=40000
    x = tl.load(x_ptr + (start % 1024) + offs)
    tl.store(out_ptr + offs, x)


x = torch.randn(2048, device="cuda")
out = torch.empty(128, device="cuda")
gather_rows[(1,)](x, out, 70000, 40000, BLOCK=128)
torch.cuda.synchronize()
print("done")
