"""An autotuned kernel whose grid was computed for the first of three configs (BLOCK=64) instead of from META:
under BLOCK=32 and BLOCK=16 half and three quarters of the output are left unwritten (the fix: grid =
lambda META: (triton.cdiv(n, META['BLOCK']),)). Compiled, the autotuner picks whichever config is fastest."""

import torch
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 32}), triton.Config({"BLOCK": 16})],
                 key=["n"])
@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


n = 1000
x = torch.randn(n, device="cuda")
out = torch.empty(n, device="cuda")
scale_kernel[(triton.cdiv(n, 64),)](x, out, n)
torch.cuda.synchronize()
print("done")
