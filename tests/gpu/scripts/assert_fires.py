"""tl.device_assert that fires in some lanes (values >= 3 where the kernel assumes < 3)."""

import torch
import triton
import triton.language as tl


@triton.jit
def checked_scale(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.device_assert(x < 3.0, "x too big")
    tl.store(out_ptr + offs, x * 2, mask=mask)


n = 1000
x = torch.zeros(n, device="cuda")
x[700] = 5.0
x[701] = 7.0
out = torch.empty_like(x)
checked_scale[(triton.cdiv(n, 256),)](x, out, n, BLOCK=256)
torch.cuda.synchronize()
print("not reached under TRITON_DEBUG=1")
