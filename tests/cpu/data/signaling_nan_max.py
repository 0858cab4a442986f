"""tl.maximum / tl.minimum of a signaling NaN (tdebug's poison of torch.empty memory is one: 0x7fa5a5a5) and a
number, 8 lanes a program: prints the results' NaN count, which must be 0 on either engine (a GPU's max.f32); and the
signs of max / min of -0.0 and +0.0."""

import torch
import triton
import triton.language as tl


@triton.jit
def max_min_kernel(x_ptr, y_ptr, out_ptr, B: tl.constexpr):
    offs = tl.program_id(0) * B + tl.arange(0, B)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    tl.store(out_ptr + offs, tl.maximum(x, y))
    tl.store(out_ptr + 16 + offs, tl.minimum(x, y))
    tl.store(out_ptr + 32 + offs, tl.maximum(y, x))


x = torch.full((16,), 0x7FA5A5A5, dtype=torch.int32).view(torch.float32)  # a signaling NaN
y = torch.randn(16)
out = torch.empty(48)
max_min_kernel[(2,)](x, y, out, B=8)
print("nan count", int(torch.isnan(out).sum()))

# Two zeros: +0.0 for the max whichever side it is on, -0.0 for the min (IEEE 754-2019's maximumNumber).
neg, pos = torch.full((16,), -0.0), torch.zeros(16)
max_min_kernel[(2,)](neg, pos, out, B=8)
print("zero signs", int(torch.signbit(out[:16]).sum()), int(torch.signbit(out[16:32]).sum()),
      int(torch.signbit(out[32:]).sum()))
