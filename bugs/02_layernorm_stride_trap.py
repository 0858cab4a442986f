"""Exercise 02: LayerNorm that assumes its rows are D elements apart.

What you were doing: normalising the first D features of a concatenated hidden state,
`layernorm(h[:, :D], weight, bias)`, with your fused LayerNorm. Its unit tests, on fresh tensors, all
passed.

What you saw: every row but the first comes out normalised but wrong: its mean and variance belong to
other numbers. Rows of the output look plausible (zero mean, unit variance before the affine part),
so nothing jumps out until you compare with torch.nn.functional.layer_norm.
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
    x_row = x_ptr + row * D
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

BUG = tdebug.Bug(
    fixes='kernels/layernorm.py',
    title='LayerNorm stride trap: rows addressed as row * D',
    symptom=(
        'right on contiguous input; every row but the first wrong when x is a sliced view h[:, :D] (or '
        'transposed)'
    ),
    hints=[
        'Compare a contiguous input with h[:, :D] of a wider h: same values, different strides.',
        (
            "The kernel takes a row stride and a column stride for x. Are both of them used where x's "
            'address is computed?'
        ),
        (
            'x_row = x_ptr + row * D: D is the row stride only for a contiguous x. Use stride_xr (the '
            'output side already uses stride_or).'
        ),
    ],
    caught_by=['check'],
    difficulty='easy',
    shape=(129, 127),
    layout='sliced',
    dtype='fp32',
    gpu_only=False,
)
