"""A grouped GEMM over a pointer table, as Triton's grouped-GEMM tutorial keeps it: the groups' A, B and C base
addresses in int64 CUDA tensors, each loaded entry cast with .to(tl.pointer_type(...)). Correct; with --stale,
one group's C entry points at a tensor freed before the launch (a finding: it points into no live tensor)."""

import sys

import torch
import triton
import triton.language as tl


@triton.jit
def grouped_matmul_kernel(a_ptrs, b_ptrs, c_ptrs, sizes, group_count, BLOCK: tl.constexpr):
    g = tl.program_id(0)
    tile = tl.program_id(1)
    n = tl.load(sizes + g)
    tiles = tl.cdiv(n, BLOCK)
    if tile < tiles * tiles:
        a = tl.load(a_ptrs + g).to(tl.pointer_type(tl.float32))
        b = tl.load(b_ptrs + g).to(tl.pointer_type(tl.float32))
        c = tl.load(c_ptrs + g).to(tl.pointer_type(tl.float32))
        rm = (tile // tiles) * BLOCK + tl.arange(0, BLOCK)
        rn = (tile % tiles) * BLOCK + tl.arange(0, BLOCK)
        rk = tl.arange(0, BLOCK)
        acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
        for k0 in range(0, tl.cdiv(n, BLOCK)):
            kk = k0 * BLOCK + rk
            x = tl.load(a + rm[:, None] * n + kk[None, :], mask=(rm[:, None] < n) & (kk[None, :] < n), other=0.0)
            y = tl.load(b + kk[:, None] * n + rn[None, :], mask=(kk[:, None] < n) & (rn[None, :] < n), other=0.0)
            acc += tl.dot(x, y, input_precision="ieee")
        tl.store(c + rm[:, None] * n + rn[None, :], acc, mask=(rm[:, None] < n) & (rn[None, :] < n))


torch.manual_seed(0)
stale = "--stale" in sys.argv
sizes = [48, 33, 64]
group_A = [torch.randn(n, n, device="cuda") for n in sizes]
group_B = [torch.randn(n, n, device="cuda") for n in sizes]
group_C = [torch.empty(n, n, device="cuda") for n in sizes]
a_ptrs = torch.tensor([t.data_ptr() for t in group_A], device="cuda")
b_ptrs = torch.tensor([t.data_ptr() for t in group_B], device="cuda")
n_t = torch.tensor(sizes, device="cuda", dtype=torch.int32)
c_addresses = [t.data_ptr() for t in group_C]
if stale:  # 64 MiB: from the allocator's large pool, so the small tables allocated after it cannot reuse it
    gone = torch.empty(4096, 4096, device="cuda")
    c_addresses[1] = gone.data_ptr()
    del gone  # freed: the table still holds its address
c_ptrs = torch.tensor(c_addresses, device="cuda")
BLOCK = 16
grid = (len(sizes), max(triton.cdiv(n, BLOCK) ** 2 for n in sizes))
grouped_matmul_kernel[grid](a_ptrs, b_ptrs, c_ptrs, n_t, len(sizes), BLOCK=BLOCK)
torch.cuda.synchronize()
for i, (a, b, c) in enumerate(zip(group_A, group_B, group_C)):
    if stale and i == 1:
        continue
    ref = a.double() @ b.double()
    err = float((c.double() - ref).abs().max())
    assert err < 1e-3 * float(ref.abs().max()), (i, err)
print("ok")
