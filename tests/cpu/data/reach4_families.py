"""Kernels of the families issue 48 names, purpose-written in the style of their real code (never copied): an
SGLang-style paged-KV append through a block table, MoE alignment with tl.histogram + tl.sort, tl.gather, a
FlagGems-style top-k first stage, a descending sort on `~key`, torchao-style int4 and fp8 blockwise dequant GEMMs,
the persistent matmul of Triton's tutorials, a tensor-descriptor copy. Each correct one checks its result
each
`*_bug` seeds one bug. Run as a script: `python reach4_families.py NAME`."""
import sys

import torch
import triton
import triton.language as tl


def tf32(x: torch.Tensor) -> torch.Tensor:
    """fp32 values as an fp32 tl.dot reads them at TF32 input precision (Triton's default): 13 low mantissa bits
    dropped. The references multiply these in float64, so the checks stay at fp32 tolerances."""
    return (x.float().contiguous().view(torch.int32) & -0x2000).view(torch.float32)


@triton.jit
def paged_kv_append_kernel(K_NEW, CACHE, BLOCK_TABLE, SEQ_LENS, stride_bt, H: tl.constexpr, D: tl.constexpr,
                           PAGE: tl.constexpr):
    seq = tl.program_id(0)
    pos = tl.load(SEQ_LENS + seq)  # the new token's position
    page = tl.load(BLOCK_TABLE + seq * stride_bt + pos // PAGE)
    slot = page.to(tl.int64) * PAGE + pos % PAGE
    hd = tl.arange(0, H * D)
    tl.store(CACHE + slot * H * D + hd, tl.load(K_NEW + seq * H * D + hd))


def paged_kv():
    S, H, D, PAGE, PAGES = 4, 2, 8, 4, 16
    cache = torch.zeros(PAGES * PAGE, H, D)
    bt = torch.randperm(PAGES)[: S * 3].view(S, 3).to(torch.int32)
    lens = torch.tensor([0, 5, 9, 11], dtype=torch.int32)
    k = torch.randn(S, H, D)
    paged_kv_append_kernel[(S,)](k, cache, bt, lens, bt.stride(0), H=H, D=D, PAGE=PAGE)
    for s in range(S):
        slot = int(bt[s, lens[s] // PAGE]) * PAGE + int(lens[s]) % PAGE
        assert torch.equal(cache[slot], k[s])


@triton.jit
def moe_align_kernel(TOPK_IDS, COUNTS, SORTED_IDS, n, E: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    ids = tl.load(TOPK_IDS + offs, mask=m, other=E)
    hist = tl.histogram(ids, E + 1)
    tl.store(COUNTS + tl.arange(0, E + 1), hist)
    key = ids.to(tl.int32) * BLOCK + offs  # expert-major, stable
    s = tl.sort(key)
    tl.store(SORTED_IDS + offs, s % BLOCK, mask=offs < n)


def moe_align():
    n, E = 50, 7
    ids = torch.randint(0, E, (n,), dtype=torch.int32)
    counts = torch.empty(8, dtype=torch.int32)
    sorted_ids = torch.empty(n, dtype=torch.int32)
    moe_align_kernel[(1,)](ids, counts, sorted_ids, n, E=E, BLOCK=64)
    assert torch.equal(counts[:E], torch.bincount(ids, minlength=E).int())
    assert torch.equal(sorted_ids.long(), torch.sort(ids.long() * 64 + torch.arange(n), stable=True).values % 64)


@triton.jit
def gather_rows_kernel(X, IDX, Y, N: tl.constexpr):
    o = tl.arange(0, N)
    x = tl.load(X + o)
    i = tl.load(IDX + o)
    tl.store(Y + o, tl.gather(x, i, 0))


def gather():
    x = torch.randn(32)
    idx = torch.randint(0, 32, (32,), dtype=torch.int32)
    y = torch.empty(32)
    gather_rows_kernel[(1,)](x, idx, y, N=32)
    assert torch.equal(y, x[idx.long()])


@triton.jit
def topk_stage1_kernel(X, VALS, IDXS, N, K: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    chunk = tl.program_id(1)
    offs = chunk * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(X + row * N + offs, mask=offs < N, other=float("-inf"))
    for j in tl.static_range(K):
        best = tl.max(x, 0)
        at = tl.argmax(x, 0)
        tl.store(VALS + (row * tl.num_programs(1) + chunk) * K + j, best)
        tl.store(IDXS + (row * tl.num_programs(1) + chunk) * K + j, chunk * BLOCK + at)
        x = tl.where(tl.arange(0, BLOCK) == at, float("-inf"), x)


def topk():
    M, N, K, B = 3, 200, 4, 64
    x = torch.randn(M, N)
    C = triton.cdiv(N, B)
    vals = torch.empty(M, C, K)
    idxs = torch.empty(M, C, K, dtype=torch.int32)
    topk_stage1_kernel[(M, C)](x, vals, idxs, N, K=K, BLOCK=B)
    v, i = vals.view(M, -1).topk(K, dim=1)
    torch.testing.assert_close(v, x.topk(K, dim=1).values)


@triton.jit
def radix_sort_kernel(KEYS, OUT, N: tl.constexpr, DESC: tl.constexpr):
    o = tl.arange(0, N)
    k = tl.load(KEYS + o)
    if DESC:
        k = ~k
    s = tl.sort(k)
    if DESC:
        s = ~s
    tl.store(OUT + o, s)


def radix_sort():
    keys = torch.randint(0, 2**31 - 1, (64,), dtype=torch.int64).to(torch.uint32)
    out = torch.empty_like(keys)
    radix_sort_kernel[(1,)](keys, out, N=64, DESC=True)
    assert torch.equal(out.long(), keys.long().sort(descending=True).values)


@triton.jit
def int4_dequant_gemm_kernel(A, QW, SCALES, C, M, N, K, GROUP: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                             BK: tl.constexpr):
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        rk = k + tl.arange(0, BK)
        a = tl.load(A + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.)
        packed = tl.load(QW + (rk[:, None] // 2) * N + rn[None, :], mask=(rk[:, None] < K) & (rn[None, :] < N), other=0)
        shift = (rk[:, None] % 2) * 4
        q = ((packed >> shift) & 0xF).to(tl.float32) - 8.0
        m_kn = (rk[:, None] < K) & (rn[None, :] < N)
        s = tl.load(SCALES + (rk[:, None] // GROUP) * N + rn[None, :], mask=m_kn, other=0.)
        acc += tl.dot(a, q * s)
    tl.store(C + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def int4_gemm():
    M, N, K, G = 20, 24, 64, 32
    q = torch.randint(0, 16, (K, N), dtype=torch.int32)
    packed = (q[0::2] | (q[1::2] << 4)).to(torch.uint8)
    scales = torch.rand(K // G, N) + 0.5
    a = torch.randn(M, K)
    c = torch.empty(M, N)
    int4_dequant_gemm_kernel[(2, 2)](a, packed, scales, c, M, N, K, GROUP=G, BM=16, BN=16, BK=32)
    w = (q.float() - 8) * scales.repeat_interleave(G, 0)  # dequantised in fp32, as the kernel does
    torch.testing.assert_close(c.double(), tf32(a).double() @ tf32(w).double(), rtol=1e-4, atol=1e-3)


@triton.jit
def fp8_block_gemm_kernel(A, B, AS, BS, C, M, N, K, BLK: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLK)):
        rk = k * BLK + tl.arange(0, BLK)
        a = tl.load(A + rm[:, None] * K + rk[None, :], mask=rm[:, None] < M, other=0.)
        b = tl.load(B + rk[:, None] * N + rn[None, :], mask=rn[None, :] < N, other=0.)
        a_s = tl.load(AS + rm * tl.cdiv(K, BLK) + k, mask=rm < M, other=0.)
        b_s = tl.load(BS + k * tl.cdiv(N, BLK) + pid_n)
        acc += tl.dot(a, b).to(tl.float32) * a_s[:, None] * b_s
    tl.store(C + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def fp8_gemm():
    M, N, K, BLK = 20, 32, 64, 32
    a = (torch.randn(M, K) * 2).to(torch.float8_e4m3fn)
    b = (torch.randn(K, N)).to(torch.float8_e4m3fn)
    a_s = torch.rand(M, K // BLK) + 0.5
    b_s = torch.rand(K // BLK, N // BLK) + 0.5
    c = torch.empty(M, N)
    fp8_block_gemm_kernel[(2, 1)](a, b, a_s, b_s, c, M, N, K, BLK=BLK, BM=16, BN=32)
    ref = sum((a.double()[:, k * BLK:(k + 1) * BLK] @ b.double()[k * BLK:(k + 1) * BLK]) * a_s.double()[:, k:k + 1]
              * b_s.double()[k, 0] for k in range(K // BLK))
    torch.testing.assert_close(c.double(), ref, rtol=1e-4, atol=1e-3)


@triton.jit
def persistent_matmul_kernel(A, B, C, M, N, K, NUM_SMS: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                             BK: tl.constexpr):
    start = tl.program_id(0)
    tiles_n = tl.cdiv(N, BN)
    tiles = tl.cdiv(M, BM) * tiles_n
    for tile in range(start, tiles, NUM_SMS):
        pm = tile // tiles_n
        pn = tile % tiles_n
        rm = pm * BM + tl.arange(0, BM)
        rn = pn * BN + tl.arange(0, BN)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, K, BK):
            rk = k + tl.arange(0, BK)
            a = tl.load(A + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.)
            b = tl.load(B + rk[:, None] * N + rn[None, :], mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.)
            acc = tl.dot(a, b, acc)
        tl.store(C + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def persistent():
    M, N, K = 50, 40, 30
    a, b = torch.randn(M, K), torch.randn(K, N)
    c = torch.empty(M, N)
    persistent_matmul_kernel[(3,)](a, b, c, M, N, K, NUM_SMS=3, BM=16, BN=16, BK=16)
    torch.testing.assert_close(c.double(), tf32(a).double() @ tf32(b).double(), rtol=1e-4, atol=1e-4)


@triton.jit
def desc_copy_kernel(X, Y, M, N, BM: tl.constexpr, BN: tl.constexpr):
    xd = tl.make_tensor_descriptor(X, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    yd = tl.make_tensor_descriptor(Y, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    pm, pn = tl.program_id(0), tl.program_id(1)
    yd.store([pm * BM, pn * BN], xd.load([pm * BM, pn * BN]) * 2)


def descriptors():
    if not hasattr(tl, "make_tensor_descriptor"):
        print("no tensor descriptors in this Triton")
        return
    x = torch.randn(40, 48)
    y = torch.empty(40, 48)
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8))
    desc_copy_kernel[(3, 3)](x, y, 40, 48, BM=16, BN=16)
    assert torch.equal(y, x * 2)




def paged_kv_bug():  # a position past its sequence's block-table row: the last sequence reads past the table
    S, H, D, PAGE, PAGES = 4, 2, 8, 4, 16
    cache = torch.zeros(PAGES * PAGE, H, D)
    bt = torch.randperm(PAGES)[: S * 3].view(S, 3).to(torch.int32)
    lens = torch.tensor([0, 5, 9, 12], dtype=torch.int32)
    paged_kv_append_kernel[(S,)](torch.randn(S, H, D), cache, bt, lens, bt.stride(0), H=H, D=D, PAGE=PAGE)


def moe_align_bug():  # counts sized for E experts, the kernel writes E + 1 (the padding bin)
    n, E = 50, 7
    ids = torch.randint(0, E, (n,), dtype=torch.int32)
    moe_align_kernel[(1,)](ids, torch.empty(E, dtype=torch.int32), torch.empty(n, dtype=torch.int32), n, E=E, BLOCK=64)


def topk_bug():  # the values buffer sized for one chunk per row
    M, N, K, B = 3, 200, 4, 64
    C = triton.cdiv(N, B)
    topk_stage1_kernel[(M, C)](torch.randn(M, N), torch.empty(M, 1, K), torch.empty(M, C, K, dtype=torch.int32), N,
                               K=K, BLOCK=B)


def int4_gemm_bug():  # scales of one group per 64 rows where the kernel reads one per 32
    M, N, K, G = 20, 24, 64, 32
    packed = torch.randint(0, 256, (K // 2, N), dtype=torch.int32).to(torch.uint8)
    int4_dequant_gemm_kernel[(2, 2)](torch.randn(M, K), packed, torch.rand(1, N), torch.empty(M, N), M, N, K,
                                     GROUP=G, BM=16, BN=16, BK=32)


def persistent_bug():  # every program walks the tiles from its own start with step 1: tiles computed twice
    M, N, K = 50, 40, 30
    persistent_matmul_kernel[(3,)](torch.randn(M, K), torch.randn(K, N), torch.empty(M, N), M, N, K, NUM_SMS=1,
                                   BM=16, BN=16, BK=16)


def radix_sort_bug():  # N larger than the keys
    keys = torch.randint(0, 2**31 - 1, (60,), dtype=torch.int64).to(torch.uint32)
    radix_sort_kernel[(1,)](keys, torch.empty(64, dtype=torch.uint32), N=64, DESC=True)


def gather_bug():  # indices one past the row
    x = torch.randn(32)
    idx = torch.randint(0, 32, (32,), dtype=torch.int32) + 1
    gather_rows_kernel[(1,)](x, idx, torch.empty(32), N=32)


def clean():
    for family in (paged_kv, moe_align, gather, topk, radix_sort, int4_gemm, fp8_gemm, persistent, descriptors):
        family()


if __name__ == "__main__":
    torch.manual_seed(0)
    globals()[sys.argv[1]]()
