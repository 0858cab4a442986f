"""Exercise 06: softmax whose padding lanes are loaded as 0.0.

What you were doing: a classifier head with 3 classes, softmax over each row of logits. You wrote the
kernel the way the row fits in one power-of-two block, loading the padding lanes with other=0.0 (a
habit from writing sums, where 0 is harmless).

What you saw: rows whose logits are all negative come out badly wrong: their probabilities add up to
less than 1. Rows with a large positive logit look right, which is why the first tests passed. A padding
lane holding 0 wins the row max when every real value is below 0, and each padding lane adds exp(0 - max)
to the denominator.
"""

import torch
import triton
import triton.language as tl

import tdebug

MAX_BLOCK = 8192  # lanes of one block; longer rows loop over blocks


@triton.jit
def softmax_kernel(x_ptr, out_ptr,
                   n_cols,
                   stride_xr, stride_xc, stride_or, stride_oc,
                   BLOCK_N: tl.constexpr, SINGLE_BLOCK: tl.constexpr):
    row = tl.program_id(axis=0).to(tl.int64)
    x_row = x_ptr + row * stride_xr
    out_row = out_ptr + row * stride_or
    cols = tl.arange(0, BLOCK_N)

    # The first block (every row has one: n_cols >= 1, so m_i is finite from here on).
    mask = cols < n_cols
    x = tl.load(x_row + cols * stride_xc, mask=mask, other=0.0).to(tl.float32)
    m_i = tl.max(x, axis=0)
    if SINGLE_BLOCK:
        p = tl.exp(x - m_i)
        y = p / tl.sum(p, axis=0)
        tl.store(out_row + cols * stride_oc, y.to(out_ptr.dtype.element_ty), mask=mask)
    else:
        l_i = tl.sum(tl.where(mask, tl.exp(x - m_i), 0.0), axis=0)
        for start in range(BLOCK_N, n_cols, BLOCK_N):
            offs = start + cols
            mask = offs < n_cols
            x = tl.load(x_row + offs * stride_xc, mask=mask, other=-float("inf")).to(tl.float32)
            x = tl.where(mask, x, -float("inf"))
            m_new = tl.maximum(m_i, tl.max(x, axis=0))
            l_i = l_i * tl.exp(m_i - m_new) + tl.sum(tl.where(mask, tl.exp(x - m_new), 0.0), axis=0)
            m_i = m_new
        inv_l = 1.0 / l_i
        for start in range(0, n_cols, BLOCK_N):
            offs = start + cols
            mask = offs < n_cols
            x = tl.load(x_row + offs * stride_xc, mask=mask, other=-float("inf")).to(tl.float32)
            y = tl.exp(x - m_i) * inv_l
            tl.store(out_row + offs * stride_oc, y.to(out_ptr.dtype.element_ty), mask=mask)


def softmax(x: torch.Tensor) -> torch.Tensor:
    if x.dim() != 2:
        raise ValueError(f"softmax takes a 2-D (rows x cols) tensor, got shape {tuple(x.shape)}")
    if not x.is_floating_point():
        raise ValueError(f"softmax: floating-point input required, got {x.dtype}")
    n_rows, n_cols = x.shape
    if n_cols == 0:
        raise ValueError("softmax: a row of 0 columns has no softmax")
    out = torch.empty((n_rows, n_cols), device=x.device, dtype=x.dtype)
    if n_rows == 0:
        return out
    BLOCK_N = min(triton.next_power_of_2(n_cols), MAX_BLOCK)
    num_warps = 4 if BLOCK_N <= 2048 else (8 if BLOCK_N <= 4096 else 16)
    grid = lambda META: (n_rows,)
    softmax_kernel[grid](x, out, n_cols,
                         x.stride(0), x.stride(1), out.stride(0), out.stride(1),
                         BLOCK_N=BLOCK_N, SINGLE_BLOCK=n_cols <= BLOCK_N, num_warps=num_warps)
    return out


def reference(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, dim=-1)


def make_inputs(case: tdebug.Case) -> tuple:
    rows, cols = case.shape
    # Scale 4 gives rows whose exponentials span many orders of magnitude (the max subtraction matters).
    return (tdebug.randn(case, (rows, cols), salt=1, scale=4.0),)


SPEC = tdebug.KernelSpec(
    name="softmax",
    launch=softmax,
    reference=reference,
    make_inputs=make_inputs,
    kernel=softmax_kernel,
    dims=("R", "C"),
    default_shape=(129, 127),
    # Single block: 1, 97, 127, 128, 129, 1000, 8192 columns; online (multi-block): 8193, 16411 (a prime),
    # 3 * 8192 + 1.
    shapes=[(1, 1), (97, 1), (1, 1000), (129, 127), (31, 129), (64, 128), (3, 8192), (3, 8193),
            (2, 16411), (1, 24577)],
    quick_shapes=[(129, 127), (3, 8193)],
    baseline=lambda x: torch.softmax(x, dim=-1),
    flops=lambda s: 5.0 * s[0] * s[1],
    bytes=lambda s, size: 2 * s[0] * s[1] * size,
    bench_shapes=[(16384, 8192), (32768, 4096), (4096, 32768)],
)

BUG = tdebug.Bug(
    fixes='kernels/softmax.py',
    title='Softmax with other=0.0 on the masked lanes',
    symptom=(
        'rows whose values are all negative come out wrong (probabilities summing to less than 1); shows '
        'on ragged rows such as 129x3'
    ),
    hints=[
        (
            'Find a failing row and look at its inputs. What do the failing rows have in common, and what '
            "does the block look like past the row's last column?"
        ),
        (
            'The block has next_power_of_2(n_cols) lanes. What value does a padding lane hold, and does '
            'it take part in the max and in the sum?'
        ),
        (
            "Load the padding as -inf (other=-float('inf')), and keep padding lanes out of the max and "
            'the sum with tl.where(mask, ...): exp(-inf) = 0.'
        ),
    ],
    caught_by=['check'],
    difficulty='medium',
    shape=(129, 3),
    layout='contiguous',
    dtype='fp32',
    gpu_only=False,
)
