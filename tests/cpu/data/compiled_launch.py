"""A Triton kernel called from a torch.compile'd function (a plain launch and an autotuned one), checked
against float64: `--bug` drops the store's mask (a bounds finding), `--fullgraph` compiles with
fullgraph=True. Run under tdebug sanitize / run (tests/cpu/test_compiled.py)."""

import sys

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


@triton.autotune(configs=[triton.Config({"BLOCK": 32}), triton.Config({"BLOCK": 128})], key=["n"])
@triton.jit
def square_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * x, mask=mask)


MASKED = "--bug" not in sys.argv


def affine(x):
    out = torch.empty_like(x)
    n = x.numel()
    affine_kernel[(triton.cdiv(n, 64),)](x, out, n, BLOCK=64, MASKED=MASKED)
    return out


def square(x):
    out = torch.empty_like(x)
    n = x.numel()
    square_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, out, n)
    return out


def model(x):
    return square(affine(torch.sin(x))) * 3.0


def main() -> None:
    compiled = torch.compile(model, fullgraph="--fullgraph" in sys.argv)
    x = torch.randn(1000)
    got = compiled(x)
    ref = (torch.sin(x.double()) * 2 + 1) ** 2 * 3
    torch.testing.assert_close(got.double(), ref, rtol=1e-5, atol=1e-5)
    print("compiled model matches float64")


if __name__ == "__main__":
    main()
