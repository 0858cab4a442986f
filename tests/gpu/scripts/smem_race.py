"""A shared-memory race for racecheck: every thread stores to and loads from one word of the kernel's
shared memory (inline PTX, no barrier). Triton's own code never does this; the script exists to give
racecheck something to find and the parser a real racecheck log."""

import torch
import triton
import triton.language as tl


@triton.jit
def smem_race(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    total = tl.sum(x, axis=0)  # a cross-warp reduction: Triton allocates shared memory (global_smem)
    bits = x.to(tl.int32, bitcast=True)
    y = tl.inline_asm_elementwise(
        "st.shared.b32 [global_smem], $1;\n\tld.shared.b32 $0, [global_smem];",
        "=r,r", [bits], dtype=tl.int32, is_pure=False, pack=1)
    tl.store(out_ptr + offs, y.to(tl.float32, bitcast=True) + total)


x = torch.randn(1024, device="cuda")
out = torch.empty_like(x)
smem_race[(1,)](x, out, BLOCK=1024, num_warps=4)
torch.cuda.synchronize()
print("done")
