"""Launches with findings for --repro (tests/cpu/test_repro.py): `bounds` loads past the end of y (no mask);
`uninit` reads elements of a torch.empty buffer that the launch before it left unwritten."""

import sys

import torch
import triton
import triton.language as tl

SCALE = 2.0  # a module constant the kernel reads: kept in the reproducer's copy of this module


@triton.jit
def axpy_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs)  # the bounds bug: no mask
    tl.store(out_ptr + offs, x * SCALE + y, mask=mask)


@triton.jit
def fill_kernel(buf_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(buf_ptr + offs, offs.to(tl.float32), mask=offs < n)


@triton.jit
def sum_pairs_kernel(buf_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(buf_ptr + 2 * offs, mask=mask)
    b = tl.load(buf_ptr + 2 * offs + 1, mask=mask)  # the uninit bug: fill_kernel wrote only the first n
    tl.store(out_ptr + offs, a + b, mask=mask)


def main(name: str) -> None:
    if name == "bounds":
        x, y = torch.randn(1000), torch.randn(1000)
        out = torch.empty_like(x)
        axpy_kernel[(triton.cdiv(1000, 128),)](x, y, out, 1000, BLOCK=128)
    elif name == "uninit":
        buf = torch.empty(200)
        fill_kernel[(2,)](buf, 130, BLOCK=128)  # elements 130..199 stay unwritten
        out = torch.empty(100)
        sum_pairs_kernel[(1,)](buf, out, 100, BLOCK=128)
    else:
        raise SystemExit(f"unknown scenario {name}")


if __name__ == "__main__":
    main(sys.argv[1])
