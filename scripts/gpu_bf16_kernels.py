"""The bf16 kernels scripts/gpu_bf16_check.py runs compiled on the GPU and under tdebug's interpreter.

Imported after the phase has set (or not) TRITON_INTERPRET=1, which Triton reads when @triton.jit decorates.
Loop bounds are constexpr: Triton 3.6's interpreter cannot range() over a scalar with numpy >= 2.4 (FACTS.md).
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def chain_kernel(x_ptr, y_ptr, z_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    """Elementwise bf16: add, mul, sub, max, select, a fp32 division rounded once, a fp32 scalar argument."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    z = tl.load(z_ptr + offs, mask=mask)
    r = x * y
    r = r + z
    r = tl.maximum(r, z).to(tl.bfloat16) - x * 0.75
    r = tl.where(r > 0.5, r, r * -2.5)
    r += (x / (tl.abs(y) + 1.0)).to(tl.bfloat16)
    r = (r.to(tl.float32) * alpha).to(tl.bfloat16)
    tl.store(out_ptr + offs, r, mask=mask)


@triton.jit
def mul_add_kernel(x_ptr, y_ptr, z_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """x * y + z on bf16 in one expression: the compiler may fuse it into one fma (one rounding)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    z = tl.load(z_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * y + z, mask=mask)


@triton.jit
def casts_kernel(f_ptr, i_ptr, bf_ptr, half_ptr, int_ptr, e4_ptr, e5_ptr, n, BLOCK: tl.constexpr):
    """fp32 -> bf16 (round to nearest even), bf16 -> fp16 -> bf16, int32 -> bf16, fp32 -> fp8 -> fp32."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    f = tl.load(f_ptr + offs, mask=mask)
    i = tl.load(i_ptr + offs, mask=mask)
    b = f.to(tl.bfloat16)
    tl.store(bf_ptr + offs, b, mask=mask)
    tl.store(half_ptr + offs, b.to(tl.float16).to(tl.bfloat16), mask=mask)
    tl.store(int_ptr + offs, i.to(tl.bfloat16), mask=mask)
    tl.store(e4_ptr + offs, f.to(tl.float8e4nv).to(tl.float32), mask=mask)
    tl.store(e5_ptr + offs, f.to(tl.float8e5).to(tl.float32), mask=mask)


@triton.jit
def math_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """Transcendentals of bf16 values (Triton takes them in fp32 only): exp, log, sqrt, sigmoid, rounded to bf16."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    r = tl.exp(x) + tl.log(tl.abs(x) + 1.0) + tl.sqrt(tl.abs(x)) + tl.sigmoid(x)
    tl.store(out_ptr + offs, r.to(tl.bfloat16), mask=mask)


@triton.jit
def row_stats_kernel(x_ptr, sum32_ptr, sum16_ptr, max_ptr, N_COLS: tl.constexpr, BLOCK: tl.constexpr):
    """Per row: a sum accumulated in fp32, a sum in bf16, a max (exact in any order)."""
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < N_COLS
    x = tl.load(x_ptr + row * N_COLS + offs, mask=mask, other=0.0)
    tl.store(sum32_ptr + row, tl.sum(x.to(tl.float32), axis=0))
    tl.store(sum16_ptr + row, tl.sum(x, axis=0))
    tl.store(max_ptr + row, tl.max(tl.where(mask, x, -float("inf")), axis=0))


@triton.jit
def dot_kernel(a_ptr, b_ptr, c32_ptr, c16_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """bf16 x bf16 with fp32 accumulation; stored as fp32 and as bf16."""
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        rk = k + tl.arange(0, BLOCK_K)
        a = tl.load(a_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + rk[:, None] * N + rn[None, :], mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    tl.store(c32_ptr + rm[:, None] * N + rn[None, :], acc, mask=mask)
    tl.store(c16_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.bfloat16), mask=mask)


@triton.jit
def atomic_kernel(x_ptr, bins_ptr, n, BLOCK: tl.constexpr):
    """bf16 atomic_add into 8 bins (order differs between runs on a GPU)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.atomic_add(bins_ptr + offs % 8, tl.load(x_ptr + offs, mask=mask), mask=mask)


@triton.jit
def minmax_kernel(a_ptr, b_ptr, max_ptr, min_ptr, n, BLOCK: tl.constexpr):
    """tl.maximum / tl.minimum of fp32 pairs (NaNs signaling and quiet, signed zeros, infinities)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    tl.store(max_ptr + offs, tl.maximum(a, b), mask=mask)
    tl.store(min_ptr + offs, tl.minimum(a, b), mask=mask)
