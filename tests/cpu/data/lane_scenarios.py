"""Loops whose iterations the batched engine runs as lanes of one batch (tdebug/interpreter/batched/loop_lanes.py):
accumulators folded in order (fp32, a bf16 product fused into its add, an int32 sum that wraps, a NaN made in the
fold), under constexpr `if`s, one program and many, the counter beside a bf16 or int8 tensor (an int32 tensor there,
as compiled: fp32 and int32 arithmetic), fp32 accumulators folded as whole numpy ops (lane_folds: a product
subtracted, a plain sum, sums on fp32 ties, sums below fp32's normal range, an accumulator that starts as a
product, sums into Python numbers); and what must make it give the lanes up, with the same results: an address
stored by one iteration and loaded by a later one, two store ops meeting across iterations, an atomic, a Python
`if` on the loop's counter; an out-of-bounds load in one iteration, an uninitialised read. A recurrence
`h = h * decay + k^T v` over equal-length sequences; programs whose trip counts differ (varlen) as one ragged
chunk: a sum, a gated recurrence, and given up: a store in the loop, a NaN's origin in the long program's tail.
engine_diff.py runs each under the serial and the batched engine (outputs bit for bit, findings, store records, the
error)."""

from __future__ import annotations

import torch
import triton
import triton.language as tl


def _rand(seed: int, *shape, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g).to(dtype)


@triton.jit
def rows_backward_kernel(dy_ptr, x_ptr, w_ptr, dx_ptr, dw_ptr, rows, n, rows_per_program,
                         BLOCK: tl.constexpr, MODE: tl.constexpr):
    """Liger's rms_norm backward in shape: each program a range of rows, dw summed over them (an accumulator
    updated in one branch of constexpr `if`s), dx stored per row."""
    pid = tl.program_id(0).to(tl.int64)
    start = pid * rows_per_program
    end = tl.minimum((pid + 1) * rows_per_program, rows)
    cols = tl.arange(0, BLOCK)
    mask = cols < n
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    dw = tl.zeros((BLOCK,), dtype=tl.float32)
    for row in range(start, end):
        dy = tl.load(dy_ptr + row * n + cols, mask=mask, other=0.0)
        x = tl.load(x_ptr + row * n + cols, mask=mask, other=0.0).to(tl.float32)
        m = dy.to(tl.float32) * w
        dx = m - tl.sum(m * x, axis=0) / n * x
        if MODE == 0:
            dw += dy.to(tl.float32) * x
        else:
            dw += (dy * x.to(dy.dtype)).to(tl.float32)
        tl.store(dx_ptr + row * n + cols, dx.to(dx_ptr.dtype.element_ty), mask=mask)
    tl.store(dw_ptr + pid * n + cols, dw, mask=mask)


def _rows_backward(seed: int, programs: int, dtype, mode: int, rows: int):
    n = 50
    dy, x, w = _rand(seed, rows, n, dtype=dtype), _rand(seed + 1, rows, n, dtype=dtype), _rand(seed + 2, n)
    dx = torch.empty(rows, n, dtype=dtype)
    dw = torch.empty(programs, n)
    rows_backward_kernel[(programs,)](dy, x, w, dx, dw, rows, n, triton.cdiv(rows, programs), BLOCK=64, MODE=mode)
    return dx, dw


def scenario_one_program(seed: int):
    return _rows_backward(seed, 1, torch.float32, 0, 37)


def scenario_programs(seed: int):
    return _rows_backward(seed, 5, torch.float32, 0, 40)


def scenario_bf16_fused(seed: int):
    return _rows_backward(seed, 3, torch.bfloat16, 1, 39)


@triton.jit
def int_sum_kernel(x_ptr, out_ptr, steps, BLOCK: tl.constexpr):
    """An int32 sum over the loop that wraps (the overflow check stops the kernel there, as a device_assert), and a
    Python count of iterations."""
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    total = tl.zeros((BLOCK,), dtype=tl.int32)
    count = 0
    for k in range(0, steps):
        total += tl.load(x_ptr + (pid * steps + k) * BLOCK + offs) * 1000
        count += 1
    tl.store(out_ptr + pid * BLOCK + offs, total + count)


def scenario_int_wrap(seed: int):
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(2**20, 2**21, (2, 8, 16), generator=g, dtype=torch.int32)
    out = torch.empty(2, 16, dtype=torch.int32)
    int_sum_kernel[(2,)](x, out, 8, BLOCK=16)
    return out


