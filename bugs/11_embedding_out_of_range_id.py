"""Exercise 11: an embedding gather that trusts its token ids.

What you were doing: a fused embedding lookup, out[t] = weight[ids[t]], tested against
torch.nn.functional.embedding on random ids: identical. Then the tokenizer gained a padding token,
appended at the end of the vocabulary: its id is V, and nobody resized the (V x D) table.

What you saw: no error at all. Every position holding the new token gets a plausible-looking row of
numbers, read from whatever lies after the table in memory, and the model trains on it.
torch.nn.functional.embedding raises an IndexError on the same ids; your kernel never looks. The
exercise passes when the bad id is reported (a tl.device_assert on the ids, which tdebug's interpreter
and TRITON_DEBUG=1 make live, and if you can afford a host sync, a check in the caller) and no
memory outside the table is read.
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

def story_inputs(case: tdebug.Case) -> tuple:
    """The story's batch: valid ids, except that the new padding token (id V) appears in it."""
    ids, weight = make_inputs(case)
    ids[len(ids) // 2] = weight.shape[0]
    return ids, weight


BUG = tdebug.Bug(
    fixes='kernels/embedding.py',
    title='Out-of-range token id in an embedding gather',
    symptom='an id equal to the vocabulary size reads past the end of the table: plausible garbage, no error',
    hints=[
        (
            "The kernel matches torch on valid ids. Run it on the story's batch (story_inputs below) "
            'under tdebug sanitize: what does it read?'
        ),
        (
            'Which values can an id take, and what does the kernel do with id V? Nothing between the load '
            'of the ids and the gather looks at them.'
        ),
        (
            "Check the ids where they are used: tl.device_assert((idx >= 0) & (idx < V), 'token id out of "
            "range') after loading them; validate in the caller too when a host sync is affordable."
        ),
    ],
    caught_by=['sanitize:bounds', 'symbolic', 'gpu:memcheck'],
    difficulty='medium',
    shape=(129, 97, 127),
    layout='contiguous',
    dtype='fp32',
    gpu_only=False,
)
