"""A correct histogram: each program adds its block's counts to the global bins with tl.atomic_add."""

import torch
import triton
import triton.language as tl

BINS = 16


@triton.jit
def histogram_atomic(x_ptr, bins_ptr, n, BLOCK: tl.constexpr, BINS: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    counts = tl.histogram(x, BINS, mask=mask)
    tl.atomic_add(bins_ptr + tl.arange(0, BINS), counts)


n = 4000
x = torch.randint(0, BINS, (n,), device="cuda", dtype=torch.int32)
bins = torch.zeros(BINS, device="cuda", dtype=torch.int32)
histogram_atomic[(triton.cdiv(n, 512),)](x, bins, n, BLOCK=512, BINS=BINS)
torch.cuda.synchronize()
expected = torch.bincount(x.long(), minlength=BINS).to(torch.int32)
assert torch.equal(bins, expected), (bins, expected)
print("ok")
