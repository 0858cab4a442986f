"""C = relu(A @ B + bias): a matmul with the bias add and the ReLU fused into its epilogue.

The structure of kernels/matmul.py (autotuned, grouped program order, masks on M, N and the K
remainder, real strides for A, B and C, fp32 accumulation, grid from META), plus a bias vector of N
elements read through its own stride, added to the fp32 accumulator and clamped at 0 before the one
down-cast and store: C never makes a round trip through memory between the three operations.

fp32 inputs use tl.dot's "ieee" precision: PyTorch's fp32 matmul (the baseline) does not use TF32
unless torch.backends.cuda.matmul.allow_tf32 is set, and TF32's 10-bit mantissa would miss fp32
tolerances on a GPU. fp16 inputs use the tensor cores as usual.
"""

import torch
import triton
import triton.language as tl

import tdebug


def _configs():
    configs = []
    for bm, bn, bk, warps, stages in [
        (128, 256, 64, 8, 3), (256, 128, 64, 8, 3), (128, 128, 64, 4, 4), (128, 128, 32, 4, 4),
        (64, 128, 32, 4, 4), (128, 64, 32, 4, 4), (64, 64, 32, 4, 4), (64, 256, 32, 8, 4),
        (256, 64, 32, 8, 3), (32, 32, 32, 4, 2),
    ]:
        configs.append(triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8},
                                     num_warps=warps, num_stages=stages))
    return configs


@triton.autotune(configs=_configs(), key=["M", "N", "K"])
@triton.jit
def matmul_bias_relu_kernel(a_ptr, b_ptr, bias_ptr, c_ptr,
                            M, N, K,
                            stride_am, stride_ak, stride_bk, stride_bn, stride_bias, stride_cm, stride_cn,
                            INPUT_PRECISION: tl.constexpr,
                            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                            GROUP_M: tl.constexpr):
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
        acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    # Epilogue: bias + ReLU on the fp32 accumulator, then one down-cast.
    bias = tl.load(bias_ptr + offs_n * stride_bias, mask=offs_n < N, other=0.0).to(tl.float32)
    acc = tl.maximum(acc + bias[None, :], 0.0)
    c = acc.to(c_ptr.dtype.element_ty)
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, c, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def matmul_bias_relu(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"matmul_bias_relu: incompatible shapes {tuple(a.shape)} @ {tuple(b.shape)}")
    M, K = a.shape
    _, N = b.shape
    if bias.shape != (N,):
        raise ValueError(f"matmul_bias_relu: bias must have shape ({N},), got {tuple(bias.shape)}")
    if a.dtype != b.dtype or bias.dtype != a.dtype:
        raise ValueError(f"matmul_bias_relu: dtypes differ ({a.dtype}, {b.dtype}, bias {bias.dtype})")
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    precision = "ieee" if a.dtype == torch.float32 else "tf32"  # "tf32" is ignored for 16-bit inputs
    grid = lambda META: (triton.cdiv(M, META["BLOCK_M"]) * triton.cdiv(N, META["BLOCK_N"]),)
    matmul_bias_relu_kernel[grid](a, b, bias, c, M, N, K,
                                  a.stride(0), a.stride(1), b.stride(0), b.stride(1), bias.stride(0),
                                  c.stride(0), c.stride(1), INPUT_PRECISION=precision)
    return c


def reference(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    return torch.relu(torch.matmul(a, b) + bias)


def make_inputs(case: tdebug.Case) -> tuple:
    M, N, K = case.shape
    a = tdebug.randn(case, (M, K), salt=1)
    b = tdebug.randn(case, (K, N), salt=2)
    # A bias of the order of A @ B's entries (sqrt(K)): the ReLU cuts a different fraction of each column.
    bias = tdebug.randn(case, (N,), salt=3, scale=float(K) ** 0.5)
    return a, b, bias


def complete_shape(shape: tuple) -> tuple:
    """MxN takes a default K of 65 (ragged against every BLOCK_K); MxNxK as given."""
    if len(shape) == 2:
        return (shape[0], shape[1], 65)
    if len(shape) == 3:
        return tuple(shape)
    raise ValueError(f"matmul_bias_relu takes a shape MxN or MxNxK, got {'x'.join(map(str, shape))}")


SPEC = tdebug.KernelSpec(
    name="matmul_bias_relu",
    launch=matmul_bias_relu,
    reference=reference,
    make_inputs=make_inputs,
    kernel=matmul_bias_relu_kernel,
    dims=("M", "N", "K"),
    complete_shape=complete_shape,
    default_shape=(129, 127, 65),
    shapes=[(64, 64, 64), (129, 127, 65), (1, 131, 67), (97, 1, 33), (257, 255, 129), (128, 128, 257),
            (31, 17, 1)],
    quick_shapes=[(129, 127, 65), (64, 64, 64)],
    baseline=lambda a, b, bias: torch.relu(torch.matmul(a, b) + bias),
    flops=lambda s: 2.0 * s[0] * s[1] * s[2] + 2.0 * s[0] * s[1],
    bytes=lambda s, size: (s[0] * s[2] + s[2] * s[1] + s[0] * s[1] + s[1]) * size,
    bench_shapes=[(1024, 1024, 1024), (4096, 4096, 4096), (8192, 8192, 8192), (8192, 11008, 4096),
                  (8192, 4096, 11008)],
)
