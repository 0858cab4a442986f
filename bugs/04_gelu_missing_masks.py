"""Exercise 04: a 2-D GELU without masks, written for sizes that divide its tiles.

What you were doing: fusing GELU into a pass over 1024 x 4096 activations. The tiles divide those
sizes exactly, so the kernel loads and stores whole tiles, no masks, and it matched PyTorch.

What you saw: on a batch of 129 tokens with 127 features (a ragged batch after dropping padding) the
process died: a segmentation fault under TRITON_INTERPRET=1, an illegal memory access on the GPU, or,
worse, no error at all and a corrupted neighbour tensor. The last tiles of each dimension run past the
edge of the tensor, for reads and for writes.
"""

import torch
import triton
import triton.language as tl

import tdebug

SQRT_2_OVER_PI = tl.constexpr(0.7978845608028654)  # a global read inside @triton.jit must be constexpr


@triton.jit
def gelu_kernel(x_ptr, out_ptr,
                n_rows, n_cols,
                stride_xr, stride_xc, stride_or, stride_oc,
                BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    pid = tl.program_id(axis=0).to(tl.int64)
    num_pid_c = tl.cdiv(n_cols, BLOCK_C)
    pid_r = pid // num_pid_c
    pid_c = pid % num_pid_c
    rows = pid_r * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = pid_c * BLOCK_C + tl.arange(0, BLOCK_C)
    x = tl.load(x_ptr + rows[:, None] * stride_xr + cols[None, :] * stride_xc)
    x = x.to(tl.float32)
    u = SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)
    # 0.5 * (1 + tanh(u)) == sigmoid(2u), evaluated with e = exp(-2|u|) <= 1 so nothing overflows.
    e = tl.exp(-2.0 * tl.abs(u))
    s = tl.where(u >= 0, 1.0 / (1.0 + e), e / (1.0 + e))
    y = x * s
    tl.store(out_ptr + rows[:, None] * stride_or + cols[None, :] * stride_oc,
             y.to(out_ptr.dtype.element_ty))


def gelu(x: torch.Tensor) -> torch.Tensor:
    if x.dim() != 2:
        raise ValueError(f"gelu takes a 2-D (rows x cols) tensor, got shape {tuple(x.shape)}")
    if not x.is_floating_point():
        raise ValueError(f"gelu: floating-point input required, got {x.dtype}")
    n_rows, n_cols = x.shape
    out = torch.empty((n_rows, n_cols), device=x.device, dtype=x.dtype)
    if out.numel() == 0:
        return out
    # Tiles of about 4096 elements, as wide as the row allows (at most 1024 columns).
    BLOCK_C = min(max(triton.next_power_of_2(n_cols), 16), 1024)
    BLOCK_R = max(4096 // BLOCK_C, 1)
    grid = lambda META: (triton.cdiv(n_rows, META["BLOCK_R"]) * triton.cdiv(n_cols, META["BLOCK_C"]),)
    gelu_kernel[grid](x, out, n_rows, n_cols,
                      x.stride(0), x.stride(1), out.stride(0), out.stride(1),
                      BLOCK_R=BLOCK_R, BLOCK_C=BLOCK_C, num_warps=8)
    return out


def reference(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.gelu(x, approximate="tanh")


def make_inputs(case: tdebug.Case) -> tuple:
    rows, cols = case.shape
    # Scale 3 reaches the saturated tails (x < -5: gelu ~ -0, x > 5: gelu ~ x) as well as the middle.
    return (tdebug.randn(case, (rows, cols), salt=1, scale=3.0),)


SPEC = tdebug.KernelSpec(
    name="gelu",
    launch=gelu,
    reference=reference,
    make_inputs=make_inputs,
    kernel=gelu_kernel,
    dims=("R", "C"),
    default_shape=(129, 127),
    shapes=[(1, 1), (1, 1000), (97, 1), (64, 64), (129, 127), (127, 129), (255, 257), (3, 1025), (5, 2048)],
    quick_shapes=[(129, 127), (3, 1025)],
    baseline=lambda x: torch.nn.functional.gelu(x, approximate="tanh"),
    flops=lambda s: 10.0 * s[0] * s[1],
    bytes=lambda s, size: 2 * s[0] * s[1] * size,
    bench_shapes=[(16384, 8192), (8192, 16384), (4096, 32768)],
)

BUG = tdebug.Bug(
    fixes='kernels/gelu.py',
    title='Missing masks on a ragged 2-D tile',
    symptom=(
        'right when the tiles divide the shape; on 129x127 out-of-bounds reads and writes (segfault, '
        'illegal address, or silent corruption)'
    ),
    hints=[
        'Which shapes work and which fail? Try 128x128 against 129x127.',
        (
            'The tile at the bottom-right corner covers rows and columns that do not exist. What stops '
            'those lanes from reading and writing memory?'
        ),
        (
            'Build mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols) and pass it to the load '
            '(with other=0.0) and to the store.'
        ),
    ],
    caught_by=['check', 'sanitize:bounds', 'symbolic'],
    difficulty='easy',
    shape=(129, 127),
    layout='contiguous',
    dtype='fp32',
    gpu_only=False,
)
