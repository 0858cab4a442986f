"""Exercise 16: int32 offsets on a tensor of more than 2**31 elements (GPU only).

What you were doing: a fused element-wise kernel that had passed every test, run for the first time on
a very large activation: 2**31 + 1024 fp16 elements, 4 GB.

What you saw: wrong values past element 2**31 and, in some runs, an illegal memory access. tl.program_id
is an int32, so `pid * BLOCK_SIZE` is computed in int32 and wraps to a negative number for programs past
2**31 / BLOCK_SIZE: those programs read and write before the start of their tensors. TRITON_DEBUG=1 turns
on Triton's int32 overflow checks, which name the operation.

On a CPU this cannot be shown: it needs tensors of over 2**31 elements (4 GB each in fp16, three of
them), and the interpreter would run 8 million programs one after another.
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
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets * stride_x, mask=mask)
    y = tl.load(y_ptr + offsets * stride_y, mask=mask)
    tl.store(out_ptr + offsets * stride_out, x + y, mask=mask)


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
    title='int32 offset overflow past 2**31 elements',
    symptom='wrong values (and illegal addresses) past element 2**31 of a 2**31 + 1024 element tensor',
    hints=[
        'Everything below 2**31 elements works. What is special about 2**31?',
        (
            'What dtype does tl.program_id return, and so what dtype is pid * BLOCK_SIZE? What is (2**31 '
            '// BLOCK_SIZE) * BLOCK_SIZE in int32?'
        ),
        'Widen before multiplying: pid = tl.program_id(axis=0).to(tl.int64).',
    ],
    caught_by=['gpu:debug'],
    difficulty='hard',
    shape=(2147484672,),
    layout='contiguous',
    dtype='fp16',
    gpu_only=True,
)
