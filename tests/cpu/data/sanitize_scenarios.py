"""Small purpose-written kernels for the interpreter sanitizer's tests. Usage: python THIS SCENARIO"""

import sys

import torch
import triton
import triton.language as tl


@triton.jit
def copy2d_kernel(x_ptr, out_ptr, R, C, sxr, sxc, sor, soc, BR: tl.constexpr, BC: tl.constexpr, MASKED: tl.constexpr):
    pr = tl.program_id(0)
    pc = tl.program_id(1)
    rows = pr * BR + tl.arange(0, BR)
    cols = pc * BC + tl.arange(0, BC)
    if MASKED:
        mask = (rows[:, None] < R) & (cols[None, :] < C)
        x = tl.load(x_ptr + rows[:, None] * sxr + cols[None, :] * sxc, mask=mask)
        tl.store(out_ptr + rows[:, None] * sor + cols[None, :] * soc, x, mask=mask)
    else:
        x = tl.load(x_ptr + rows[:, None] * sxr + cols[None, :] * sxc)
        tl.store(out_ptr + rows[:, None] * sor + cols[None, :] * soc, x)


def copy2d(x, masked=True, BR=32, BC=32):
    R, C = x.shape
    out = torch.empty((R, C), dtype=x.dtype)
    grid = (triton.cdiv(R, BR), triton.cdiv(C, BC))
    copy2d_kernel[grid](x, out, R, C, x.stride(0), x.stride(1), out.stride(0), out.stride(1), BR=BR, BC=BC,
                        MASKED=masked)
    return out


@triton.jit
def gather_kernel(idx_ptr, w_ptr, out_ptr, T, D, swr, BLOCK_D: tl.constexpr):
    t = tl.program_id(0)
    row = tl.load(idx_ptr + t)
    d = tl.arange(0, BLOCK_D)
    m = d < D
    tl.store(out_ptr + t * D + d, tl.load(w_ptr + row * swr + d, mask=m), mask=m)


@triton.jit
def shift_left_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs - 1, mask=m), mask=m)  # reads x[-1] in program 0


@triton.jit
def histogram_kernel(x_ptr, out_ptr, n, BINS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0)
    h = tl.histogram(x, BINS)
    tl.atomic_add(out_ptr + tl.arange(0, BINS), h)


