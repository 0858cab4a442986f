"""An autotuned kernel that is wrong in one config only (BLOCK=64 drops the second half of each block)."""

import torch
import triton
import triton.language as tl

import tdebug


@triton.autotune(configs=[triton.Config({"BLOCK": 128}), triton.Config({"BLOCK": 64}),
                          triton.Config({"BLOCK": 256})], key=["n"])
@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    factor = 2.0 if BLOCK != 64 else 2.5  # the bug: a config-specific code path
    tl.store(out_ptr + offs, factor * tl.load(x_ptr + offs, mask=m), mask=m)


def scale(x):
    out = torch.empty_like(x)
    n = x.numel()
    scale_kernel[lambda META: (triton.cdiv(n, META["BLOCK"]),)](x, out, n)
    return out


SPEC = tdebug.KernelSpec(
    name="scale_autotuned", launch=scale, reference=lambda x: 2 * x,
    make_inputs=lambda case: (tdebug.randn(case, case.shape, layout="contiguous"),),
    kernel=scale_kernel, default_shape=(1000,), shapes=[(1000,)], layouts=("contiguous",), dtypes=("fp32",),
)
