"""A histogram built with load-add-store instead of an atomic: programs race on the bins in global memory.

Every program loads a block of values, counts them into bins with tl.histogram, then loads the global bins,
adds its counts and stores them back: two programs that do this at once lose each other's counts.
compute-sanitizer's racecheck sees shared memory only, so no GPU tool reports it.
"""

import torch
import triton
import triton.language as tl

BINS = 16


@triton.jit
def histogram_racy(x_ptr, bins_ptr, n, BLOCK: tl.constexpr, BINS: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    counts = tl.histogram(x, BINS, mask=mask)
    b = tl.arange(0, BINS)
    old = tl.load(bins_ptr + b)
    tl.store(bins_ptr + b, old + counts)  # bug: read-modify-write of shared bins without an atomic


n = 4000
x = torch.randint(0, BINS, (n,), device="cuda", dtype=torch.int32)
bins = torch.zeros(BINS, device="cuda", dtype=torch.int32)
histogram_racy[(triton.cdiv(n, 512),)](x, bins, n, BLOCK=512, BINS=BINS)
torch.cuda.synchronize()
print("total", int(bins.sum()), "of", n)
