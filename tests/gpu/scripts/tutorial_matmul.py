"""Correct: a tiled fp16 matmul as Triton's matmul tutorial builds one (autotuned over a few tile configs, programs
ordered in groups of rows for L2 reuse, wrapped row/column offsets, a K-masked loop, fp32 accumulation), on a GPU
if there is one, checked against PyTorch in float64."""

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def tile(m: int, n: int, k: int, group: int, warps: int, stages: int) -> triton.Config:
    return triton.Config({"BLOCK_M": m, "BLOCK_N": n, "BLOCK_K": k, "GROUP_M": group}, num_warps=warps,
                         num_stages=stages)


CONFIGS = [tile(128, 128, 64, 8, 8, 3), tile(64, 128, 32, 8, 4, 4), tile(128, 64, 32, 8, 4, 4),
           tile(64, 64, 32, 4, 4, 3)]


@triton.autotune(configs=CONFIGS, key=["M", "N", "K"])
@triton.jit
def grouped_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm,
                          stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                          GROUP_M: tl.constexpr):
    # One program per output tile, numbered so that GROUP_M consecutive tile rows share the B columns they read.
    pid = tl.program_id(axis=0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * tiles_n
    group = pid // per_group
    first_m = group * GROUP_M
    rows_here = min(tiles_m - first_m, GROUP_M)
    tile_m = first_m + ((pid % per_group) % rows_here)
    tile_n = (pid % per_group) // rows_here

    # Rows and columns past the edge wrap around (their results are masked at the store).
    offs_m = (tile_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_n = (tile_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_tile = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_tile = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for step in range(0, tl.cdiv(K, BLOCK_K)):
        left = K - step * BLOCK_K
        a = tl.load(a_tile, mask=offs_k[None, :] < left, other=0.0)
        b = tl.load(b_tile, mask=offs_k[:, None] < left, other=0.0)
        acc = tl.dot(a, b, acc)
        a_tile += BLOCK_K * stride_ak
        b_tile += BLOCK_K * stride_bk
    c = acc.to(tl.float16)

    rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.store(c_ptr + rows[:, None] * stride_cm + cols[None, :] * stride_cn, c,
             mask=(rows[:, None] < M) & (cols[None, :] < N))


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    assert a.shape[1] == b.shape[0] and a.is_contiguous()
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), device=a.device, dtype=torch.float16)

    def grid(meta: dict) -> tuple[int]:
        return (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)

    grouped_matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                c.stride(0), c.stride(1))
    return c


torch.manual_seed(0)
for M, N, K in ((512, 512, 512), (300, 200, 136)):  # one shape of whole tiles, one ragged in every dimension
    a = torch.randn(M, K, device=DEVICE, dtype=torch.float16)
    b = torch.randn(K, N, device=DEVICE, dtype=torch.float16)
    c = matmul(a, b)
    ref = a.double() @ b.double()
    err = float((c.double() - ref).norm() / ref.norm())
    assert err < 1e-2, (M, N, K, err)
    print(f"ok {M}x{N}x{K} {err:.2e}")
