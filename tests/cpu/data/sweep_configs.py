"""An autotuned kernel whose grid is sized for BLOCK 64 whatever config runs: under BLOCK 32 the second half of
each 64-element stretch is never written (an unwritten finding), under 64 and 128 the output is right (128 runs
idle programs), and with `crash` or `hang` as argument the run under BLOCK 128 dies by SIGSEGV or never ends
after its launch. sanitize runs it once per config (tests/cpu/test_script_sweep.py)."""

import os
import signal
import sys
import time

import torch
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK": b}) for b in (32, 64, 128, 256)], key=["n"])
@triton.jit
def double_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


n = 1000
x = torch.randn(n)
y = torch.empty_like(x)
double_kernel[(triton.cdiv(n, 64),)](x, y, n)
block = double_kernel.best_config.kwargs["BLOCK"]
print(f"ran BLOCK={block}", flush=True)
if block == 128 and sys.argv[1:] == ["crash"]:
    os.kill(os.getpid(), signal.SIGSEGV)
if block == 128 and sys.argv[1:] == ["hang"]:
    time.sleep(3600)
