"""Loops whose trip count differs between programs, for the batched engine's predicated loops
(tdebug/interpreter/batched/predicated_loops.py): carried accumulators, accesses that only a program's own bound keeps
inside its tensor, programs with no iteration, nested loops, a data-dependent bound, asserts, NaNs and choices
that the programs past their bound would get wrong, loop-carried Python numbers (which predication gives up on),
a real error raised while other programs are past their bound, an atomic and a store inside the loop.
engine_diff.py runs each scenario under the serial and the batched engine (outputs bit for bit, findings, store
records, the error)."""

from __future__ import annotations

import torch
import triton
import triton.language as tl


def _rand(seed: int, *shape, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g).to(dtype)


@triton.jit
def online_softmax_kernel(x_ptr, v_ptr, out_ptr, N, D: tl.constexpr, BLOCK: tl.constexpr):
    """Row r attends to keys 0..(r+1)*BLOCK (causal, flash-attention style): m, l and acc carried."""
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    d = tl.arange(0, D)
    m = tl.full([1], -float("inf"), tl.float32)
    l_sum = tl.zeros([1], tl.float32)
    acc = tl.zeros([D], tl.float32)
    hi = tl.minimum((row + 1) * BLOCK, N)
    for start in range(0, hi, BLOCK):
        cols = start + offs
        s = tl.load(x_ptr + row * N + cols, mask=cols < N, other=-float("inf"))
        m_new = tl.maximum(m, tl.max(s, axis=0))
        alpha = tl.exp(m - m_new)
        p = tl.exp(s - m_new)
        l_sum = l_sum * alpha + tl.sum(p, axis=0)
        v = tl.load(v_ptr + cols[:, None] * D + d[None, :], mask=(cols < N)[:, None], other=0.0)
        acc = acc * alpha + tl.sum(p[:, None] * v, axis=0)
        m = m_new
    tl.store(out_ptr + row * D + d, acc / l_sum)


def scenario_online_softmax(seed: int):
    rows, n, d = 11, 80, 8
    x, v = _rand(seed, rows, n), _rand(seed + 1, n, d)
    out = torch.full((rows, d), float("nan"))
    online_softmax_kernel[(rows,)](x, v, out, n, D=d, BLOCK=16)
    return out


@triton.jit
def own_bound_kernel(x_ptr, lengths_ptr, offsets_ptr, out_ptr):
    """A ragged batch: program p sums its own segment one element at a time, unmasked: only its own length keeps
    the loads inside x (the last segment ends at x's last element); one program reads one past its segment."""
    p = tl.program_id(0)
    n = tl.load(lengths_ptr + p)
    start = tl.load(offsets_ptr + p)
    total = tl.zeros([1], tl.float32)
    for i in range(0, n):
        total += tl.load(x_ptr + start + i + tl.arange(0, 1))
    tl.store(out_ptr + p + tl.arange(0, 1), total)


def scenario_own_bound(seed: int):
    lengths = torch.tensor([3, 0, 7, 1, 5, 0, 9, 4], dtype=torch.int32)
    offsets = torch.cumsum(torch.cat([torch.zeros(1, dtype=torch.int32), lengths[:-1]]), 0).to(torch.int32)
    x = _rand(seed, int(lengths.sum()))
    out = torch.full((8,), float("nan"))
    own_bound_kernel[(8,)](x, lengths, offsets, out)
    lengths_bug = lengths.clone()
    lengths_bug[7] += 1  # the last segment reads one element past x: a bounds finding, program 7 only
    out_bug = torch.full((8,), float("nan"))
    own_bound_kernel[(8,)](x, lengths_bug, offsets, out_bug)
    return out, out_bug


@triton.jit
def nested_kernel(x_ptr, out_ptr, N: tl.constexpr):
    """Nested loops, both bounds per program: row r sums x[i, j] over i < r, j <= i (a triangle per row)."""
    r = tl.program_id(0)
    cols = tl.arange(0, N)
    acc = tl.zeros([N], tl.float32)
    for i in range(0, r):
        inner = tl.zeros([N], tl.float32)
        for j in range(0, i + 1):
            inner += tl.load(x_ptr + (i * N + j) * N + cols)
        acc += inner * (i + 1)
    tl.store(out_ptr + r * N + cols, acc)


def scenario_nested(seed: int):
    n = 8
    x = _rand(seed, n, n, n)
    out = torch.full((n, n), float("nan"))
    nested_kernel[(n,)](x, out, N=n)
    return out