@triton.jit
def inf_sum_kernel(x_ptr, out_ptr, steps, BLOCK: tl.constexpr):
    """Terms that are finite, a sum that overflows to inf and then meets -inf: the NaN's origin is the fold's add."""
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    total = tl.zeros((BLOCK,), dtype=tl.float32)
    for k in range(steps):
        total += tl.load(x_ptr + (pid * steps + k) * BLOCK + offs)
    tl.store(out_ptr + pid * BLOCK + offs, total)


def scenario_nan_in_fold(seed: int):
    x = _rand(seed, 2, 6, 8)
    x[:, 1:3, :4] = 3e38
    x[:, 4:6, :2] = -3e38
    out = torch.empty(2, 8)
    inf_sum_kernel[(2,)](x, out, 6, BLOCK=8)
    return out


@triton.jit
def prefix_kernel(x_ptr, out_ptr, steps, BLOCK: tl.constexpr):
    """Each iteration loads what the one before stored (a dependence through memory): lanes give up."""
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs))
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for k in range(1, steps):
        prev = tl.load(out_ptr + (k - 1) * BLOCK + offs)
        tl.store(out_ptr + k * BLOCK + offs, prev + tl.load(x_ptr + k * BLOCK + offs))
        acc += prev
    tl.store(out_ptr + steps * BLOCK + offs, acc)


def scenario_store_then_load(seed: int):
    x = _rand(seed, 6, 8)
    out = torch.empty(7, 8)
    prefix_kernel[(1,)](x, out, 6, BLOCK=8)
    return out


@triton.jit
def two_stores_kernel(x_ptr, out_ptr, steps, BLOCK: tl.constexpr):
    """Two store ops reach one row from different iterations (row r: the first op's in iteration r, the second's
    in iteration steps - 1 - r): the serial engine's last write is not the lanes'."""
    offs = tl.arange(0, BLOCK)
    for k in range(steps):
        v = tl.load(x_ptr + k * BLOCK + offs)
        tl.store(out_ptr + k * BLOCK + offs, v)
        tl.store(out_ptr + (steps - 1 - k) * BLOCK + offs, v * 2)


def scenario_two_stores(seed: int):
    x = _rand(seed, 5, 8)
    out = torch.empty(5, 8)
    two_stores_kernel[(1,)](x, out, 5, BLOCK=8)
    return out


