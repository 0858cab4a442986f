"""A kernel the CPU interpreter cannot run: PTX inline assembly (as fast-math kernels use for rcp/ex2)."""

import torch
import triton
import triton.language as tl


@triton.jit
def fast_reciprocal_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=1.0)
    y = tl.inline_asm_elementwise("rcp.approx.f32 $0, $1;", "=r,r", [x], dtype=tl.float32, is_pure=True, pack=1)
    tl.store(out_ptr + offs, y, mask=mask)


x = torch.rand(300) + 0.5
out = torch.empty_like(x)
fast_reciprocal_kernel[(3,)](x, out, 300, BLOCK=128)
assert torch.allclose(out, 1 / x, rtol=1e-4)