@triton.jit
def silent_past_bound_kernel(x_ptr, trips_ptr, out_ptr, flags_ptr, BLOCK: tl.constexpr):
    """A value each program keeps in range for its own trips (asserted), that turns NaN and fails the assert a
    few iterations later, with an `if` on it: programs past their bound must not assert, report the NaN or
    choose the branch."""
    p = tl.program_id(0)
    trips = tl.load(trips_ptr + p)
    offs = tl.arange(0, BLOCK)
    budget = tl.load(x_ptr + p * BLOCK + offs).to(tl.float32) * 0.0 + trips.to(tl.float32) + 0.5
    flags = tl.zeros([BLOCK], tl.int32)
    for _i in range(0, trips):
        budget = budget - 1.0
        tl.device_assert(budget > 0.0, "budget spent")
        budget = tl.sqrt(budget) * tl.sqrt(budget)  # NaN once the budget is negative
        if tl.sum(budget, axis=0) > 0.0:
            flags += 1
    tl.store(out_ptr + p * BLOCK + offs, budget)
    tl.store(flags_ptr + p * BLOCK + offs, flags)


def scenario_silent_past_bound(seed: int):
    trips = torch.tensor([1, 5, 2, 8, 3, 2], dtype=torch.int32)
    x = _rand(seed, 6 * 4)
    out = torch.full((6 * 4,), float("nan"))
    flags = torch.full((6 * 4,), -1, dtype=torch.int32)
    silent_past_bound_kernel[(6,)](x, trips, out, flags, BLOCK=4)
    return out, flags


@triton.jit
def python_number_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    """Numbers carried by the loop, `step = step + 1` and `count += 1`: the interpreter makes an assigned number a
    tensor, so each program carries its own (a Python number that changed would make predication give up: the
    inner loop's variable in scenario_nested)."""
    p = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], tl.float32)
    step = 0
    count = 0
    for i in range(0, p + 1):
        step = step + 1
        count += 1
        acc += tl.load(x_ptr + i * BLOCK + offs) * step + count
    tl.store(out_ptr + p * BLOCK + offs, acc)


def scenario_python_number(seed: int):
    x = _rand(seed, 6, 8)
    out = torch.full((6, 8), float("nan"))
    python_number_kernel[(6,)](x, out, BLOCK=8)
    return out


@triton.jit
def late_error_kernel(x_ptr, trips_ptr, BLOCK: tl.constexpr):
    """Program 3 fails an assert at its 6th iteration, when the programs with fewer trips are past their bound."""
    p = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    for i in range(0, tl.load(trips_ptr + p)):
        v = tl.load(x_ptr + (p * 8 + i) * BLOCK + offs)
        tl.device_assert(v < 50.0, "value too big")


def scenario_late_error(seed: int):
    trips = torch.tensor([2, 4, 1, 8, 3], dtype=torch.int32)
    x = _rand(seed, 5 * 8 * 4)
    x[(3 * 8 + 5) * 4 + 2] = 99.0
    late_error_kernel[(5,)](x, trips, BLOCK=4)
    return x


@triton.jit
def effects_in_loop_kernel(x_ptr, out_ptr, count_ptr, BLOCK: tl.constexpr):
    """A store every iteration (each program its own row of out) and an atomic count of the iterations."""
    p = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    run = tl.zeros([BLOCK], tl.float32)
    for i in range(0, p % 4 + 1):
        run = run + tl.load(x_ptr + (p * 4 + i) * BLOCK + offs)
        tl.store(out_ptr + (p * 4 + i) * BLOCK + offs, run)
    tl.atomic_add(count_ptr + p % 2, p % 4 + 1)


def scenario_effects_in_loop(seed: int):
    x = _rand(seed, 9 * 4 * 8)
    out = torch.full((9 * 4 * 8,), float("nan"))  # rows past a program's trips stay NaN: the unwritten check
    count = torch.zeros(2, dtype=torch.int32)
    effects_in_loop_kernel[(9,)](x, out, count, BLOCK=8)
    return out, count


@triton.jit
def strided_bound_kernel(x_ptr, out_ptr, n_ptr, BLOCK: tl.constexpr):
    """range(start, stop, step) with a per-program stop and step > 1, and the loop variable in the body only."""
    p = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], tl.float32)
    for k in range(3, tl.load(n_ptr + p), 5):
        acc += tl.load(x_ptr + k * BLOCK + offs, mask=offs < k, other=0.0)
    tl.store(out_ptr + p * BLOCK + offs, acc)


def scenario_strided_bound(seed: int):
    n = torch.tensor([4, 30, 9, 3, 17, 26, 0], dtype=torch.int32)
    x = _rand(seed, 30 * 16)
    out = torch.full((7 * 16,), float("nan"))
    strided_bound_kernel[(7,)](x, out, n, BLOCK=16)
    return out


