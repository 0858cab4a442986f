"""A FlagGems-style softmax: jit helpers reached as a global name and as another module's attribute, `and` masks,
autotune over the block size; fp32 on CUDA tensors, checked in float64. Correct: clean, divergence compared."""

import gpu_helpers as tle
import torch
import triton
import triton.language as tl


@triton.jit
def exp_shifted(x, m):
    return tl.exp(x - m)


@triton.autotune(configs=[triton.Config({"BLOCK_N": 128}, num_warps=4), triton.Config({"BLOCK_N": 256}, num_warps=8)],
                 key=["N"])
@triton.jit
def softmax_kernel(out_ptr, in_ptr, M, N, BLOCK_N: tl.constexpr):
    row = tle.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = (row < M) and (cols < N)
    x = tl.load(in_ptr + row * N + cols, mask=mask, other=-float("inf"))
    m = tle.row_max(x, 0)
    e = exp_shifted(x, m)
    tl.store(out_ptr + row * N + cols, e / tl.sum(e, axis=0), mask=mask)


M, N = 37, 100
x = torch.randn(M, N, device="cuda")
out = torch.empty_like(x)
softmax_kernel[(M,)](out, x, M, N)
torch.testing.assert_close(out.double(), torch.softmax(x.double(), -1), rtol=1e-5, atol=1e-6)
print("ok")
