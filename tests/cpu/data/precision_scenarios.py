"""Kernels for the sanitizer's precision tests: NaN/Inf origin, autotune configs, unwritten outputs.
Usage: python THIS SCENARIO"""

import sys

import torch
import triton
import triton.language as tl


# --- NaN / Inf origin -----------------------------------------------------------------------------------
@triton.jit
def square_fp16_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    sq = x * x  # fp16: 300 * 300 = 90000 > 65504
    y = sq * 0.5
    tl.store(y_ptr + offs, y, mask=m)


@triton.jit
def softmax_no_max_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + tl.program_id(0) * n + offs, mask=m, other=-float("inf"))
    num = tl.exp(x)  # no max subtracted: exp(100) overflows fp32
    den = tl.sum(num, axis=0)
    y = num / den
    tl.store(y_ptr + tl.program_id(0) * n + offs, y, mask=m)


@triton.jit
def normalize_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + tl.program_id(0) * n + offs, mask=m, other=0.0)
    total = tl.sum(x, axis=0)
    y = x / total  # an all-zero row: 0 / 0
    tl.store(y_ptr + tl.program_id(0) * n + offs, y, mask=m)


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + tl.program_id(0) * n + offs, mask=m, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    y = num / tl.sum(num, axis=0)
    tl.store(y_ptr + tl.program_id(0) * n + offs, y, mask=m)


@triton.jit
def log_masked_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    y = tl.log(x)  # -inf in the masked-off lanes (log 0), never stored
    tl.store(y_ptr + offs, y, mask=m)


# --- autotune configs and unwritten outputs -----------------------------------------------------------------
def _configs():
    return [triton.Config({"BLOCK": b}, num_warps=4) for b in (256, 128, 64)]


@triton.autotune(configs=_configs(), key=["n"])
@triton.jit
def scale_autotuned_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2.0, mask=m)


def _keep_small(configs, named_args, **kwargs):
    return [c for c in configs if c.kwargs["BLOCK"] <= 128]


@triton.autotune(configs=_configs(), key=["n"], prune_configs_by={"early_config_prune": _keep_small})
@triton.jit
def scale_pruned_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2.0, mask=m)


@triton.jit
def scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2.0, mask=m)


@triton.jit
def row_partial_sums_kernel(x_ptr, partial_ptr, N, BLOCK_N: tl.constexpr):
    # Layer-norm tutorial style: program r writes scratch row r; rows past the grid are never addressed.
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    m = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=m, other=0.0)
    tl.store(partial_ptr + row * N + cols, x * x, mask=m)


@triton.jit
def reduce_partials_kernel(partial_ptr, out_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    rows = tl.arange(0, BLOCK_M)
    m = (rows[:, None] < M) & (cols[None, :] < N)
    p = tl.load(partial_ptr + rows[:, None] * N + cols[None, :], mask=m, other=0.0)
    tl.store(out_ptr + cols, tl.sum(p, axis=0), mask=cols < N)


def main(names: str) -> None:
    for name in names.split(","):
        run(name)


def run(name: str) -> None:
    torch.manual_seed(0)
    n = 1000
    x = torch.randn(n)
    y = torch.empty(n)
    if name == "nan_fp16_overflow":
        xh = (torch.rand(n) * 100).half()
        xh[700] = 300.0
        yh = torch.empty(n, dtype=torch.float16)
        square_fp16_kernel[(triton.cdiv(n, 256),)](xh, yh, n, BLOCK=256)
    elif name == "nan_exp_overflow":
        rows = torch.randn(4, 100)
        rows[2, 7] = 100.0
        out = torch.empty_like(rows)
        softmax_no_max_kernel[(4,)](rows, out, 100, BLOCK=128)
    elif name == "nan_zero_div":
        rows = torch.rand(4, 100) + 0.5
        rows[1] = 0.0
        out = torch.empty_like(rows)
        normalize_kernel[(4,)](rows, out, 100, BLOCK=128)
    elif name == "nan_intentional":
        rows = torch.randn(4, 100) * 50
        out = torch.empty_like(rows)
        softmax_kernel[(4,)](rows, out, 100, BLOCK=128)
        log_masked_kernel[(triton.cdiv(n, 256),)](torch.rand(n) + 0.1, y, n, BLOCK=256)
    elif name == "nan_from_input":
        x[3] = float("nan")
        scale_kernel[(triton.cdiv(n, 256),)](x, y, n, BLOCK=256)
    elif name == "grid_for_largest_block":
        scale_autotuned_kernel[(triton.cdiv(n, 256),)](x, y, n)
    elif name == "grid_for_smallest_block":
        scale_autotuned_kernel[(triton.cdiv(n, 64),)](x, y, n)
    elif name == "grid_from_meta":
        scale_autotuned_kernel[lambda META: (triton.cdiv(n, META["BLOCK"]),)](x, y, n)
    elif name == "grid_pruned":
        scale_pruned_kernel[lambda META: (triton.cdiv(n, META["BLOCK"]),)](x, y, n)
    elif name == "grid_misses_tail":
        scale_kernel[(n // 128,)](x, y, n, BLOCK=128)  # floor, not cdiv: the last 104 elements
    elif name == "scratch_partly_used":
        groups, M, N = 32, 5, 100
        xs = torch.randn(M, N)
        partial = torch.empty(groups, N)  # sized for the largest case; rows >= M are never addressed
        out = torch.empty(N)
        row_partial_sums_kernel[(M,)](xs, partial, N, BLOCK_N=128)
        reduce_partials_kernel[(1,)](partial, out, M, N, BLOCK_M=8, BLOCK_N=128)
        assert torch.allclose(out, (xs * xs).sum(0), rtol=1e-5, atol=1e-5)
    else:
        raise SystemExit(f"unknown scenario {name}")


if __name__ == "__main__":
    main(sys.argv[1])
