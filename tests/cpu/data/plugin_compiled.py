"""Tests that call a Triton kernel from a torch.compile'd function, for pytest --tdebug (run by pytester):
one correct, one whose kernel stores without its mask (its own assertion passes; tdebug must fail it)."""

import torch
import triton
import triton.language as tl


@triton.jit
def affine_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, MASKED: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    if MASKED:
        tl.store(out_ptr + offs, x * 2.0 + 1.0, mask=mask)
    else:
        tl.store(out_ptr + offs, x * 2.0 + 1.0)  # the bug: lanes past n write past the end


def affine(x, masked):
    out = torch.empty_like(x)
    affine_kernel[(triton.cdiv(x.numel(), 64),)](x, out, x.numel(), BLOCK=64, MASKED=masked)
    return out


def check(masked):
    compiled = torch.compile(lambda x: affine(torch.sin(x), masked) * 3.0)
    x = torch.randn(1000)
    ref = (torch.sin(x.double()) * 2 + 1) * 3
    torch.testing.assert_close(compiled(x).double(), ref, rtol=1e-5, atol=1e-5)


def test_compiled_clean():
    check(masked=True)


def test_compiled_missing_mask():
    check(masked=False)
