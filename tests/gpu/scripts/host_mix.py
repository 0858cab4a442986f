"""Host code that mixes the script's own CUDA tensors with kernel outputs between launches (as bitsandbytes'
blockwise quantisation, FLA's recurrent state and mamba's selective state update do): a quantisation table on the
GPU, absmax per block, the output dequantised by torch, a state updated in place and read back by torch, a result
that goes to numpy. Correct: clean, fully checked."""

import numpy as np
import torch
import triton
import triton.language as tl


@triton.jit
def quantize_blockwise(x_ptr, code_ptr, absmax_ptr, out_ptr, n, BLOCK: tl.constexpr, CODE: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    absmax = tl.max(tl.abs(x), axis=0)
    tl.store(absmax_ptr + pid, absmax)
    scaled = x / tl.maximum(absmax, 1e-12)
    code = tl.load(code_ptr + tl.arange(0, CODE))
    dist = tl.abs(scaled[:, None] - code[None, :])
    best = tl.argmin(dist, axis=1)
    tl.store(out_ptr + offs, best.to(tl.uint8), mask=mask)


@triton.jit
def state_update(state_ptr, x_ptr, decay_ptr, out_ptr, D: tl.constexpr):
    row = tl.program_id(0)
    d = tl.arange(0, D)
    s = tl.load(state_ptr + row * D + d)
    x = tl.load(x_ptr + row * D + d)
    a = tl.load(decay_ptr + row)
    s = s * a + x
    tl.store(state_ptr + row * D + d, s)
    tl.store(out_ptr + row, tl.sum(s, axis=0))


torch.manual_seed(0)
dev = "cuda"
n, BLOCK = 1000, 128
code = torch.linspace(-1, 1, 256, device=dev)
x = torch.randn(n, device=dev)
blocks = triton.cdiv(n, BLOCK)
absmax = torch.empty(blocks, device=dev)
q = torch.empty(n, dtype=torch.uint8, device=dev)
quantize_blockwise[(blocks,)](x, code, absmax, q, n, BLOCK=BLOCK, CODE=256)
# host code between launches: the script's own CUDA tensors with the kernel's outputs
deq = code[q.long()] * absmax.repeat_interleave(BLOCK)[:n]
assert deq.device.type == "cuda" and absmax.device.type == "cuda"
assert float((deq - x).abs().max()) <= float(absmax.max()) * (2 / 255) + 1e-6

R, D = 8, 64
state = torch.randn(R, D, device=dev)
before = state.clone()
decay = torch.rand(R, device=dev)
out = torch.zeros(R, device=dev)
for _step in range(3):
    inp = torch.randn(R, D, device=dev) + out[:, None]  # the last launch's output, on the GPU
    state_update[(R,)](state, inp, decay, out, D=D)
    before = before * decay[:, None] + inp
    torch.testing.assert_close(state, before, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(out, before.sum(-1), rtol=1e-4, atol=1e-4)
total = np.asarray(out.cpu().numpy(), dtype=np.float64).sum()
assert np.isfinite(total)
print("ok")