@triton.jit
def atomic_loop_kernel(x_ptr, out_ptr, steps, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    for k in range(steps):
        tl.atomic_add(out_ptr + offs, tl.load(x_ptr + (pid * steps + k) * BLOCK + offs))


def scenario_atomic(seed: int):
    x = _rand(seed, 3, 4, 8)
    out = torch.zeros(8)
    atomic_loop_kernel[(3,)](x, out, 4, BLOCK=8)
    return out


@triton.jit
def counter_kernel(x_ptr, out_ptr, y_ptr, steps, BLOCK: tl.constexpr, MODE: tl.constexpr):
    """The loop's counter in the body: a Python `if` on it (1), beside a bf16 tensor (2) or an int8 one (3), in
    int arithmetic and an offset (0)."""
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for k in range(steps):
        x = tl.load(x_ptr + (pid * steps + k) * BLOCK + offs)
        if MODE == 1:
            if k == 2:
                x = x * 3
        if MODE == 2:
            x = (x.to(tl.bfloat16) * (k * 37 + 250)).to(tl.float32)
        if MODE == 3:
            x = x + (tl.load(y_ptr + offs) + k * 20).to(tl.float32)
        acc += x * (k * 2 - 1)
    tl.store(out_ptr + pid * BLOCK + offs, acc)


def _counter(seed: int, mode: int):
    x = _rand(seed, 2, 9, 16)
    y = torch.arange(16, dtype=torch.int8) * 7
    out = torch.empty(2, 16)
    counter_kernel[(2,)](x, out, y, 9, BLOCK=16, MODE=mode)
    return out


def scenario_counter_offsets(seed: int):
    return _counter(seed, 0)


def scenario_counter_if(seed: int):
    return _counter(seed, 1)


def scenario_counter_bf16(seed: int):
    return _counter(seed, 2)


def scenario_counter_int8(seed: int):
    return _counter(seed, 3)


@triton.jit
def past_end_kernel(x_ptr, out_ptr, steps, BLOCK: tl.constexpr):
    """The last iteration reads a block past x (a bounds finding), an early one an element x's poison left
    unwritten (the scenario's x is torch.empty with its last row never written)."""
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for k in range(steps):
        acc += tl.load(x_ptr + (pid + k) * BLOCK + offs)
    tl.store(out_ptr + pid * BLOCK + offs, acc)


def scenario_past_end(seed: int):
    x = _rand(seed, 6, 8)
    out = torch.empty(3, 8)
    past_end_kernel[(3,)](x, out, 5, BLOCK=8)
    return out


def scenario_uninitialised(seed: int):
    x = torch.empty(6, 8)
    x[:5] = _rand(seed, 5, 8)
    out = torch.empty(3, 8)
    past_end_kernel[(3,)](x, out, 4, BLOCK=8)
    return out


@triton.jit
def fold_kernel(x_ptr, y_ptr, acc_ptr, out_ptr, steps, BLOCK: tl.constexpr, MODE: tl.constexpr):
    """An fp32 accumulator over the loop: a product subtracted (0), a plain sum (1), a product added (2, 3), an
    accumulator that starts as a product itself (4)."""
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    if MODE == 4:
        acc = tl.load(x_ptr + pid * steps * BLOCK + offs) * tl.load(y_ptr + pid * steps * BLOCK + offs)
    else:
        acc = tl.load(acc_ptr + pid * BLOCK + offs)
    for k in range(steps):
        x = tl.load(x_ptr + (pid * steps + k) * BLOCK + offs)
        if MODE == 1:
            acc += x
        elif MODE == 0:
            acc -= x * tl.load(y_ptr + (pid * steps + k) * BLOCK + offs)
        else:
            acc = acc + x * tl.load(y_ptr + (pid * steps + k) * BLOCK + offs)
    tl.store(out_ptr + pid * BLOCK + offs, acc)


def _fold(seed: int, mode: int, programs: int = 3, steps: int = 40, block: int = 16):
    x, y = _rand(seed, programs, steps, block), _rand(seed + 1, programs, steps, block)
    acc = _rand(seed + 2, programs, block)
    if mode == 2:  # iteration 3 of lanes 0-3: 2^30 + 2^7 + 64 (1 + 2^-20) (1 - 2^-20), just below a tie of fp32:
        acc[:, :4] = 2.0**30 + 2.0**7  # fp64's sum is the tie, whose even neighbour is one step too high
        x[:, :3, :4] = 0.0
        x[:, 3, :4] = 64.0 * (1 + 2.0**-20)
        y[:, 3, :4] = 1 - 2.0**-20
    if mode == 3:  # every sum below fp32's smallest normal number (1.2e-38): a tie to search at each iteration
        acc, x, y = acc * 1e-39, x * 1e-20, y * 1e-20
    out = torch.empty(programs, block)
    fold_kernel[(programs,)](x, y, acc, out, steps, BLOCK=block, MODE=mode)
    return out


def scenario_fold_product_subtracted(seed: int):
    return _fold(seed, 0)


def scenario_fold_plain_sum(seed: int):
    return _fold(seed, 1)


def scenario_fold_ties(seed: int):
    return _fold(seed, 2)


def scenario_fold_subnormal(seed: int):
    return _fold(seed, 3, steps=100)


def scenario_fold_from_product(seed: int):
    return _fold(seed, 4)


@triton.jit
def scalar_fold_kernel(x_ptr, y_ptr, out_ptr, steps, BLOCK: tl.constexpr):
    """fp32 scalars summed into accumulators that start as Python numbers, as Liger's poly_norm backward sums its
    weight gradients: `total = 0.0` (the interpreter's fp32 constant: folded as whole numpy ops) and `fused = 0`
    (an int32 constant: each add casts it, so it folds iteration by iteration)."""
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    w = tl.load(y_ptr + pid * steps + offs)  # a load first: the blocks' size known, the first chunk runs as lanes
    total = 0.0
    fused = 0
    for k in range(steps):
        s = tl.sum(tl.load(x_ptr + (pid * steps + k) * BLOCK + offs), axis=0)
        total += s
        fused += s * tl.sum(w, axis=0)
    tl.store(out_ptr + pid * 2, total)
    tl.store(out_ptr + pid * 2 + 1, fused)


def scenario_fold_from_python_numbers(seed: int):
    programs, steps, block = 3, 30, 16
    x, y = _rand(seed, programs, steps, block), _rand(seed + 1, programs, steps)
    out = torch.empty(programs, 2)
    scalar_fold_kernel[(programs,)](x, y, out, steps, BLOCK=block)
    return out


@triton.jit
def decayed_state_kernel(k_ptr, v_ptr, out_ptr, steps, K: tl.constexpr, V: tl.constexpr, BT: tl.constexpr):
    """A linear-attention state `h = h * decay + k^T v` over equal-length sequences: a recurrence, not a sum, folded
    iteration by iteration after the iterations' dots ran as lanes."""
    pid = tl.program_id(0)
    rk, rv, rt = tl.arange(0, K), tl.arange(0, V), tl.arange(0, BT)
    h = tl.zeros([K, V], dtype=tl.float32)
    for i in range(steps):
        t = (pid * steps + i) * BT + rt
        k = tl.load(k_ptr + t[:, None] * K + rk[None, :])
        v = tl.load(v_ptr + t[:, None] * V + rv[None, :])
        h = h * 0.95 + tl.dot(tl.trans(k), v, input_precision="ieee")
    tl.store(out_ptr + pid * K * V + rk[:, None] * V + rv[None, :], h)


def scenario_decayed_state(seed: int):
    programs, steps, bt, kd, vd = 3, 6, 16, 16, 16
    k, v = _rand(seed, programs * steps * bt, kd), _rand(seed + 1, programs * steps * bt, vd)
    out = torch.empty(programs, kd, vd)
    decayed_state_kernel[(programs,)](k, v, out, steps, K=kd, V=vd, BT=bt)
    return out


@triton.jit
def ragged_kernel(x_ptr, g_ptr, out_ptr, steps_ptr, cu_ptr, D: tl.constexpr, MODE: tl.constexpr):
    """Program n walks its own sequence (bos..eos from cu_seqlens): the programs' trip counts differ, the iterations
    run as lanes of one ragged chunk. MODE 0: a sum; 1: a gated recurrence, the gate loaded each step (a scale per
    iteration, on the left of the product); 2: a store in the loop (gives the ragged lanes up: a store's records
    take whole chunks)."""
    n = tl.program_id(0)
    d = tl.arange(0, D)
    bos = tl.load(cu_ptr + n)
    eos = tl.load(cu_ptr + n + 1)
    h = tl.load(x_ptr + bos * D + d) * 0.0  # a load first: the blocks' size known
    for t in range(bos, eos):
        x = tl.load(x_ptr + t * D + d)
        if MODE == 0:
            h += x * 2.0
        elif MODE == 1:
            h = tl.exp(tl.load(g_ptr + t)) * h + x
        else:
            h = h + x
            tl.store(steps_ptr + t * D + d, x * 2.0)
    tl.store(out_ptr + n * D + d, h)


def _ragged(seed: int, mode: int, lengths: list[int], scale: float = 0.1):
    lens = torch.tensor(lengths, dtype=torch.int64)
    cu = torch.cat([torch.zeros(1, dtype=torch.int64), lens.cumsum(0)])
    total, d = int(lens.sum()), 16
    x, g = _rand(seed, total, d), -_rand(seed + 1, total).abs() * scale
    out, steps = torch.empty(len(lengths), d), torch.empty(total, d)
    ragged_kernel[(len(lengths),)](x, g, out, steps, cu, D=d, MODE=mode)
    return (out, steps) if mode == 2 else (out,), x, g


def scenario_ragged_sum(seed: int):
    return _ragged(seed, 0, [9, 2, 2, 5, 2, 2])[0]


def scenario_ragged_recurrence(seed: int):
    return _ragged(seed, 1, [3, 12, 3, 3, 7])[0]


def scenario_ragged_store(seed: int):
    return _ragged(seed, 2, [4, 1, 6, 2])[0]  # (unwritten steps rows: none)


def scenario_ragged_overflow(seed: int):
    """A gate of exp(60) in the long sequence's late steps: its state overflows to inf there (the origin: the
    recurrence's product, in an iteration only that program makes), and inf - inf makes a NaN in a later one."""
    lens = [2, 2, 10, 2]
    total, d = sum(lens), 8  # (a specialisation of its own: given up lanes are known by the kernel's constants)
    lens_t = torch.tensor(lens, dtype=torch.int64)
    cu = torch.cat([torch.zeros(1, dtype=torch.int64), lens_t.cumsum(0)])
    x, g = _rand(seed, total, d), -_rand(seed + 1, total).abs() * 0.1
    g[4 + 6:4 + 8] = 60.0
    x[4 + 9, :3] = -3e38
    out = torch.empty(len(lens), d)
    ragged_kernel[(len(lens),)](x, g, out, out, cu, D=d, MODE=1)
    return out
