"""Kernels written the way real ones are, each exercising one thing Triton's plain interpreter cannot run:
scalar arguments used as typed values, libdevice / tl.math functions, grids given as a list, an int, a
callable or a 4-tuple, bf16 arithmetic, reductions and dots, fp8 casts, bf16 atomics. Each result is
compared with PyTorch (bf16 elementwise: bit for bit); any difference raises. Run it under tdebug:
`tdebug run --mode interpret tests/cpu/data/interpreter_reach.py` (plain TRITON_INTERPRET=1 fails)."""

from __future__ import annotations

import math

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice
from triton.language.extra.cuda.libdevice import tanh as cuda_tanh
from triton.language.extra.libdevice import rsqrt

N = 1000  # ragged against every block size below


@triton.jit
def scaled_norm_kernel(x_ptr, out_ptr, n, eps, scale, use_scale, big, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    eps = eps.to(tl.float32)  # a float argument is fp32 on the GPU: .to() and .dtype work
    tl.static_assert(scale.dtype == tl.float32)
    tl.static_assert(big.dtype == tl.int64)  # ints >= 2**31 are i64
    y = x * rsqrt(x * x + eps)
    if use_scale:  # a bool argument is i1
        y = y * scale
    tl.store(out_ptr + offs, y + (big - big), mask=mask)


@triton.jit
def math_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=1.0)
    y = tl.load(y_ptr + offs, mask=mask, other=1.0)
    row = out_ptr + offs * 16
    tl.store(row + 0, cuda_tanh(x), mask=mask)
    tl.store(row + 1, libdevice.erf(x), mask=mask)
    tl.store(row + 2, libdevice.log1p(tl.abs(x)), mask=mask)
    tl.store(row + 3, libdevice.expm1(x), mask=mask)
    tl.store(row + 4, libdevice.pow(tl.abs(x), y), mask=mask)
    tl.store(row + 5, libdevice.fast_expf(x), mask=mask)
    tl.store(row + 6, libdevice.fast_dividef(x, y), mask=mask)
    tl.store(row + 7, libdevice.atan2(x, y), mask=mask)
    tl.store(row + 8, libdevice.fmod(x, y), mask=mask)
    tl.store(row + 9, libdevice.rint(x * 3), mask=mask)
    tl.store(row + 10, libdevice.round(x * 3), mask=mask)
    tl.store(row + 11, libdevice.isnan(libdevice.log(x)).to(tl.float32), mask=mask)
    tl.store(row + 12, libdevice.isinf(1.0 / (x - x)).to(tl.float32), mask=mask)
    tl.store(row + 13, tl.math.exp2(x) + tl.math.log2(tl.abs(x)), mask=mask)
    tl.store(row + 14, tl.math.fma(x, y, x) + tl.math.sqrt(tl.abs(y)), mask=mask)
    tl.store(row + 15, libdevice.floor(x) + libdevice.ceil(y) + libdevice.sin(x) * libdevice.cos(y), mask=mask)


