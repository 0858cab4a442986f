"""An autotuned kernel (two configs) on a size read from standard input: sanitize runs it once per config."""

import sys

import torch
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 128})], key=["n"])
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2, mask=m)

n = int(sys.stdin.read().strip())
x = torch.randn(n)
k[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, n)
print("n =", n)