@triton.jit
def varlen_recurrence_kernel(x_ptr, gate_ptr, out_ptr, state_ptr, cu_seqlens, H: tl.constexpr, D: tl.constexpr,
                             USE_GATE: tl.constexpr, USE_BIAS: tl.constexpr):
    """A recurrent scan over a varlen batch in the style of linear-attention libraries: program (h, n) walks its
    own sequence (bos..eos from cu_seqlens) with pointers advanced each step, a store per step, a name assigned
    only under a constexpr-false `if`, and the final state stored after the loop."""
    i_h, i_n = tl.program_id(0), tl.program_id(1)
    bos = tl.load(cu_seqlens + i_n).to(tl.int64)
    eos = tl.load(cu_seqlens + i_n + 1).to(tl.int64)
    T = eos - bos
    d = tl.arange(0, D)
    p_x = x_ptr + bos * H * D + i_h * D + d
    p_o = out_ptr + bos * H * D + i_h * D + d
    p_g = gate_ptr + bos * H + i_h
    h = tl.zeros([D], tl.float32)
    for _ in range(0, T):
        b_x = tl.load(p_x).to(tl.float32)
        if USE_GATE:
            b_g = tl.load(p_g).to(tl.float32)
            h = h * tl.exp(b_g)
        if USE_BIAS:
            b_bias = b_x * 0.5
            h += b_bias
        h = h + b_x
        tl.store(p_o, h.to(p_o.dtype.element_ty))
        p_x += H * D
        p_o += H * D
        p_g += H
    tl.store(state_ptr + (i_n * H + i_h) * D + d, h)


def scenario_varlen_recurrence(seed: int):
    lengths = torch.tensor([7, 1, 12, 3, 9], dtype=torch.int64)
    cu = torch.cat([torch.zeros(1, dtype=torch.int64), lengths.cumsum(0)])
    h, d, total = 3, 8, int(lengths.sum())
    x = _rand(seed, total, h, d)
    gate = -_rand(seed + 1, total, h).abs() * 0.1
    out = torch.empty(total, h, d)  # every element written by its sequence's program: nothing unwritten
    state = torch.empty(lengths.numel(), h, d)
    varlen_recurrence_kernel[(h, lengths.numel())](x, gate, out, state, cu, H=h, D=d, USE_GATE=True, USE_BIAS=False)
    return out, state


@triton.jit
def nested_ragged_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    """Both loops' trip counts differ between programs (the inner one with the outer's variable too), a store in
    the inner loop: iterations with few programs left run compacted, an inner one inside an outer one."""
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], tl.float32)
    for i in range(0, pid + 1):
        row = tl.load(x_ptr + (pid * 8 + i) * BLOCK + offs)
        for j in range(0, pid - i + 1):
            acc += row * (j + 1)
            tl.store(out_ptr + (pid * 64 + i * 8 + j) * BLOCK + offs, acc)
    tl.store(out_ptr + (pid * 64 + 63) * BLOCK + offs, acc)


def scenario_nested_ragged(seed: int):
    x = _rand(seed, 64, 4)
    out = torch.full((8 * 64, 4), float("nan"))
    nested_ragged_kernel[(8,)](x, out, BLOCK=4)
    return out


@triton.jit
def split_start_kernel(a_ptr, out_ptr, partial_ptr, K, K_PER: tl.constexpr, BLOCK: tl.constexpr):
    """Split-K style: program (row, s) walks its own slice of K (the loop's start depends on the program, its trip
    count does not), stores each step's running sum and adds its total into the row's with an atomic."""
    row = tl.program_id(0)
    s = tl.program_id(1)
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], tl.float32)
    for k in range(s * K_PER, s * K_PER + K_PER, BLOCK):
        acc += tl.load(a_ptr + row * K + k + offs)
        tl.store(partial_ptr + row * K + k + offs, acc)
    tl.atomic_add(out_ptr + row * BLOCK + offs, acc)


def scenario_split_start(seed: int):
    rows, k = 5, 64
    a = _rand(seed, rows, k)
    out = torch.zeros(rows, 8)
    partial = torch.full((rows, k), float("nan"))
    split_start_kernel[(rows, 4)](a, out, partial, k, K_PER=16, BLOCK=8)
    return out, partial


@triton.jit
def ragged_start_kernel(x_ptr, starts_ptr, out_ptr, BLOCK: tl.constexpr):
    """Start and stop both per program (a loaded start, a pid-dependent stop): ragged trip counts, iterations with
    few programs left run compacted; an inner loop starts at the outer one's variable; the last program's
    start lies one block past x (a bounds finding from that program only)."""
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    begin = tl.load(starts_ptr + pid)
    acc = tl.zeros([BLOCK], tl.float32)
    for i in range(begin, begin + pid + 1):
        acc += tl.load(x_ptr + i * BLOCK + offs)
        for j in range(i, i + 2):
            acc += j.to(tl.float32)
        tl.store(out_ptr + (pid * 16 + i - begin) * BLOCK + offs, acc)
    tl.store(out_ptr + (pid * 16 + 15) * BLOCK + offs, acc)


def scenario_ragged_start(seed: int):
    x = _rand(seed, 20, 4)
    starts = torch.tensor([3, 0, 7, 1, 2, 9, 4, 13], dtype=torch.int32)
    out = torch.full((8 * 16, 4), float("nan"))
    ragged_start_kernel[(8,)](x, starts, out, BLOCK=4)
    return out
