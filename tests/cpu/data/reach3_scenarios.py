"""Kernels in the style of real code (FlagGems masks written with `and`, bitsandbytes-style blockwise quantisation,
a rope that skips padding rows, a packed-key routing scan), purpose-written for issue 26. Run as a script:
`python reach3_scenarios.py NAME`."""

import sys

import torch
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def _to_acc(x, dtype):
    return x.to(dtype.value)  # compiled Triton passes the dtype as a constexpr


@triton.jit
def row_mean_kernel(X, OUT, M, N, stride, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    rows = pid * BLOCK_M + tl.arange(0, BLOCK_M)[:, None]
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)[None, :]
        mask = rows < M and cols < N
        acc += _to_acc(tl.load(X + rows * stride + cols, mask=mask, other=0.0), tl.float32)
    r = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    tl.store(OUT + r, tl.sum(acc, axis=1) / N, mask=not r >= M)


def row_mean(x, n_bound=None):
    M, N = x.shape
    out = torch.empty(M, dtype=torch.float32)
    row_mean_kernel[(triton.cdiv(M, 8),)](x, out, M, n_bound or N, x.stride(0), BLOCK_M=8, BLOCK_N=16)
    return out


@triton.jit
def quantize_kernel(X, Q, ABSMAX, n, LEVELS: tl.constexpr, ZERO: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(X + offs, mask=mask, other=0.0)
    amax = tl.max(tl.abs(x), axis=0)
    tl.store(ABSMAX + pid, amax)
    q = tl.extra.cuda.libdevice.rint(x / amax * LEVELS) + ZERO
    tl.store(Q + offs, q.to(Q.dtype.element_ty), mask=mask)


@triton.jit
def dequantize_kernel(Q, ABSMAX, Y, n, LEVELS: tl.constexpr, ZERO: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    q = tl.load(Q + offs, mask=mask, other=0).to(tl.float32)
    tl.store(Y + offs, (q - ZERO) / LEVELS * tl.load(ABSMAX + pid), mask=mask)


QUANT = {torch.uint8: (127.0, 128.0, 0xA5), torch.int16: (32767.0, 0.0, -0x5A5B)}  # levels, zero, poison code
BLOCK = 128


def quantize_roundtrip(seed: int, dtype: torch.dtype, n: int = 700) -> None:
    torch.manual_seed(seed)
    levels, zero, poison = QUANT[dtype]
    x = torch.randn(n)
    amax = x.view(-1)[: n // BLOCK * BLOCK].view(-1, BLOCK).abs().amax(1)
    x[5: n // BLOCK * BLOCK: 97] = ((poison - zero) / levels * amax[torch.arange(5, n // BLOCK * BLOCK, 97) // BLOCK])
    q = torch.empty(n, dtype=dtype)  # some codes land on the poison pattern on purpose
    absmax = torch.empty(triton.cdiv(n, BLOCK))
    grid = (triton.cdiv(n, BLOCK),)
    quantize_kernel[grid](x, q, absmax, n, LEVELS=levels, ZERO=zero, BLOCK=BLOCK)
    assert int((q.to(torch.int32) == poison).sum()) >= 2
    y = torch.empty(n)
    dequantize_kernel[grid](q, absmax, y, n, LEVELS=levels, ZERO=zero, BLOCK=BLOCK)
    tol = (absmax.repeat_interleave(BLOCK)[:n].double() / levels)
    assert ((y.double() - x.double()).abs() <= tol).all()
    assert int((q.to(torch.int64) == poison).sum()) >= 2  # torch reads them too: written, whatever the value


@triton.jit
def _routing_combine(x, y):
    kx = x >> 16 << 16
    return x + y - kx  # wraps for large keys; the low half still counts


@triton.jit
def routing_scan_kernel(KEYS, COUNT, N: tl.constexpr):
    i = tl.arange(0, N)
    packed = (tl.load(KEYS + i) << 16) | 1
    tl.store(COUNT + i, tl.associative_scan(packed, 0, _routing_combine) & 0xFFFF)


@triton.jit
def rope_kernel(X, COS, SIN, Y, START, T, D: tl.constexpr, HALF: tl.constexpr):
    row = tl.program_id(0)
    b = tl.program_id(1)
    if row < tl.load(START + b):
        return  # left padding: its rows are left unwritten
    base = (b * T + row) * D
    i = tl.arange(0, HALF)
    x1 = tl.load(X + base + i)
    x2 = tl.load(X + base + HALF + i)
    c = tl.load(COS + row * HALF + i)
    s = tl.load(SIN + row * HALF + i)
    tl.store(Y + base + i, x1 * c - x2 * s)
    tl.store(Y + base + HALF + i, x1 * s + x2 * c)


@triton.jit
def gather_rows_kernel(X, Y, row_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = row * row_stride + tl.arange(0, BLOCK)  # int32 product: past 2^31 it wraps
    tl.store(Y + row * BLOCK + tl.arange(0, BLOCK), tl.load(X + offs))


@triton.jit
def chained_kernel(X, Y, lo, hi, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    x = tl.load(X + i)
    tl.store(Y + i, tl.where(lo < x < hi, 1.0, 0.0))


def clean() -> None:
    for seed in range(3):
        torch.manual_seed(seed)
        x = torch.randn(37, 50)
        torch.testing.assert_close(row_mean(x).double(), x.double().mean(1), rtol=1e-5, atol=1e-6)
    for seed in range(12):
        quantize_roundtrip(seed, torch.uint8)
        quantize_roundtrip(seed, torch.int16)
    keys = torch.randint(20000, 32767, (64,), dtype=torch.int32)
    count = torch.empty(64, dtype=torch.int32)
    routing_scan_kernel[(1,)](keys, count, N=64)
    assert torch.equal(count, torch.arange(1, 65, dtype=torch.int32))


def wrong_bound() -> None:
    torch.manual_seed(1)
    x = torch.randn(37, 50)[:, :40]  # a view: row stride 50, 40 columns
    row_mean(x, n_bound=45)  # the bound says 45 columns: 5 past each row's end


def uninit_reads() -> None:
    torch.manual_seed(2)
    n = 300
    q = torch.empty(n, dtype=torch.uint8)  # no kernel wrote it
    y = torch.empty(n)
    dequantize_kernel[(triton.cdiv(n, BLOCK),)](q, torch.rand(3) + 1, y, n, LEVELS=127.0, ZERO=128.0, BLOCK=BLOCK)
    B, T, D = 2, 8, 16
    x = torch.randn(B, T, D)
    ang = torch.randn(T, D // 2)
    out = torch.empty_like(x)
    rope_kernel[(T, B)](x, ang.cos(), ang.sin(), out, torch.tensor([3, 0], dtype=torch.int32), T, D=D, HALF=D // 2)
    F.scaled_dot_product_attention(out[:, None], out[:, None], out[:, None])


def offset_overflow() -> None:
    x = torch.randn(64)
    y = torch.empty(48)
    gather_rows_kernel[(3,)](x, y, 2**30, BLOCK=16)


def chained() -> None:
    x = torch.randn(32)
    y = torch.empty(32)
    chained_kernel[(1,)](x, y, -0.5, 0.5, BLOCK=32)
    assert torch.equal(y, ((x > -0.5) & (x < 0.5)).float())


if __name__ == "__main__":
    globals()[sys.argv[1]]()
