"""Autotune pitfalls, all three: a fixed grid, a prune function with the wrong signature, one config."""

import torch
import triton
import triton.language as tl

import tdebug


def prune(configs):  # Triton 3.6 calls prune(configs, named_args, **kwargs)
    return configs


@triton.autotune(configs=[triton.Config({"BLOCK": 128})], key=["n"],
                 prune_configs_by={"early_config_prune": prune})
@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, 2 * tl.load(x_ptr + offs, mask=m), mask=m)


def scale(x):
    out = torch.empty_like(x)
    n = x.numel()
    grid = (triton.cdiv(n, 128),)
    scale_kernel[grid](x, out, n)
    return out


SPEC = tdebug.KernelSpec(
    name="scale_lint", launch=scale, reference=lambda x: 2 * x,
    make_inputs=lambda case: (tdebug.randn(case, case.shape, layout="contiguous"),),
    kernel=scale_kernel, default_shape=(1000,), shapes=[(1000,)], layouts=("contiguous",), dtypes=("fp32",),
)
