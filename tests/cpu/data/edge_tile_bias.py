"""A tiled bias-add (y = x + b[None, :]) with an edge-tile bug: the bias mask is off by one, so the last
column, which only the programs of the last column block hold, gets no bias. A script, not a catalogue
file: it checks itself with torch.testing.assert_close and asks tdebug.explain where it went wrong.

Usage: python edge_tile_bias.py [M N]   (under tdebug: tdebug run edge_tile_bias.py -- 64 100)
"""

import sys

import torch
import triton
import triton.language as tl

import tdebug


@triton.jit
def bias_add_kernel(x_ptr, b_ptr, y_ptr, M, N, stride_xm, stride_ym,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    x = tl.load(x_ptr + offs_m[:, None] * stride_xm + offs_n[None, :], mask=mask, other=0.0)
    b = tl.load(b_ptr + offs_n, mask=offs_n < N - 1, other=0.0)  # the bug: N - 1
    y = x + b[None, :]
    tl.store(y_ptr + offs_m[:, None] * stride_ym + offs_n[None, :], y, mask=mask)


def bias_add(x: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    M, N = x.shape
    y = torch.empty_like(x)
    grid = (triton.cdiv(M, 32), triton.cdiv(N, 32))
    bias_add_kernel[grid](x, b, y, M, N, x.stride(0), y.stride(0), BLOCK_M=32, BLOCK_N=32)
    return y


if __name__ == "__main__":
    M, N = (int(sys.argv[1]), int(sys.argv[2])) if len(sys.argv) > 2 else (64, 100)
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(M, N, generator=gen)
    b = torch.randn(N, generator=gen)
    y = bias_add(x, b)
    expected = x + b
    try:
        torch.testing.assert_close(y, expected)
    except AssertionError:
        tdebug.explain(y, expected)
        raise
