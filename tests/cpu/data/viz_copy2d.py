"""Test data for tdebug viz: a tiled 2-D copy in three flavours, chosen by the case's variant.

- fixed: masks on both edges, a grid that covers the tensor;
- nomask: no masks (129x127 with 32x32 tiles: the last tile row and column run off the edges);
- smallgrid: the grid is computed for 64x64 tiles while the kernel uses 32x32 ones, so only the
  top-left quarter of the output is written;
- overlap: twice the programs along M, each wrapping onto the row tiles: every element written twice;
- stride_trap: the input's row stride is taken as N (contiguous) whatever the layout; with
  --layout sliced it reads the gaps between the rows of the view.
"""

import torch
import triton
import triton.language as tl

import tdebug


@triton.jit
def copy2d_kernel(x_ptr, out_ptr, M, N, stride_xm, stride_xn, stride_om, stride_on, tiles_m,
                  BLOCK: tl.constexpr, MASKED: tl.constexpr):
    pid_m = tl.program_id(0) % tiles_m
    pid_n = tl.program_id(1)
    rows = pid_m * BLOCK + tl.arange(0, BLOCK)
    cols = pid_n * BLOCK + tl.arange(0, BLOCK)
    x_ptrs = x_ptr + rows[:, None] * stride_xm + cols[None, :] * stride_xn
    o_ptrs = out_ptr + rows[:, None] * stride_om + cols[None, :] * stride_on
    if MASKED:
        mask = (rows[:, None] < M) & (cols[None, :] < N)
        tl.store(o_ptrs, tl.load(x_ptrs, mask=mask), mask=mask)
    else:
        tl.store(o_ptrs, tl.load(x_ptrs))


def copy2d(x: torch.Tensor, variant: str) -> torch.Tensor:
    M, N = x.shape
    out = torch.empty((M, N), dtype=x.dtype)
    grid_block = 64 if variant == "smallgrid" else 32
    tiles_m = triton.cdiv(M, grid_block)
    grid = (tiles_m * (2 if variant == "overlap" else 1), triton.cdiv(N, grid_block))
    stride_xm = N if variant == "stride_trap" else x.stride(0)
    copy2d_kernel[grid](x, out, M, N, stride_xm, x.stride(1), out.stride(0), out.stride(1), tiles_m,
                        BLOCK=32, MASKED=variant != "nomask")
    return out


def make_inputs(case: tdebug.Case) -> tuple:
    return tdebug.randn(case, case.shape, salt=1), case.variant


SPEC = tdebug.KernelSpec(name="copy2d", launch=copy2d, reference=lambda x, v: x.clone(), make_inputs=make_inputs,
                         kernel=copy2d_kernel, dims=("M", "N"), default_shape=(129, 127), shapes=[(129, 127)],
                         variants=("fixed", "nomask", "smallgrid", "overlap", "stride_trap"))
