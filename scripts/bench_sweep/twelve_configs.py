"""A script with one autotuned kernel of twelve configs (four block sizes x three warp counts), the shape of a
real library's autotune table: `tdebug sanitize` runs it twelve times (scripts/bench_sweep.py)."""

import torch
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK": b}, num_warps=w) for b in (32, 64, 128, 256) for w in (1, 2, 4)],
                 key=["n"])
@triton.jit
def scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


n = 5000
x = torch.randn(n)
y = torch.empty_like(x)
scale_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, n)
torch.testing.assert_close(y, x * 2)
