"""Integer wraparound under tdebug's overflow check: `unsigned` adds packed uint32 keys that wrap by design (a
segmented scan, as Liger's MoE kernel does): clean, and equal to numpy's modular result; `signed` adds int32
values past INT32_MAX: an overflow finding."""

import sys

import numpy as np
import torch
import triton
import triton.language as tl


@triton.jit
def _keyed_add(x, y):
    kx = x & 0xFFFF0000
    ky = y & 0xFFFF0000
    return tl.where(kx == ky, x + y - kx, y)  # x + y wraps past 2**32 for keys >= 0x8000


@triton.jit
def keyed_scan_kernel(keys_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    keys = tl.load(keys_ptr + offs).to(tl.uint32)
    runs = tl.associative_scan((keys << 16) | 1, 0, _keyed_add)
    tl.store(out_ptr + offs, (runs & 0xFFFF).to(tl.int32))


@triton.jit
def add_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, x + x)  # int32: wraps for x > 2**30, an overflow


def main(name: str) -> None:
    if name == "unsigned":
        keys = torch.tensor(sorted(np.random.default_rng().integers(0x8000, 0xFFFF, 64)), dtype=torch.int32)
        out = torch.empty(64, dtype=torch.int32)
        keyed_scan_kernel[(1,)](keys, out, BLOCK=64)
        k = keys.numpy()
        want = [int(np.sum(k[: i + 1] == k[i])) for i in range(64)]  # the run length so far
        assert out.tolist() == want, (out.tolist(), want)
    else:
        x = torch.full((16,), 2**30 + 7, dtype=torch.int32)
        add_kernel[(1,)](x, torch.empty_like(x), BLOCK=16)


if __name__ == "__main__":
    main(sys.argv[1])