def math_reference(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    x, y = x.double(), y.double()
    half_away = lambda v: torch.sign(v) * torch.floor(v.abs() + 0.5)  # noqa: E731 - C round()
    cols = [torch.tanh(x), torch.erf(x), torch.log1p(x.abs()), torch.expm1(x), x.abs() ** y, torch.exp(x), x / y,
            torch.atan2(x, y), torch.fmod(x, y), torch.round(x.float() * 3).double(), half_away(x.float() * 3).double(),
            torch.isnan(torch.log(x)).double(), torch.isinf(1.0 / (x - x)).double(),
            torch.exp2(x) + torch.log2(x.abs()), x * y + x + y.abs().sqrt(),
            torch.floor(x) + torch.ceil(y) + torch.sin(x) * torch.cos(y)]
    return torch.stack(cols, dim=-1)


@triton.jit
def copy_2d_kernel(x_ptr, out_ptr, rows, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < cols
    tl.store(out_ptr + row * cols + offs, tl.load(x_ptr + row * cols + offs, mask=mask) + 1, mask=mask)


@triton.jit
def bf16_chain_kernel(x_ptr, y_ptr, z_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    z = tl.load(z_ptr + offs, mask=mask)
    r = x * y + z  # bf16: one fma, rounded once to bf16 as on the GPU
    r = tl.maximum(r, z).to(tl.bfloat16) - x * 0.75  # tl.maximum promotes bf16 to fp32 (exact here)
    r = tl.where(r > 0.5, r, r * -2.5)
    r += (x / (tl.abs(y) + 1.0)).to(tl.bfloat16)  # Triton divides bf16 by bf16 in fp32
    w = (r.to(tl.float32) * alpha).to(tl.bfloat16)  # a float argument is fp32: computed in fp32, rounded once
    tl.store(out_ptr + offs, w, mask=mask)


def bf16_once(v: torch.Tensor) -> torch.Tensor:
    """float64 -> bf16 rounded once, to nearest even. torch rounds through float32, twice: 1 + 2**-8 + 2**-30
    becomes 1.0, not 1 + 2**-7 (an exact sum just past a bf16 halfway point lands on it in float32)."""
    first = v.to(torch.bfloat16)
    best, gap = first, (first.double() - v).abs()
    for step in (1, -1):  # the bf16 neighbours of torch's answer (bit patterns one apart)
        other = (first.view(torch.int16) + step).view(torch.bfloat16)
        d = (other.double() - v).abs()
        even = (other.view(torch.int16) & 1) == 0
        better = (d < gap) | ((d == gap) & even)
        best, gap = torch.where(better, other, best), torch.where(better, d, gap)
    return best


def bf16_chain_reference(x, y, z, alpha):
    # a * b + c is one fma on the GPU (Triton fuses by default): one rounding of the exact value
    r = bf16_once(x.double() * y.double() + z.double())
    r = bf16_once(torch.maximum(r, z).double() - x.double() * 0.75)
    r = torch.where(r > 0.5, r, r * -2.5)
    r += (x.float() / (y.abs() + 1.0).float()).to(torch.bfloat16)
    return (r.float() * torch.tensor(alpha, dtype=torch.float32)).to(torch.bfloat16)


@triton.jit
def bf16_row_stats_kernel(x_ptr, sum_ptr, max_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=-float("inf"))
    tl.store(max_ptr + row, tl.max(x, axis=0))
    tl.store(sum_ptr + row, tl.sum(tl.where(mask, x.to(tl.float32), 0.0), axis=0))


@triton.jit
def bf16_dot_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                    BLOCK_K: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        rk = k + tl.arange(0, BLOCK_K)
        a = tl.load(a_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + rk[:, None] * N + rn[None, :], mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)  # bf16 inputs, fp32 accumulation
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.bfloat16), mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def fp8_roundtrip_kernel(x_ptr, e4_ptr, e5_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(e4_ptr + offs, x.to(tl.float8e4nv).to(tl.float32), mask=mask)
    tl.store(e5_ptr + offs, x.to(tl.float8e5).to(tl.float32), mask=mask)


@triton.jit
def bf16_histogram_kernel(x_ptr, bins_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.atomic_add(bins_ptr + (offs % 4), x, mask=mask)


def check(name: str, ok: bool, detail: str = "") -> None:
    if not ok:
        raise AssertionError(f"{name}: {detail}")
    print(f"{name}: ok")


def main() -> None:
    torch.manual_seed(int.from_bytes(__import__("os").urandom(4), "little"))
    x = torch.randn(N)
    out = torch.empty_like(x)
    scaled_norm_kernel[(triton.cdiv(N, 128),)](x, out, N, 1e-5, 0.5, True, 2**40, BLOCK=128)
    check("scalar arguments", torch.allclose(out, x * torch.rsqrt(x * x + 1e-5) * 0.5, rtol=1e-5, atol=1e-6))

    y = torch.rand(N) + 0.5
    table = torch.empty(N, 16)
    math_kernel[lambda meta: [triton.cdiv(N, meta["BLOCK"])]](x, y, table, N, BLOCK=256)  # a list grid
    ref = math_reference(x, y)
    err = ((table.double() - ref).abs() / (1 + ref.abs())).nan_to_num(0.0)
    check("libdevice and tl.math", bool((err < 1e-5).all()) and torch.equal(table.isnan(), ref.isnan()),
          f"worst column {int(err.max(0).values.argmax())}, error {err.max().item():.3g}")

    grid_in = torch.randn(5, 100)
    for grid in ((5, 2, 1, 1), [5, 2], lambda meta: (5, triton.cdiv(100, meta["BLOCK"]), 1, 1)):
        grid_out = torch.empty_like(grid_in)
        copy_2d_kernel[grid](grid_in, grid_out, 5, 100, BLOCK=64)
        check(f"grid {grid if not callable(grid) else 'lambda -> 4-tuple'}", torch.equal(grid_out, grid_in + 1))
    flat = torch.randn(1, 64)
    flat_out = torch.empty_like(flat)
    copy_2d_kernel[1](flat, flat_out, 1, 64, BLOCK=64)  # an int grid
    check("grid 1", torch.equal(flat_out, flat + 1))

    xb, yb, zb = (torch.randn(N, dtype=torch.bfloat16) for _ in range(3))
    outb = torch.empty_like(xb)
    bf16_chain_kernel[(triton.cdiv(N, 128),)](xb, yb, zb, outb, N, 0.7, BLOCK=128)
    refb = bf16_chain_reference(xb, yb, zb, 0.7)
    check("bf16 elementwise, bit for bit", torch.equal(outb.view(torch.int16), refb.view(torch.int16)),
          f"{int((outb.view(torch.int16) != refb.view(torch.int16)).sum())} of {N} differ")

    rows = torch.randn(7, 100, dtype=torch.bfloat16)
    sums, maxes = torch.empty(7), torch.empty(7, dtype=torch.bfloat16)
    bf16_row_stats_kernel[(7,)](rows, sums, maxes, 100, BLOCK=128)
    check("bf16 max", torch.equal(maxes, rows.max(-1).values))
    check("bf16 sum in fp32", torch.allclose(sums.double(), rows.double().sum(-1), rtol=1e-5, atol=1e-4))

    a, b = torch.randn(33, 70, dtype=torch.bfloat16), torch.randn(70, 45, dtype=torch.bfloat16)
    c = torch.empty(33, 45, dtype=torch.bfloat16)
    bf16_dot_kernel[(triton.cdiv(33, 16), triton.cdiv(45, 16))](a, b, c, 33, 45, 70, BLOCK_M=16, BLOCK_N=16,
                                                                 BLOCK_K=32)
    want = (a.double() @ b.double())
    check("bf16 dot, fp32 accumulation", torch.allclose(c.double(), want, rtol=1e-2, atol=1e-2 * math.sqrt(70)))

    special = torch.tensor([0.0, -0.0, 1e-9, 3.3, -500.0, 1e6, float("inf"), float("nan")])
    xf = torch.cat([torch.randn(N - len(special)) * 8, special])
    e4, e5 = torch.empty_like(xf), torch.empty_like(xf)
    fp8_roundtrip_kernel[(triton.cdiv(N, 256),)](xf, e4, e5, N, BLOCK=256)
    sat = lambda v, m: torch.where(v.isnan(), v, v.clamp(-m, m))  # noqa: E731 - cvt.rn.satfinite
    want4 = sat(xf, 448.0).to(torch.float8_e4m3fn).float()
    want5 = sat(xf, 57344.0).to(torch.float8_e5m2).float()
    check("fp8 casts", torch.equal(e4.nan_to_num(7.0), want4.nan_to_num(7.0))
          and torch.equal(e5.nan_to_num(7.0), want5.nan_to_num(7.0)))

    values = torch.randn(N, dtype=torch.bfloat16)
    bins = torch.zeros(4, dtype=torch.bfloat16)
    bf16_histogram_kernel[(triton.cdiv(N, 128),)](values, bins, N, BLOCK=128)
    # Each atomic add rounds the bin to bf16; the interpreter applies them in program order, lanes in order. A
    # tolerance against the exact sum failed about 1 run in 100 (250 roundings per bin): the order is the reference.
    in_order = torch.zeros(4, dtype=torch.float32)
    for i, v in enumerate(values.float().tolist()):
        in_order[i % 4] = (in_order[i % 4] + v).to(torch.bfloat16).float()
    check("bf16 atomic_add", torch.equal(bins.float(), in_order), f"{bins.tolist()} != {in_order.tolist()}")


if __name__ == "__main__":
    main()
