"""Correct: masked 2-D loads from a non-contiguous 129x127 view of a 129x300 tensor (and a transposed one).

The view does not own the gap between its rows; every lane that reaches past a row is masked off, so
nothing here is out of bounds (triton-viz's symbolic sanitizer reports a false out-of-bounds on this).
"""

import torch
import triton
import triton.language as tl


@triton.jit
def scale_2d(x_ptr, out_ptr, M, N, stride_xm, stride_xn, stride_om, stride_on,
             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(x_ptr + rm[:, None] * stride_xm + rn[None, :] * stride_xn, mask=mask)
    tl.store(out_ptr + rm[:, None] * stride_om + rn[None, :] * stride_on, x * 2.0, mask=mask)


def scale(x):
    M, N = x.shape
    out = torch.empty((M, N), device=x.device, dtype=x.dtype)
    grid = (triton.cdiv(M, 32), triton.cdiv(N, 32))
    scale_2d[grid](x, out, M, N, x.stride(0), x.stride(1), out.stride(0), out.stride(1), BLOCK_M=32, BLOCK_N=32)
    return out


base = torch.randn(129, 300, device="cuda")
view = base[:, 5:132]  # 129 x 127, row stride 300
for x in (view, base[:127, :129].t()):
    out = scale(x)
    torch.cuda.synchronize()
    assert torch.allclose(out, x * 2.0), (out - x * 2.0).abs().max()
print("ok")
