"""A vector add whose loads have no mask: n=1000, BLOCK=256 reads 24 elements past x and y."""

import torch
import triton
import triton.language as tl


@triton.jit
def add_load_nomask(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    tl.store(out_ptr + offs, x + y, mask=offs < n)


n = 1000
x = torch.randn(n, device="cuda")
y = torch.randn(n, device="cuda")
out = torch.empty_like(x)
add_load_nomask[(triton.cdiv(n, 256),)](x, y, out, n, BLOCK=256)
torch.cuda.synchronize()
print("max err", (out - (x + y)).abs().max().item())
