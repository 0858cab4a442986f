"""Exercise 05: an element-wise add that masks its loads but not its store.

What you were doing: an element-wise kernel for vectors of any length. You remembered that the last
block runs past n and masked both loads; the store you left unmasked, reasoning that the extra lanes
only carry values nobody reads.

What you saw: nothing, at first: for n = 1000 the output is exactly right. But the last block writes
its 24 extra lanes past the end of `out`, into memory the allocator gave to something else, and a
different tensor changes far from this kernel. On a GPU even compute-sanitizer may stay quiet while
PyTorch's caching allocator is on: the bytes land in the allocator's slack.
"""

import torch
import triton
import triton.language as tl

import tdebug


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr,
               n_elements,
               stride_x, stride_y, stride_out,
               BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0).to(tl.int64)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets * stride_x, mask=mask)
    y = tl.load(y_ptr + offsets * stride_y, mask=mask)
    tl.store(out_ptr + offsets * stride_out, x + y)


def add(x: torch.Tensor, y: torch.Tensor, BLOCK_SIZE: int | None = None) -> torch.Tensor:
    if x.dim() != 1 or x.shape != y.shape:
        raise ValueError(f"add takes two 1-D tensors of one length, got {tuple(x.shape)} and {tuple(y.shape)}")
    if x.dtype != y.dtype or x.device != y.device:
        raise ValueError("add: inputs must share dtype and device")
    out = torch.empty_like(x, memory_format=torch.contiguous_format)
    n = x.numel()
    # Large vectors: wide blocks and 8 warps keep enough bytes in flight to saturate HBM;
    # small ones: 256, so ragged sizes still make several programs.
    if BLOCK_SIZE is None:
        BLOCK_SIZE = 4096 if n >= 1 << 20 else 256
    num_warps = 8 if BLOCK_SIZE >= 2048 else 4
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)
    add_kernel[grid](x, y, out, n, x.stride(0), y.stride(0), out.stride(0), BLOCK_SIZE=BLOCK_SIZE,
                     num_warps=num_warps)
    return out


def reference(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return x + y


def make_inputs(case: tdebug.Case) -> tuple:
    (n,) = case.shape
    return tdebug.randn(case, (n,), salt=1), tdebug.randn(case, (n,), salt=2)


SPEC = tdebug.KernelSpec(
    name="add",
    launch=add,
    reference=reference,
    make_inputs=make_inputs,
    kernel=add_kernel,
    dims=("N",),
    default_shape=(1000,),
    shapes=[(1,), (255,), (256,), (257,), (1000,), (4099,), (65536,)],
    quick_shapes=[(1000,), (257,)],
    layouts=("contiguous", "sliced", "offset"),
    baseline=torch.add,
    bytes=lambda shape, size: 3 * shape[0] * size,
    bench_shapes=[(2**26,)],
)

BUG = tdebug.Bug(
    fixes='kernels/add.py',
    title='Store mask missing (loads masked)',
    symptom='output right, but the last block writes past the end of out: memory corruption elsewhere',
    hints=[
        (
            'The output is right, so a reference check may pass. Ask a memory checker instead: tdebug '
            'sanitize on this file.'
        ),
        (
            'Count the lanes of the last block and the elements left for it when n = 1000 and BLOCK_SIZE '
            '= 256. Which of its memory operations honour the mask?'
        ),
        'The store needs the same mask as the loads: tl.store(..., x + y, mask=mask).',
    ],
    caught_by=['sanitize:bounds', 'symbolic'],
    difficulty='easy',
    shape=(1000,),
    layout='contiguous',
    dtype='fp32',
    gpu_only=False,
)
