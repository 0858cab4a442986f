"""LayerNorm forward over the last dimension of a (rows x D) tensor, with weight and bias.

y = (x - mean) / sqrt(var + eps) * weight + bias, mean and (biased) var over each row, eps = 1e-5.

One program per row. Rows of up to MAX_BLOCK elements are held in one block: mean, then the variance
from the centred values (two passes over registers, no E[x^2] - E[x]^2 cancellation). Longer rows loop
over column blocks three times (sum; sum of squared deviations; normalise and store), as in the Triton
tutorial. The statistics are fp32 whatever the storage dtype, the padding lanes are zeroed with
tl.where before every reduction, and x, weight, bias and the output are each addressed by their own
strides (a sliced or transposed view is read where it lies).
"""

import torch
import triton
import triton.language as tl

import tdebug

MAX_BLOCK = 8192  # lanes of one block; longer rows loop over blocks
EPS = 1e-5


@triton.jit
def layernorm_kernel(x_ptr, w_ptr, b_ptr, out_ptr,
                     D, eps,
                     stride_xr, stride_xc, stride_w, stride_b, stride_or, stride_oc,
                     BLOCK_D: tl.constexpr, SINGLE_BLOCK: tl.constexpr):
    row = tl.program_id(axis=0).to(tl.int64)
    x_row = x_ptr + row * stride_xr
    out_row = out_ptr + row * stride_or
    cols = tl.arange(0, BLOCK_D)
    if SINGLE_BLOCK:
        mask = cols < D
        x = tl.load(x_row + cols * stride_xc, mask=mask, other=0.0).to(tl.float32)
        x = tl.where(mask, x, 0.0)
        mean = tl.sum(x, axis=0) / D
        xc = tl.where(mask, x - mean, 0.0)
        var = tl.sum(xc * xc, axis=0) / D
        rstd = 1.0 / tl.sqrt(var + eps)
        w = tl.load(w_ptr + cols * stride_w, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + cols * stride_b, mask=mask, other=0.0).to(tl.float32)
        y = xc * rstd * w + b
        tl.store(out_row + cols * stride_oc, y.to(out_ptr.dtype.element_ty), mask=mask)
    else:
        acc = tl.zeros([BLOCK_D], dtype=tl.float32)
        for start in range(0, D, BLOCK_D):
            offs = start + cols
            mask = offs < D
            x = tl.load(x_row + offs * stride_xc, mask=mask, other=0.0).to(tl.float32)
            acc += tl.where(mask, x, 0.0)
        mean = tl.sum(acc, axis=0) / D
        acc = tl.zeros([BLOCK_D], dtype=tl.float32)
        for start in range(0, D, BLOCK_D):
            offs = start + cols
            mask = offs < D
            x = tl.load(x_row + offs * stride_xc, mask=mask, other=0.0).to(tl.float32)
            xc = tl.where(mask, x - mean, 0.0)
            acc += xc * xc
        var = tl.sum(acc, axis=0) / D
        rstd = 1.0 / tl.sqrt(var + eps)
        for start in range(0, D, BLOCK_D):
            offs = start + cols
            mask = offs < D
            x = tl.load(x_row + offs * stride_xc, mask=mask, other=0.0).to(tl.float32)
            w = tl.load(w_ptr + offs * stride_w, mask=mask, other=0.0).to(tl.float32)
            b = tl.load(b_ptr + offs * stride_b, mask=mask, other=0.0).to(tl.float32)
            y = (x - mean) * rstd * w + b
            tl.store(out_row + offs * stride_oc, y.to(out_ptr.dtype.element_ty), mask=mask)


def layernorm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float = EPS) -> torch.Tensor:
    if x.dim() != 2:
        raise ValueError(f"layernorm takes a 2-D (rows x D) input, got shape {tuple(x.shape)}")
    n_rows, D = x.shape
    if weight.shape != (D,) or bias.shape != (D,):
        raise ValueError(f"layernorm: weight and bias must have shape ({D},), got {tuple(weight.shape)} "
                         f"and {tuple(bias.shape)}")
    if not x.is_floating_point() or weight.dtype != x.dtype or bias.dtype != x.dtype:
        raise ValueError(f"layernorm: x, weight, bias must share a floating dtype, got {x.dtype}, "
                         f"{weight.dtype}, {bias.dtype}")
    if D == 0:
        raise ValueError("layernorm: rows of 0 elements have no mean")
    out = torch.empty((n_rows, D), device=x.device, dtype=x.dtype)
    if n_rows == 0:
        return out
    BLOCK_D = min(triton.next_power_of_2(D), MAX_BLOCK)
    num_warps = 4 if BLOCK_D <= 2048 else (8 if BLOCK_D <= 4096 else 16)
    grid = lambda META: (n_rows,)
    layernorm_kernel[grid](x, weight, bias, out, D, eps,
                           x.stride(0), x.stride(1), weight.stride(0), bias.stride(0),
                           out.stride(0), out.stride(1),
                           BLOCK_D=BLOCK_D, SINGLE_BLOCK=D <= BLOCK_D, num_warps=num_warps)
    return out


def reference(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), weight, bias, eps=EPS)


def make_inputs(case: tdebug.Case) -> tuple:
    rows, D = case.shape
    # A mean of 3 away from 0 makes a one-pass E[x^2] - E[x]^2 variance lose precision.
    x = tdebug.randn(case, (rows, D), salt=1, scale=2.0, shift=3.0)
    weight = tdebug.randn(case, (D,), salt=2, shift=1.0)
    bias = tdebug.randn(case, (D,), salt=3)
    return x, weight, bias


SPEC = tdebug.KernelSpec(
    name="layernorm",
    launch=layernorm,
    reference=reference,
    make_inputs=make_inputs,
    kernel=layernorm_kernel,
    dims=("R", "D"),
    default_shape=(129, 127),
    # D = 1: var 0, y = bias. One block up to D = 8192; 8193, 12289 and 3 * 8192 + 1 loop over blocks.
    shapes=[(1, 1), (97, 1), (1, 1000), (129, 127), (31, 129), (64, 256), (3, 8192), (3, 8193),
            (2, 12289), (1, 24577)],
    quick_shapes=[(129, 127), (3, 8193)],
    baseline=lambda x, w, b: torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b, eps=EPS),
    flops=lambda s: 8.0 * s[0] * s[1],
    bytes=lambda s, size: (2 * s[0] * s[1] + 2 * s[1]) * size,
    bench_shapes=[(16384, 8192), (32768, 4096), (65536, 1024)],
)
