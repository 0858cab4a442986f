"""A softmax whose exponentials are cast to fp16 before the sum: exp(12) = 162755 overflows fp16 (max 65504) to
inf, inf / inf is NaN in the output. The NaN's origin is the cast line."""

import torch
import triton
import triton.language as tl


@triton.jit
def softmax_fp16_sum(x_ptr, out_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=-float("inf"))
    e = tl.exp(x - tl.min(tl.where(mask, x, float("inf")), axis=0)).to(tl.float16)  # the overflow
    s = tl.sum(e.to(tl.float32), axis=0)
    tl.store(out_ptr + row * N + cols, e.to(tl.float32) / s, mask=mask)


x = torch.zeros(4, 64, device="cuda")
x[:, 1] = 12.0
out = torch.empty_like(x)
softmax_fp16_sum[(4,)](x, out, 64, BLOCK=64)
torch.cuda.synchronize()
print("nan in output:", bool(out.isnan().any()))
