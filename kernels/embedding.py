"""Embedding lookup (an index gather): out[t, :] = weight[ids[t], :].

ids: (T,) int64 or int32; weight: (V, D), read through its row and column strides (a sliced or
transposed table is read where it lies); out: (T, D), contiguous. Each program copies a tile of
BLOCK_T tokens x BLOCK_D columns, with masks on both ragged edges.

An id outside [0, V) is a caller's bug that would read another allocation's memory. The kernel checks
with tl.device_assert (live under tdebug's interpreter and with TRITON_DEBUG=1 on a GPU, free otherwise)
and the launcher never clamps an id into range: clamping would hide the bug behind plausible output.
"""

import torch
import triton
import triton.language as tl

import tdebug


@triton.jit
def embedding_kernel(ids_ptr, weight_ptr, out_ptr,
                     T, V, D,
                     stride_ids, stride_wv, stride_wd, stride_ot, stride_od,
                     BLOCK_T: tl.constexpr, BLOCK_D: tl.constexpr):
    pid_t = tl.program_id(axis=0).to(tl.int64)
    pid_d = tl.program_id(axis=1).to(tl.int64)
    offs_t = pid_t * BLOCK_T + tl.arange(0, BLOCK_T)
    offs_d = pid_d * BLOCK_D + tl.arange(0, BLOCK_D)
    t_mask = offs_t < T
    idx = tl.load(ids_ptr + offs_t * stride_ids, mask=t_mask, other=0).to(tl.int64)
    tl.device_assert((idx >= 0) & (idx < V), "token id out of range")
    mask = t_mask[:, None] & (offs_d[None, :] < D)
    rows = tl.load(weight_ptr + idx[:, None] * stride_wv + offs_d[None, :] * stride_wd, mask=mask)
    tl.store(out_ptr + offs_t[:, None] * stride_ot + offs_d[None, :] * stride_od, rows, mask=mask)


def embedding(ids: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    if ids.dim() != 1 or ids.dtype not in (torch.int64, torch.int32):
        raise ValueError(f"embedding: ids must be a 1-D int64/int32 tensor, got {ids.dtype} {tuple(ids.shape)}")
    if weight.dim() != 2:
        raise ValueError(f"embedding: weight must be 2-D (V, D), got shape {tuple(weight.shape)}")
    if ids.device != weight.device:
        raise ValueError(f"embedding: ids on {ids.device} but weight on {weight.device}")
    (T,) = ids.shape
    V, D = weight.shape
    out = torch.empty((T, D), device=weight.device, dtype=weight.dtype)
    if out.numel() == 0:
        return out
    BLOCK_D = min(max(triton.next_power_of_2(D), 16), 512)
    BLOCK_T = max(2048 // BLOCK_D, 1)
    grid = lambda META: (triton.cdiv(T, META["BLOCK_T"]), triton.cdiv(D, META["BLOCK_D"]))
    embedding_kernel[grid](ids, weight, out, T, V, D,
                           ids.stride(0), weight.stride(0), weight.stride(1), out.stride(0), out.stride(1),
                           BLOCK_T=BLOCK_T, BLOCK_D=BLOCK_D, num_warps=4)
    return out


def reference(ids: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.embedding(ids, weight)


def make_inputs(case: tdebug.Case) -> tuple:
    T, V, D = case.shape
    ids = tdebug.randint(case, (T,), V, salt=1)
    # The first and last rows of the table are the ones an off-by-one mask or stride gets wrong.
    ids[0] = V - 1
    ids[-1] = 0 if T > 1 else ids[-1]
    weight = tdebug.randn(case, (V, D), salt=2)
    return ids, weight


SPEC = tdebug.KernelSpec(
    name="embedding",
    launch=embedding,
    reference=reference,
    make_inputs=make_inputs,
    kernel=embedding_kernel,
    dims=("T", "V", "D"),
    default_shape=(129, 97, 127),
    shapes=[(1, 1, 1), (1, 10, 1000), (97, 50, 64), (129, 97, 127), (256, 257, 255), (33, 7, 513),
            (4, 3, 1025)],
    quick_shapes=[(129, 97, 127), (33, 7, 513)],
    baseline=torch.nn.functional.embedding,
    bytes=lambda s, size: 2 * s[0] * s[2] * size + 8 * s[0],
    bench_shapes=[(32768, 32000, 4096), (65536, 50257, 2048)],
)
