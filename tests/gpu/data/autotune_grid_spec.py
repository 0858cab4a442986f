"""A catalogue-style autotuned scale whose grid is fixed for config 0's block (1024): under configs 1 and 2
(blocks 512 and 256) part of the output is written by no program. Config 0 is clean. Used by the GPU tests
(an unwritten output under a non-default autotune config)."""

import torch
import triton
import triton.language as tl

import tdebug


@triton.autotune(configs=[triton.Config({"BLOCK": 1024}), triton.Config({"BLOCK": 512}),
                          triton.Config({"BLOCK": 256})], key=["n"])
@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 3.0, mask=mask)


def scale(x):
    out = torch.empty_like(x)
    n = x.numel()
    scale_kernel[(triton.cdiv(n, 1024),)](x, out, n)  # the bug: the grid ignores META["BLOCK"]
    return out


def make_inputs(case):
    (n,) = case.shape
    return (tdebug.randn(case, (n,), salt=1),)


SPEC = tdebug.KernelSpec(name="autotune_grid", launch=scale, reference=lambda x: x * 3.0, make_inputs=make_inputs,
                         kernel=scale_kernel, dims=("N",), default_shape=(3000,), shapes=[(3000,)],
                         dtypes=("fp32",), gpu_dtypes=("fp32",), layouts=("contiguous",))
