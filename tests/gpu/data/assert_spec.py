"""A catalogue-style scale with tl.device_assert(x < 3): the inputs of shapes >= 2048 hold a 5.0, so that
case asserts and the next (smaller) case passes. Used by the GPU debug-mode tests."""

import torch
import triton
import triton.language as tl

import tdebug


@triton.jit
def checked_scale(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.device_assert(x < 3.0, "x too big")
    tl.store(out_ptr + offs, x * 2, mask=mask)


def scale(x):
    out = torch.empty_like(x)
    n = x.numel()
    checked_scale[(triton.cdiv(n, 256),)](x, out, n, BLOCK=256)
    return out


def make_inputs(case):
    (n,) = case.shape
    x = torch.zeros(n, device=case.device)
    if n >= 2048:
        x[n // 2] = 5.0
    return (x,)


SPEC = tdebug.KernelSpec(name="checked_scale", launch=scale, reference=lambda x: x * 2, make_inputs=make_inputs,
                         kernel=checked_scale, dims=("N",), default_shape=(1000,), shapes=[(4096,), (1000,)],
                         layouts=("contiguous",))
