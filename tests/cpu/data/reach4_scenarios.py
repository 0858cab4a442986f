"""Kernels in the style of real code (a CUB-style decoupled look-back scan, a descending radix-sort pass on
`~key`, an FLA-style backward that accumulates with a multi-line atomic_add, a chunked copy whose loop counter is
cast with `.to(tl.int64)`, an int8 GEMM tile, fp8 quantisation to every fp8 type), purpose-written for issue 48.
Run as a script: `python reach4_scenarios.py NAME`."""

import sys

import torch
import triton
import triton.language as tl

FLAG_AGGREGATE = tl.constexpr(1)  # a global a kernel reads must be a constexpr object for compiled Triton
FLAG_PREFIX = tl.constexpr(2)


@triton.jit
def lookback_scan_kernel(X, Y, AGG, INCL, FLAGS, n, BLOCK: tl.constexpr, FLAG_FIRST: tl.constexpr,
                         WAIT_ON_NEXT: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(X + offs, mask=mask, other=0)
    local = tl.cumsum(x, 0)
    total = tl.sum(x, 0)
    tl.store(AGG + pid, total, cache_modifier=".cg")
    tl.store(FLAGS + pid, FLAG_AGGREGATE, cache_modifier=".cg")
    exclusive = total * 0
    look = pid - 1
    if WAIT_ON_NEXT:
        look = pid + 1  # the bug: waits on a program that runs later
    while look >= 0:
        flag = tl.load(FLAGS + look, volatile=True)
        while flag == 0:
            flag = tl.load(FLAGS + look, volatile=True)
        if flag == FLAG_PREFIX:
            exclusive += tl.load(INCL + look)
            look = -1
        else:
            exclusive += tl.load(AGG + look)
            look -= 1
    if FLAG_FIRST:
        tl.store(FLAGS + pid, FLAG_PREFIX, cache_modifier=".cg")  # the bug: the flag before what it guards
        tl.store(INCL + pid, exclusive + total, cache_modifier=".cg")
    else:
        tl.store(INCL + pid, exclusive + total, cache_modifier=".cg")
        tl.store(FLAGS + pid, FLAG_PREFIX, cache_modifier=".cg")
    tl.store(Y + offs, local + exclusive, mask=mask)


def lookback_scan(x, block=64, flag_first=False, wait_on_next=False):
    grid = triton.cdiv(x.numel(), block)
    y = torch.empty_like(x)
    agg, incl = torch.empty(grid, dtype=x.dtype), torch.empty(grid, dtype=x.dtype)
    flags = torch.zeros(grid, dtype=torch.int32)
    lookback_scan_kernel[(grid,)](x, y, agg, incl, flags, x.numel(), BLOCK=block, FLAG_FIRST=flag_first,
                                  WAIT_ON_NEXT=wait_on_next)
    return y


@triton.jit
def chained_sum_kernel(X, PARTIAL, FLAGS, OUT, n, BLOCK: tl.constexpr, FLAG_FIRST: tl.constexpr):
    """A stream-K style fix-up chain: each program waits for its predecessor's running sum, published by an
    atomic_xchg on a flag."""
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    s = tl.sum(tl.load(X + offs, mask=offs < n, other=0.), 0)
    if pid > 0:
        while tl.load(FLAGS + pid - 1, volatile=True) == 0:
            pass
        s += tl.load(PARTIAL + pid - 1)
    if FLAG_FIRST:
        tl.atomic_xchg(FLAGS + pid, 1)  # the bug: published before the sum is stored
        tl.store(PARTIAL + pid, s)
    else:
        tl.store(PARTIAL + pid, s)
        tl.atomic_xchg(FLAGS + pid, 1)
    if pid == tl.num_programs(0) - 1:
        tl.store(OUT, s)


def chained_sum(x, block=64, flag_first=False):
    grid = triton.cdiv(x.numel(), block)
    partial, out = torch.empty(grid), torch.empty(1)
    chained_sum_kernel[(grid,)](x, partial, torch.zeros(grid, dtype=torch.int32), out, x.numel(), BLOCK=block,
                                FLAG_FIRST=flag_first)
    return out


@triton.jit
def radix_digit_count_kernel(KEYS, COUNTS, n, SHIFT: tl.constexpr, DIGIT_MASK: tl.constexpr,
                             DESCENDING: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    key = tl.load(KEYS + offs, mask=mask, other=0)
    if DESCENDING:
        key = ~key  # the largest key first: its complement sorts ascending
    digit = (key >> SHIFT) & DIGIT_MASK
    tl.atomic_add(COUNTS + pid * 256 + digit, 1, mask=mask)


def radix_counts(keys, shift, digit_mask=0xFF, block=128):
    grid = triton.cdiv(keys.numel(), block)
    counts = torch.zeros(grid, 256, dtype=torch.int32)
    radix_digit_count_kernel[(grid,)](keys, counts, keys.numel(), SHIFT=shift, DIGIT_MASK=digit_mask,
                                      DESCENDING=True, BLOCK=block)
    return counts


@triton.jit
def chunk_bwd_dbias_kernel(DO, G, DB, T, H: tl.constexpr, K: tl.constexpr, BT: tl.constexpr,
                           BK: tl.constexpr, MASKED: tl.constexpr):
    i_k, i_h = tl.program_id(0), tl.program_id(1)
    o_k = i_k * BK + tl.arange(0, BK)
    m_k = o_k < K
    o_r = tl.arange(0, BT)
    for i_t in range(tl.cdiv(T, BT)):
        o_t = i_t * BT + o_r
        m_t = o_t < T
        b_do = tl.load(DO + (o_t[:, None] * H + i_h) * K + o_k[None, :], mask=m_t[:, None] & m_k[None, :], other=0.)
        b_g = tl.load(G + o_t * H + i_h, mask=m_t, other=0.)
        b_db = tl.sum(b_do * b_g[:, None], 0)
        if MASKED:
            tl.atomic_add(DB + i_h * K + o_r[:, None] * 0 + o_k[None, :],
                          b_db[None, :] / BT,
                          mask=m_k[None, :] & (o_r[:, None] < BT),
                          sem='relaxed')
        else:
            tl.atomic_add(DB + i_h * K + o_r[:, None] * 0 + o_k[None, :],
                          b_db[None, :] / BT,
                          sem='relaxed')


def chunk_bwd_dbias(do, g, masked=True, BK=16, BT=16):
    T, H, K = do.shape
    db = torch.zeros(H, K)
    chunk_bwd_dbias_kernel[(triton.cdiv(K, BK), H)](do, g, db, T, H=H, K=K, BT=BT, BK=BK, MASKED=masked)
    return db


@triton.jit
def chunked_copy_kernel(X, Y, row_stride, T, BLOCK_T: tl.constexpr, MASKED: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    o = tl.arange(0, BLOCK_T)
    for i in range(0, T, BLOCK_T):
        offs = i.to(tl.int64) + o
        if MASKED:
            v = tl.load(X + row * row_stride + offs, mask=offs < T)
        else:
            v = tl.load(X + row * row_stride + offs)
        tl.store(Y + row * T + offs, v * 2, mask=offs < T)


@triton.jit
def int8_gemm_kernel(A, B, C, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                     MASK_K: tl.constexpr):
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.int32)
    for k in range(0, K, BK):
        kk = k + rk
        if MASK_K:
            a = tl.load(A + rm[:, None] * K + kk[None, :], mask=(rm[:, None] < M) & (kk[None, :] < K), other=0)
            b = tl.load(B + kk[:, None] * N + rn[None, :], mask=(kk[:, None] < K) & (rn[None, :] < N), other=0)
        else:
            a = tl.load(A + rm[:, None] * K + kk[None, :], mask=rm[:, None] < M, other=0)
            b = tl.load(B + kk[:, None] * N + rn[None, :], mask=rn[None, :] < N, other=0)
        acc = tl.dot(a, b, acc, out_dtype=tl.int32)
    tl.store(C + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def int8_gemm(a, b, mask_k=True):
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty(M, N, dtype=torch.int32)
    int8_gemm_kernel[(triton.cdiv(M, 16), triton.cdiv(N, 16))](a, b, c, M, N, K, BM=16, BN=16, BK=32,
                                                               MASK_K=mask_k)
    return c


@triton.jit
def fp8_quant_kernel(X, Q, S, N, FP8: tl.constexpr, FP8_MAX: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < N
    x = tl.load(X + row * N + offs, mask=mask, other=0.).to(tl.float32)
    scale = tl.maximum(tl.max(tl.abs(x), 0), 1e-12) / FP8_MAX
    q = (x / scale).to(FP8)
    tl.store(Q + row * N + offs, q.to(tl.uint8, bitcast=True), mask=mask)
    tl.store(S + row, scale)


FP8_TYPES = {"e4nv": (tl.float8e4nv, torch.float8_e4m3fn, 448.0), "e5": (tl.float8e5, torch.float8_e5m2, 57344.0),
             "e4b8": (tl.float8e4b8, torch.float8_e4m3fnuz, 240.0),
             "e5b16": (tl.float8e5b16, torch.float8_e5m2fnuz, 57344.0)}


def fp8_quant(x, name, rows=None):
    tt, td, largest = FP8_TYPES[name]
    M, N = x.shape
    q = torch.empty(M, N, dtype=torch.uint8)
    s = torch.empty(M, dtype=torch.float32)
    fp8_quant_kernel[(rows or M,)](x, q, s, N, FP8=tt, FP8_MAX=largest, BLOCK=triton.next_power_of_2(N))
    return q, s


@triton.jit
def fp8_roundtrip_kernel(X, Q, Y, n, FP8: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    q = tl.load(X + offs, mask=m).to(FP8)
    tl.store(Q + offs, q.to(tl.uint8, bitcast=True), mask=m)
    tl.store(Y + offs, q.to(Y.dtype.element_ty), mask=m)


def fp8_values(largest: float, tiny: float) -> torch.Tensor:
    edges = [125.6, 500.0, 0.0, -0.0, largest, -largest, largest * 1.5, -largest * 4, tiny, tiny * 0.5,
             tiny * 0.75, tiny * 1.5, tiny * 0.25, tiny * 2.5, float("inf"), float("-inf")]
    return torch.cat([torch.tensor(edges), torch.randn(700) * largest / 8, torch.randn(300) * tiny * 8,
                      (torch.rand(200) * 2 - 1) * largest])


def check_fp8_roundtrips() -> None:
    for name, (tt, td, largest) in FP8_TYPES.items():
        tiny = float(torch.tensor(1, dtype=torch.uint8).view(td).float())  # the smallest subnormal
        for src in (torch.float32, torch.float16, torch.bfloat16):
            x = fp8_values(largest, tiny).to(src)
            q = torch.empty(x.numel(), dtype=torch.uint8)
            y = torch.empty_like(x)
            fp8_roundtrip_kernel[(triton.cdiv(x.numel(), 256),)](x, q, y, x.numel(), FP8=tt, BLOCK=256)
            ref = x.float().clamp(-largest, largest).to(td)  # saturating, as the GPU's satfinite conversion
            assert torch.equal(q, ref.view(torch.uint8)), (name, src)
            assert torch.equal(y, ref.float().to(src)), (name, src)


def check_e4b15() -> None:
    """fp8e4b15 (no torch dtype) as compiled Triton converts it on sm_90: every code's value back to the same code
    but 0x7F/0xFF (1.875 saturates to 1.75), midpoints away from zero, larger values to +-1.75."""
    # The format's values on the host: CUDA's pow is not exact (2.0 ** -14 comes out one ulp below 2**-14).
    codes = torch.arange(256, dtype=torch.int32, device="cpu")
    e, m, sign = (codes >> 3) & 0xF, codes & 7, torch.where(codes >= 128, -1.0, 1.0)
    value = sign * torch.where(e == 0, m.double() * 2.0 ** -17, (8 + m).double() * 2.0 ** (e - 18).double())
    mid = (value[1:127] + value[2:128]) / 2  # positive midpoints between codes 1..127: ties go away from zero
    x = torch.cat([value, mid, torch.tensor([3.0, -5.0], device="cpu")]).float().to(torch.get_default_device())
    q = torch.empty(x.numel(), dtype=torch.uint8)
    y = torch.empty_like(x)
    fp8_roundtrip_kernel[(triton.cdiv(x.numel(), 256),)](x, q, y, x.numel(), FP8=tl.float8e4b15, BLOCK=256)
    odd = torch.arange(1, 127, device="cpu")
    expect = torch.cat([codes, (odd + 1).clamp_max(0x7E), torch.tensor([0x7E, 0xFE], device="cpu")])
    expect[128] = 0x80
    expect[0x7F], expect[0xFF] = 0x7E, 0xFE
    assert torch.equal(q.int().cpu(), expect.int()), (q.int().cpu() - expect.int()).nonzero()[:4]
    back = value.clone()
    back[0x7F], back[0xFF] = 1.75, -1.75
    assert torch.equal(y[:256].double().cpu(), back)


def clean() -> None:
    torch.manual_seed(0)
    x = torch.randint(-50, 50, (1000,), dtype=torch.int32)
    assert torch.equal(lookback_scan(x).long(), x.long().cumsum(0))
    xf = torch.randn(1000)
    torch.testing.assert_close(chained_sum(xf).double(), xf.double().sum()[None], rtol=1e-5, atol=1e-4)
    for dtype, bits in ((torch.uint8, 8), (torch.uint16, 16), (torch.uint32, 32), (torch.uint64, 64)):
        keys = torch.randint(0, 2**31 - 1, (300,), dtype=torch.int64).to(dtype)
        counts = radix_counts(keys, shift=bits - 8)
        digits = ((~keys.to(torch.int64)) >> (bits - 8)) & 0xFF
        expect = torch.stack([torch.bincount(digits[i:i + 128], minlength=256) for i in range(0, 300, 128)])
        assert torch.equal(counts.long(), expect), dtype
    do, g = torch.randn(37, 2, 20), torch.randn(37, 2)
    db = chunk_bwd_dbias(do, g)
    ref = (do.double() * g.double()[:, :, None]).sum(0) / 16 * 16  # each of the 16 rows adds a 16th
    torch.testing.assert_close(db.double(), ref, rtol=1e-5, atol=1e-5)
    x = torch.randn(3, 1000)
    y = torch.empty(3, 100)
    chunked_copy_kernel[(3,)](x, y, x.stride(0), 100, BLOCK_T=32, MASKED=True)
    assert torch.equal(y, x[:, :100] * 2)
    a = torch.randint(-128, 128, (40, 70), dtype=torch.int8)
    b = torch.randint(-128, 128, (70, 33), dtype=torch.int8)
    assert torch.equal(int8_gemm(a, b), a.int() @ b.int())
    check_fp8_roundtrips()
    check_e4b15()
    xq = torch.randn(6, 50) * 10
    for name, (_, td, largest) in FP8_TYPES.items():
        q, s = fp8_quant(xq, name)
        scale = (xq.abs().amax(1).clamp_min(1e-12) / largest)
        torch.testing.assert_close(s, scale)
        assert torch.equal(q, (xq / s[:, None]).clamp(-largest, largest).to(td).view(torch.uint8)), name


def lookback_flag_first() -> None:
    x = torch.randint(-50, 50, (1000,), dtype=torch.int32)
    lookback_scan(x, flag_first=True)


def chained_sum_flag_first() -> None:
    chained_sum(torch.randn(1000), flag_first=True)


def lookback_waits_on_next() -> None:
    x = torch.randint(-50, 50, (300,), dtype=torch.int32)
    lookback_scan(x, wait_on_next=True)


def radix_wide_digit() -> None:
    keys = torch.randint(0, 2**31 - 1, (300,), dtype=torch.int64).to(torch.uint32)
    radix_counts(keys, shift=20, digit_mask=0x1FF)  # 9 bits of digit into 256 bins


def atomic_unmasked() -> None:
    do, g = torch.randn(37, 2, 20), torch.randn(37, 2)
    chunk_bwd_dbias(do, g, masked=False)  # K=20 in blocks of 16: the second block's atomics run past DB's end


def counter_unmasked() -> None:
    x = torch.randn(3, 100)
    y = torch.empty(3, 100)
    chunked_copy_kernel[(3,)](x, y, x.stride(0), 100, BLOCK_T=32, MASKED=False)


def int8_k_tail() -> None:
    a = torch.randint(-128, 128, (40, 70), dtype=torch.int8)
    b = torch.randint(-128, 128, (70, 33), dtype=torch.int8)
    int8_gemm(a, b, mask_k=False)


def fp8_extra_row() -> None:
    xq = torch.randn(6, 50)
    fp8_quant(xq, "e4nv", rows=7)  # a grid of one row too many


@triton.jit
def int8_dot_into_acc_kernel(A, B, C, M: tl.constexpr):
    o = tl.arange(0, M)
    a = tl.load(A + o[:, None] * M + o[None, :])
    b = tl.load(B + o[:, None] * M + o[None, :])
    acc = tl.zeros((M, M), dtype=tl.int32)
    acc = tl.dot(a, b, acc)  # no out_dtype: Triton 3.9 takes the accumulator's type, 3.6 stops on an assert
    tl.store(C + o[:, None] * M + o[None, :], acc)


def int8_dot_into_acc() -> None:
    a = torch.randint(-128, 128, (16, 16), dtype=torch.int8)
    b = torch.randint(-128, 128, (16, 16), dtype=torch.int8)
    c = torch.empty(16, 16, dtype=torch.int32)
    int8_dot_into_acc_kernel[(1,)](a, b, c, M=16)
    assert torch.equal(c, a.int() @ b.int())


if __name__ == "__main__":
    globals()[sys.argv[1]]()
