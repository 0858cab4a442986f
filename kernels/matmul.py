"""Matrix multiplication C = A @ B, autotuned, with grouped program order.

Masks on every ragged edge (M, N and the K remainder), real strides for all three matrices (a sliced
or transposed A or B is read where it lies, never copied), fp32 accumulation, and the launch grid
computed from the config the autotuner picked (META), never from a hardcoded block size.

Two kernels, chosen by the launcher:
- matmul_kernel, portable (any GPU, any strides, the CPU interpreter): pointer loads with masks.
- matmul_kernel_tma, Hopper only (compute capability 9.x, fp16/bf16, row-major A and B with 16-byte
  aligned rows): tiles come through the bulk tensor copy engine (TMA descriptors built on the host,
  whose out-of-bounds boxes read zeros and clip stores, so ragged edges need no masks), and a
  persistent grid of one program per SM walks the output tiles in grouped order, so the next tile's
  loads overlap the last one's epilogue.
"""

import functools
import os

import torch
import triton
import triton.language as tl

import tdebug


@functools.cache
def _tuning_timer():
    from tdebug.bench.timing import Timer

    return Timer(warmup_ms=10, rep_ms=40, min_reps=25, max_reps=300)


def _gpu_time(kernel_call, quantiles):
    """The autotuner's timer: the GPU's time per call, L2 flushed, host launch overhead kept out
    (tdebug.bench.Timer). Triton's default do_bench counts the host's launch time (over 100 us for a
    TMA launch) when a ~10 us product is quicker than its L2 flush, so it picks at random among the
    small-tile configs of a 1024^3 product."""
    from tdebug.bench.timing import quantile

    times, _ = _tuning_timer().samples_many([kernel_call])[0]
    return [quantile(times, q) for q in quantiles]


def _configs():
    configs = []
    for bm, bn, bk, warps, stages in [
        (128, 256, 64, 8, 3), (256, 128, 64, 8, 3), (128, 128, 64, 4, 4), (128, 128, 64, 8, 4),
        (128, 128, 32, 4, 4), (64, 128, 64, 4, 4), (128, 64, 64, 4, 4), (64, 64, 64, 4, 3),
        (64, 64, 32, 4, 4), (32, 32, 32, 4, 2),
    ]:
        configs.append(triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8},
                                     num_warps=warps, num_stages=stages))
    return configs


@triton.autotune(configs=_configs(), key=["M", "N", "K"], do_bench=_gpu_time)
@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr,
                  M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  INPUT_PRECISION: tl.constexpr,
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
        acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c = acc.to(c_ptr.dtype.element_ty)
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, c, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def _set_block_shapes(nargs):
    """Config pre-hook: the TMA descriptors' boxes follow the config's tile sizes."""
    bm, bn, bk = nargs["BLOCK_M"], nargs["BLOCK_N"], nargs["BLOCK_K"]
    nargs["a_desc"].block_shape = [bm, bk]
    nargs["b_desc"].block_shape = [bk, bn]
    nargs["c_desc"].block_shape = [bm, bn // 2 if nargs["SUBTILE"] else bn]


def _tma_configs():
    configs = []
    for bm, bn, bk, warps, stages, subtile in [
        (128, 256, 64, 8, 3, False), (128, 256, 64, 8, 3, True), (128, 256, 64, 8, 4, True),
        (256, 128, 64, 8, 3, False), (128, 128, 64, 4, 4, False), (128, 128, 64, 8, 4, False),
        (128, 128, 128, 8, 3, False), (64, 256, 64, 4, 4, False), (64, 128, 64, 4, 4, False),
        (64, 128, 128, 4, 3, False), (64, 128, 128, 4, 4, False), (128, 64, 64, 4, 4, False),
        (64, 64, 64, 4, 4, False),
    ]:
        configs.append(triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8, "SUBTILE": subtile},
                                     num_warps=warps, num_stages=stages, pre_hook=_set_block_shapes))
    return configs


@triton.jit
def _tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_M: tl.constexpr):
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = tile_id // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + (tile_id % group_size_m)
    pid_n = (tile_id % num_pid_in_group) // group_size_m
    return pid_m, pid_n


