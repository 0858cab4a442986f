"""Row-wise softmax over a 2-D (rows x cols) tensor: one program per row.

Short rows (cols <= MAX_BLOCK) are read once into one block of next_power_of_2(cols) lanes, as in the
Triton tutorial. Longer rows take the online path: one pass keeps a running max m and a running sum
l of exp(x - m) over column blocks (rescaling l by exp(m_old - m_new) whenever the max grows), a second
pass writes exp(x - m) / l. Either way the padding lanes are loaded as -inf and forced to -inf with
tl.where before the max, so they add exp(-inf) = 0 to the sum and never win the max.

Both tensors are addressed by a row stride and a column stride (a sliced or transposed view is read
where it lies); statistics in fp32 whatever the storage dtype.
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
    x = tl.load(x_row + cols * stride_xc, mask=mask, other=-float("inf")).to(tl.float32)
    x = tl.where(mask, x, -float("inf"))
    m_i = tl.max(x, axis=0)
    if SINGLE_BLOCK:
        p = tl.where(mask, tl.exp(x - m_i), 0.0)
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
