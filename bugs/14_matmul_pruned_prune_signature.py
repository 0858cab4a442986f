"""Exercise 14: an early_config_prune hook with the wrong signature.

What you were doing: your matmul's autotuner benchmarks eight configs, and on your 99 KB-shared-memory
GPU the biggest ones fail to compile anyway. You added a prune hook, as in an older example you had
seen: a function that takes the list of configs and returns the ones that fit.

What you saw: the first launch raises `TypeError: prune_configs() got an unexpected keyword argument
'grid'`, from inside triton/runtime/autotuner.py. Triton 3.6 calls the hook as
early_config_prune(configs, named_args, **kwargs): the configs, the kernel's arguments by name, and
the launch's keyword arguments (the grid among them).
"""

import torch
import triton

import tdebug
from kernels.matmul import _configs, complete_shape, make_inputs, matmul_kernel, reference

SMEM_BYTES = 101376


def smem_bytes(config: triton.Config, element_size: int = 2) -> int:
    """Shared memory for the A (BLOCK_M x BLOCK_K) and B (BLOCK_K x BLOCK_N) tiles of every stage."""
    kw = config.kwargs
    return (kw["BLOCK_M"] + kw["BLOCK_N"]) * kw["BLOCK_K"] * element_size * config.num_stages


def prune_configs(configs):
    fitting = [c for c in configs if smem_bytes(c) <= SMEM_BYTES]
    return fitting or [min(configs, key=smem_bytes)]


matmul_pruned_kernel = triton.autotune(
    configs=_configs(), key=["M", "N", "K"], prune_configs_by={"early_config_prune": prune_configs},
)(matmul_kernel.fn)


def matmul_pruned(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"matmul_pruned: incompatible shapes {tuple(a.shape)} @ {tuple(b.shape)}")
    if a.dtype != b.dtype:
        raise ValueError(f"matmul_pruned: dtypes differ ({a.dtype} vs {b.dtype})")
    M, K = a.shape
    _, N = b.shape
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    grid = lambda META: (triton.cdiv(M, META["BLOCK_M"]) * triton.cdiv(N, META["BLOCK_N"]),)
    precision = "ieee" if a.dtype == torch.float32 else "tf32"  # full fp32 products for fp32 inputs
    matmul_pruned_kernel[grid](a, b, c, M, N, K,
                               a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                               INPUT_PRECISION=precision)
    return c


SPEC = tdebug.KernelSpec(
    name="matmul_pruned",
    launch=matmul_pruned,
    reference=reference,
    make_inputs=make_inputs,
    kernel=matmul_pruned_kernel,
    dims=("M", "N", "K"),
    complete_shape=complete_shape,
    default_shape=(129, 127, 65),
    shapes=[(129, 127, 65), (64, 64, 64), (1, 131, 67)],
    quick_shapes=[(129, 127, 65)],
    layouts=("contiguous", "transposed"),
    tolerances={"fp32": (1e-4, 1e-5), "fp16": (1e-2, 2e-3)},
    baseline=torch.matmul,
    flops=lambda s: 2.0 * s[0] * s[1] * s[2],
    bytes=lambda s, size: (s[0] * s[2] + s[2] * s[1] + s[0] * s[1]) * size,
    bench_shapes=[(1024, 1024, 1024), (4096, 4096, 4096)],
)

BUG = tdebug.Bug(
    fixes='kernels/matmul_pruned.py',
    title='early_config_prune(configs): wrong prune signature',
    symptom="TypeError at the first launch: prune_configs() got an unexpected keyword argument 'grid'",
    hints=[
        (
            "The traceback ends in Triton's autotuner, not in your kernel. Which of your functions does "
            'it call there, and with what?'
        ),
        'Open triton/runtime/autotuner.py at prune_configs: how does Triton 3.6 call early_config_prune?',
        'Give the hook the signature Triton calls: def prune_configs(configs, named_args, **kwargs).',
    ],
    caught_by=['check', 'lint'],
    difficulty='easy',
    shape=(129, 127, 65),
    layout='contiguous',
    dtype='fp32',
    gpu_only=False,
)
