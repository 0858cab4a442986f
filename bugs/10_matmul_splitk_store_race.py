"""Exercise 10: split-K matmul whose programs overwrite each other's partial sums.

What you were doing: profiling a split-K matmul (SPLIT_K programs per output tile, each summing a slice
of K). The atomics showed up in the profile, and since every program writes a whole tile you replaced
tl.atomic_add with a plain tl.store.

What you saw: it got faster and wrong. Each tile of C now holds the partial sum of one slice of K,
the one whose program stored last: on a GPU that changes from run to run, so the error does too.
compute-sanitizer's racecheck reports nothing: it watches shared memory, and this race is in global
memory, between programs.
"""

import torch
import triton
import triton.language as tl

import tdebug


@triton.jit
def matmul_splitk_kernel(a_ptr, b_ptr, c_ptr,
                         M, N, K, K_PER_SPLIT,
                         stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                         INPUT_PRECISION: tl.constexpr,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    pid_k = tl.program_id(2)
    offs_m = pid_m.to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n.to(tl.int64) * BLOCK_N + tl.arange(0, BLOCK_N)
    k_start = pid_k * K_PER_SPLIT
    k_end = tl.minimum(k_start + K_PER_SPLIT, K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(k_start, k_end, BLOCK_K):
        offs_k = k + tl.arange(0, BLOCK_K)
        a = tl.load(a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak,
                    mask=(offs_m[:, None] < M) & (offs_k[None, :] < k_end), other=0.0)
        b = tl.load(b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn,
                    mask=(offs_k[:, None] < k_end) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION)
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def matmul_splitk(a: torch.Tensor, b: torch.Tensor, SPLIT_K: int = 4,
                  BLOCK_M: int = 64, BLOCK_N: int = 64, BLOCK_K: int = 32) -> torch.Tensor:
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"matmul_splitk: incompatible shapes {tuple(a.shape)} @ {tuple(b.shape)}")
    if a.dtype != b.dtype:
        raise ValueError(f"matmul_splitk: dtypes differ ({a.dtype} vs {b.dtype})")
    M, K = a.shape
    _, N = b.shape
    # The partial sums meet in C: it must start at zero, and in fp32 (atomics on fp32, one rounding at the end).
    c = torch.zeros((M, N), device=a.device, dtype=torch.float32)
    # Each slice is a whole number of BLOCK_K steps; the last one may be shorter (or, for tiny K, absent).
    k_per_split = triton.cdiv(triton.cdiv(K, SPLIT_K), BLOCK_K) * BLOCK_K
    grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N), triton.cdiv(K, k_per_split))
    matmul_splitk_kernel[grid](a, b, c, M, N, K, k_per_split,
                               a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                               INPUT_PRECISION="ieee" if a.dtype == torch.float32 else "tf32",
                               BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K)
    return c.to(a.dtype)


def reference(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a @ b


def make_inputs(case: tdebug.Case) -> tuple:
    M, N, K = case.shape
    return tdebug.randn(case, (M, K), salt=1), tdebug.randn(case, (K, N), salt=2)


SPEC = tdebug.KernelSpec(
    name="matmul_splitk",
    launch=matmul_splitk,
    reference=reference,
    make_inputs=make_inputs,
    kernel=matmul_splitk_kernel,
    dims=("M", "N", "K"),
    default_shape=(65, 63, 1000),
    # Long K against a few output tiles; K ragged against the slices (1000, 257, 97) and shorter than
    # SPLIT_K * BLOCK_K (97: three slices, the last short; 31: one slice).
    shapes=[(64, 64, 512), (65, 63, 1000), (129, 127, 257), (1, 33, 97), (33, 1, 31), (96, 32, 2048)],
    quick_shapes=[(65, 63, 520), (33, 1, 31)],
    tolerances={"fp32": (1e-4, 1e-5), "fp16": (1e-2, 2e-3)},
    baseline=torch.matmul,
    flops=lambda s: 2.0 * s[0] * s[1] * s[2],
    bytes=lambda s, size: (s[0] * s[2] + s[2] * s[1]) * size + 4 * s[0] * s[1],
    bench_shapes=[(64, 64, 65536), (256, 256, 16384), (1024, 1024, 8192)],
)

BUG = tdebug.Bug(
    fixes='kernels/matmul_splitk.py',
    title='Race between programs: tl.store instead of tl.atomic_add',
    symptom="each tile of C holds one slice's partial sum; on a GPU the result changes from run to run",
    hints=[
        "How many programs write each element of C? Look at the grid's third dimension.",
        (
            'When two programs store to the same address, which value survives? Is there an order between '
            'programs of one launch?'
        ),
        'Combine the partial tiles with tl.atomic_add(c_ptrs, acc, mask=...) into a zeroed C.',
    ],
    caught_by=['check', 'sanitize:race'],
    difficulty='medium',
    shape=(65, 63, 520),
    layout='contiguous',
    dtype='fp32',
    gpu_only=False,
)