@triton.jit
def sum_atomic_kernel(x_ptr, total_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.atomic_add(total_ptr, tl.sum(x, axis=0))


@triton.jit
def sum_store_kernel(x_ptr, total_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(total_ptr, tl.sum(x, axis=0))  # every program writes the same element: a race


@triton.jit
def accumulate_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    acc = tl.load(out_ptr + offs, mask=m)  # out comes from torch.empty: never initialised
    tl.store(out_ptr + offs, acc + tl.load(x_ptr + offs, mask=m), mask=m)


@triton.jit
def shift_inplace_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs + 1 < n
    v = tl.load(x_ptr + offs + 1, mask=m)  # reads the first element of the next program's block
    tl.store(x_ptr + offs, v, mask=m)


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, 2 * tl.load(x_ptr + offs, mask=m), mask=m)


@triton.jit
def assert_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.device_assert(x < 100.0, "x too big")


@triton.jit
def overflow_kernel(x_ptr, out_ptr, row_stride, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    start = pid * row_stride  # int32 * int32: overflows for pid >= 2 when row_stride = 2**30
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + pid * BLOCK + offs, tl.load(x_ptr + offs) + start.to(tl.float32))


@triton.jit
def transpose_kernel(x_ptr, out_ptr, R, C, BLOCK: tl.constexpr):
    rows = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    tile = tl.load(x_ptr + rows[:, None] * C + cols[None, :])  # no mask on a ragged edge
    tl.store(out_ptr + cols[None, :] * R + rows[:, None], tile)


@triton.jit
def wild_store_kernel(out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK).to(tl.int64) * (1 << 40)  # terabytes apart: unmapped addresses
    tl.store(out_ptr + offs, tl.zeros((BLOCK,), dtype=tl.float32))


@triton.jit
def wild_address_kernel(address, BLOCK: tl.constexpr):
    ptr = address.to(tl.int64).to(tl.pointer_type(tl.float32))  # an address from an integer: no tensor behind it
    offs = tl.arange(0, BLOCK).to(tl.int64) * (1 << 40)
    tl.store(ptr + offs, tl.zeros((BLOCK,), dtype=tl.float32))


@triton.jit
def spin_kernel(x_ptr, n, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for _ in range(0, n):  # n is huge: this never finishes
        acc += tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.store(x_ptr + tl.arange(0, BLOCK), acc)


@triton.jit
def far_programs_kernel(out_ptr, n, BLOCK: tl.constexpr):
    """Each program writes its own element; the last three also write element 0 (a write/write race with program
    0, by programs whose ids need more than 16 bits)."""
    pid = tl.program_id(0)
    lanes = tl.arange(0, BLOCK)
    tl.store(out_ptr + pid + lanes, lanes.to(tl.float32) + pid, mask=lanes < 1)
    tl.store(out_ptr + lanes, lanes.to(tl.float32), mask=(lanes < 1) & (pid >= n - 3))


def _autotune_configs():
    return [triton.Config({"BLOCK": b}, num_warps=w) for b in (64, 128) for w in (2, 4)]


@triton.autotune(configs=_autotune_configs(), key=["n"])
@triton.jit
def autotuned_scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, 3 * tl.load(x_ptr + offs, mask=m), mask=m)


def main(name: str) -> None:
    torch.manual_seed(0)
    if name == "transposed_view":
        x = torch.randn(127, 129).t()  # 129x127 with strides (1, 129)
        out = copy2d(x)
        assert torch.equal(out, x)
    elif name == "sliced_view":
        x = torch.randn(129, 300)[:, :127]  # row stride 300 > width 127
        out = copy2d(x)
        assert torch.equal(out, x)
    elif name == "unmasked_2d":
        copy2d(torch.randn(100, 70), masked=False)
    elif name == "gather_bad_index":
        w = torch.randn(50, 16)
        idx = torch.randint(0, 50, (20,))
        idx[7] = 50  # one past the vocabulary
        out = torch.empty(20, 16)
        gather_kernel[(20,)](idx, w, out, 20, 16, w.stride(0), BLOCK_D=16)
    elif name == "read_before_start":
        x = torch.randn(300)
        out = torch.empty(300)
        shift_left_kernel[(3,)](x, out, 300, BLOCK=128)
    elif name == "histogram":
        x = torch.randint(0, 16, (1024,), dtype=torch.int32)
        out = torch.zeros(16, dtype=torch.int32)
        histogram_kernel[(8,)](x, out, 1024, BINS=16, BLOCK=128)
        assert torch.equal(out, torch.bincount(x, minlength=16).to(torch.int32))
    elif name == "atomic_sum":
        x = torch.randn(1000)
        total = torch.zeros(1)
        sum_atomic_kernel[(8,)](x, total, 1000, BLOCK=128)
        assert abs(float(total) - float(x.sum())) < 1e-3
    elif name == "store_race":
        x = torch.randn(1000)
        total = torch.zeros(1)
        sum_store_kernel[(8,)](x, total, 1000, BLOCK=128)
    elif name == "far_programs_race":
        n = 40000
        far_programs_kernel[(n,)](torch.empty(n), n, BLOCK=2)
    elif name == "uninit":
        x = torch.randn(1000)
        out = torch.empty(1000)
        accumulate_kernel[(8,)](x, out, 1000, BLOCK=128)
    elif name == "read_write_race":
        x = torch.randn(1000)
        shift_inplace_kernel[(8,)](x, 1000, BLOCK=128)
    elif name == "grid_too_small":
        x = torch.randn(1000)
        out = torch.empty(1000)
        scale_kernel[(triton.cdiv(1000, 256),)](x, out, 1000, BLOCK=128)  # grid for 256, block of 128
    elif name == "assert":
        x = torch.randn(1000)
        x[613] = 1000.0
        assert_kernel[(8,)](x, 1000, BLOCK=128)
    elif name == "overflow":
        x = torch.randn(64)
        out = torch.empty(3 * 64)
        overflow_kernel[(3,)](x, out, 2**30, BLOCK=64)
    elif name == "autotuned":
        x = torch.randn(1000)
        out = torch.empty(1000)
        autotuned_scale_kernel[lambda META: (triton.cdiv(1000, META["BLOCK"]),)](x, out, 1000)
        assert torch.allclose(out, 3 * x)
    elif name == "transpose_unmasked":
        x = torch.randn(100, 70)
        out = torch.empty(70, 100)
        transpose_kernel[(triton.cdiv(100, 64), triton.cdiv(70, 64))](x, out, 100, 70, BLOCK=64)
    elif name == "wild_store":
        wild_store_kernel[(1,)](torch.empty(16), BLOCK=16)
    elif name == "wild_address":
        wild_address_kernel[(1,)](1 << 44, BLOCK=16)
    elif name == "hang":
        spin_kernel[(1,)](torch.randn(16), 10**12, BLOCK=16)
    else:
        raise SystemExit(f"unknown scenario {name}")


if __name__ == "__main__":
    main(sys.argv[1])
