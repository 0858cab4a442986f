"""Right interpreted, wrong compiled: each program adds the last element that the previous program stored
(a running carry through global memory) with no synchronisation between programs. The interpreter runs
programs one after another, so program i sees what program i-1 stored; on a GPU they run at once and most
read the carry before it is written. (A correct scan needs a decoupled look-back with atomics and a spin on a
flag, or one program.)"""

import torch
import triton
import triton.language as tl


@triton.jit
def carry_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    carry = tl.load(out_ptr + pid * BLOCK - 1, mask=pid > 0, other=0)  # the previous program's last sum
    tl.store(out_ptr + offs, tl.cumsum(x, axis=0) + carry, mask=mask)


n = 128 * 256
x = torch.randint(0, 10, (n,), device="cuda", dtype=torch.int32)
out = torch.zeros(n, device="cuda", dtype=torch.int32)
carry_kernel[(triton.cdiv(n, 128),)](x, out, n, BLOCK=128)
torch.cuda.synchronize()
ref = torch.cumsum(x.long(), 0).int()
print("elements equal to the running sum:", int((out == ref).sum()), "of", n)
