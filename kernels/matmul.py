"""Matrix multiplication C = A @ B, autotuned, with grouped program order.

Masks on every ragged edge (M, N and the K remainder), real strides for all three matrices (a sliced
or transposed A or B is read where it lies, never copied), fp32 accumulation, and the launch grid
computed from the config the autotuner picked (META), never from a hardcoded block size.
"""

import torch
import triton
import triton.language as tl

import tdebug


def _configs():
    configs = []
    for bm, bn, bk, warps, stages in [
        (128, 256, 64, 8, 3), (256, 128, 64, 8, 3), (128, 128, 64, 4, 4), (128, 128, 32, 4, 4),
        (64, 128, 32, 4, 4), (128, 64, 32, 4, 4), (64, 64, 32, 4, 4), (32, 32, 32, 4, 2),
    ]:
        configs.append(triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8},
                                     num_warps=warps, num_stages=stages))
    return configs


@triton.autotune(configs=_configs(), key=["M", "N", "K"])
@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr,
                  M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    offs_m = pid_m.to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n.to(tl.int64) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < k_left), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < k_left) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c = acc.to(c_ptr.dtype.element_ty)
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, c, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"matmul: incompatible shapes {tuple(a.shape)} @ {tuple(b.shape)}")
    if a.dtype != b.dtype:
        raise ValueError(f"matmul: dtypes differ ({a.dtype} vs {b.dtype})")
    M, K = a.shape
    _, N = b.shape
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    grid = lambda META: (triton.cdiv(M, META["BLOCK_M"]) * triton.cdiv(N, META["BLOCK_N"]),)
    matmul_kernel[grid](a, b, c, M, N, K,
                        a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))
    return c


def reference(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a @ b


def make_inputs(case: tdebug.Case) -> tuple:
    M, N, K = case.shape
    return tdebug.randn(case, (M, K), salt=1), tdebug.randn(case, (K, N), salt=2)


def complete_shape(shape: tuple) -> tuple:
    """MxN takes a default K of 65 (ragged against every BLOCK_K); MxNxK as given."""
    if len(shape) == 2:
        return (shape[0], shape[1], 65)
    if len(shape) == 3:
        return tuple(shape)
    raise ValueError(f"matmul takes a shape MxN or MxNxK, got {'x'.join(map(str, shape))}")


SPEC = tdebug.KernelSpec(
    name="matmul",
    launch=matmul,
    reference=reference,
    make_inputs=make_inputs,
    kernel=matmul_kernel,
    dims=("M", "N", "K"),
    complete_shape=complete_shape,
    default_shape=(129, 127, 65),
    shapes=[(64, 64, 64), (129, 127, 65), (1, 131, 67), (97, 1, 33), (257, 255, 129), (128, 128, 257)],
    quick_shapes=[(129, 127, 65), (64, 64, 64)],
    tolerances={"fp32": (1e-4, 1e-5), "fp16": (1e-2, 2e-3)},
    baseline=torch.matmul,
    flops=lambda s: 2.0 * s[0] * s[1] * s[2],
    bytes=lambda s, size: (s[0] * s[2] + s[2] * s[1] + s[0] * s[1]) * size,
    bench_shapes=[(1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192),
                  (8192, 4096, 4096), (8192, 11008, 4096), (8192, 4096, 11008)],
)