@triton.autotune(configs=_tma_configs(), key=["M", "N", "K"], do_bench=_gpu_time)
@triton.jit
def matmul_kernel_tma(a_desc, b_desc, c_desc, M, N, K,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                      GROUP_M: tl.constexpr, SUBTILE: tl.constexpr, NUM_SMS: tl.constexpr):
    start_pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    num_tiles = num_pid_m * num_pid_n
    tile_id_c = start_pid - NUM_SMS  # the epilogue's own counter (keeps prologue and epilogue apart)
    for tile_id in tl.range(start_pid, num_tiles, NUM_SMS, flatten=True):
        pid_m, pid_n = _tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_M)
        offs_m = pid_m * BLOCK_M
        offs_n = pid_n * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ki in range(k_tiles):
            offs_k = ki * BLOCK_K
            a = a_desc.load([offs_m, offs_k])
            b = b_desc.load([offs_k, offs_n])
            acc = tl.dot(a, b, acc)
        tile_id_c += NUM_SMS
        pid_m, pid_n = _tile_coords(tile_id_c, num_pid_m, num_pid_n, GROUP_M)
        if SUBTILE:  # store the tile in two halves: half the shared memory for the epilogue, more for stages
            halves = tl.permute(tl.reshape(acc, (BLOCK_M, 2, BLOCK_N // 2)), (0, 2, 1))
            acc0, acc1 = tl.split(halves)
            c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc0.to(c_desc.dtype))
            c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N + BLOCK_N // 2], acc1.to(c_desc.dtype))
        else:
            c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(c_desc.dtype))


@functools.cache
def _sm_count(index: int) -> int:
    return torch.cuda.get_device_properties(index).multi_processor_count


@functools.cache
def _is_hopper(index: int) -> bool:
    return torch.cuda.get_device_capability(index)[0] == 9


def _tma_ok(t: torch.Tensor) -> bool:
    size = t.element_size()
    return t.stride(1) == 1 and (t.stride(0) * size) % 16 == 0 and t.data_ptr() % 16 == 0 and t.shape[1] * size >= 16


def use_tma(a: torch.Tensor, b: torch.Tensor) -> bool:
    """The Hopper path: a CUDA device of compute capability 9.x, 16-bit floats, TMA-compatible layouts."""
    if os.environ.get("TRITON_INTERPRET") == "1" or not (a.is_cuda and b.is_cuda):
        return False
    if a.dtype not in (torch.float16, torch.bfloat16) or not _is_hopper(a.device.index or 0):
        return False
    return _tma_ok(a) and _tma_ok(b) and (b.shape[1] * a.element_size()) % 16 == 0


def matmul_tma(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    from triton.tools.tensor_descriptor import TensorDescriptor

    M, K = a.shape
    _, N = b.shape
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    # Placeholder boxes: the config's pre-hook sets the real ones before each launch.
    a_desc = TensorDescriptor.from_tensor(a, [64, 64])
    b_desc = TensorDescriptor.from_tensor(b, [64, 64])
    c_desc = TensorDescriptor.from_tensor(c, [64, 64])
    sms = _sm_count(a.device.index or 0)
    grid = lambda META: (min(sms, triton.cdiv(M, META["BLOCK_M"]) * triton.cdiv(N, META["BLOCK_N"])),)
    matmul_kernel_tma[grid](a_desc, b_desc, c_desc, M, N, K, NUM_SMS=sms)
    return c


def matmul_portable(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    M, K = a.shape
    _, N = b.shape
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    grid = lambda META: (triton.cdiv(M, META["BLOCK_M"]) * triton.cdiv(N, META["BLOCK_N"]),)
    # fp32 inputs: full fp32 products ("ieee"); Triton's default, TF32, misses fp32 accuracy by ~10x.
    precision = "ieee" if a.dtype == torch.float32 else "tf32"  # "tf32" is ignored for 16-bit inputs
    matmul_kernel[grid](a, b, c, M, N, K,
                        a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                        INPUT_PRECISION=precision)
    return c


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"matmul: incompatible shapes {tuple(a.shape)} @ {tuple(b.shape)}")
    if a.dtype != b.dtype:
        raise ValueError(f"matmul: dtypes differ ({a.dtype} vs {b.dtype})")
    if use_tma(a, b):
        return matmul_tma(a, b)
    return matmul_portable(a, b)


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
