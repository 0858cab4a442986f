"""Launches replayed from a recording of an earlier launch with the same key (launch_replay.py), and launches that
must not be: each scenario launches a kernel several times on fresh tensors of the same shapes, the first launch
clean, a later one where the replay must give up (an uninitialised read, a NaN/Inf made, an int32 overflow, a
store's value that wrapped), or a kernel whose recording must be refused (a choice made by memory's values that
happened to agree, a loop bound from memory, an integer local from memory at a store). engine_diff.py
--scenarios runs each under both engines (TDEBUG_REPLAY=eager: a key's second launch replays) and compares
outputs bit for bit, findings, error and store records; test_launch_replay.py says which replayed."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

GLOBAL_SCALE = 2.0  # read by scaled_kernel: a global the key holds


def _randn(seed: int, *shape, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=torch.float64).to(dtype)


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def _add(x, y):
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 64),)](x, y, out, x.numel(), BLOCK=64)
    return out


def scenario_repeated_add(seed: int):
    """Five launches of one key: the second on replays (every output bit for bit, the store records the same)."""
    return [_add(_randn(seed + i, 1000), _randn(seed + 100 + i, 1000)) for i in range(5)]


def scenario_uninitialised_at_replay(seed: int):
    """The third launch reads a torch.empty half of which nothing wrote: its replay gives up, the finding is the
    ordinary run's."""
    x = _randn(seed, 1000)
    outs = [_add(x, _randn(seed + 1, 1000)), _add(x, _randn(seed + 2, 1000))]
    half = torch.empty(1000)
    half[:500] = 1.0
    outs.append(_add(x, half))
    outs.append(_add(x, _randn(seed + 3, 1000)))  # replays again
    return outs


def scenario_nan_made_at_replay(seed: int):
    """The third launch's sum overflows to Inf (a NaN/Inf origin): its replay gives up and the finding names the
    kernel's line."""
    x = _randn(seed, 1000)
    outs = [_add(x, _randn(seed + 1, 1000)), _add(x, _randn(seed + 2, 1000))]
    outs.append(_add(torch.full((1000,), 3e38), torch.full((1000,), 3e38)))
    outs.append(_add(x, x.clone()))
    return outs


@triton.jit
def index_kernel(idx_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """out = idx * 1000 + 7 in int32: wraps (an overflow that reaches a store) for large loaded values."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(idx_ptr + offs, mask=mask, other=0)
    tl.store(out_ptr + offs, v * 1000 + 7, mask=mask)


def scenario_overflow_at_replay(seed: int):
    """The third launch's int32 product wraps: the overflow check (in Triton's front end, on memory's values) runs
    at the replay too and gives it up; the finding is the ordinary run's."""
    g = torch.Generator().manual_seed(seed)
    outs = []
    for big in (False, False, True, False):
        idx = torch.randint(0, 1000, (300,), generator=g, dtype=torch.int32)
        if big:
            idx[7] = 2**30
        out = torch.empty(300, dtype=torch.int32)
        index_kernel[(5,)](idx, out, 300, BLOCK=64)
        outs.append(out)
    return outs


@triton.jit
def gate_kernel(x_ptr, gate_ptr, out_ptr, BLOCK: tl.constexpr):
    """An `if` on a loaded scalar: the recorded launch's programs all agree on it, later ones do not."""
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    if tl.load(gate_ptr + pid) > 0:
        x = x * 2.0
    tl.store(out_ptr + offs, x)


def scenario_branch_on_memory(seed: int):
    """Every program takes the branch at the first launch, half of them at the second: no recording may hold it
    (the fuzzer's find: the batch's `if` decided from memory's values without a split)."""
    outs = []
    for gates in ([1.0, 1.0, 1.0, 1.0], [1.0, -1.0, 1.0, -1.0], [1.0, 1.0, 1.0, 1.0]):
        out = torch.empty(4 * 32)
        gate_kernel[(4,)](_randn(seed, 4 * 32), torch.tensor(gates), out, BLOCK=32)
        outs.append(out)
    return outs


@triton.jit
def trips_kernel(x_ptr, trips_ptr, out_ptr, BLOCK: tl.constexpr):
    """A loop whose trip count is loaded: the same in every program at the first launch."""
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for i in range(0, tl.load(trips_ptr)):
        acc += tl.load(x_ptr + offs) * (i + 1)
    tl.store(out_ptr + offs, acc)


def scenario_loop_bound_from_memory(seed: int):
    outs = []
    for trips in (2, 3, 1):
        out = torch.empty(4 * 16)
        trips_kernel[(4,)](_randn(seed, 4 * 16), torch.tensor([trips], dtype=torch.int32), out, BLOCK=16)
        outs.append(out)
    return outs


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, stride, BLOCK: tl.constexpr):
    """A row softmax (tl.max, tl.sum: reductions replayed with their combine functions)."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(out_ptr + row * stride + cols, num / tl.sum(num, axis=0), mask=mask)


def scenario_softmax_rows(seed: int):
    outs = []
    for i in range(4):
        x = _randn(seed + i, 6, 100)
        if i == 2:
            x[3, 5] = float("nan")  # a NaN loaded: no origin (the same finding, none, both ways)
        out = torch.empty_like(x)
        softmax_kernel[(6,)](x, out, 100, x.stride(0), BLOCK=128)
        outs.append(out)
    return outs


@triton.jit
def scaled_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) * GLOBAL_SCALE)


def scenario_global_changed(seed: int):
    """A global the kernel reads changes between launches: a new key (the old plan would scale by the old value)."""
    global GLOBAL_SCALE
    outs = []
    try:
        for scale in (2.0, 2.0, 3.0, 3.0):
            GLOBAL_SCALE = scale
            out = torch.empty(128)
            scaled_kernel[(2,)](_randn(seed, 128), out, BLOCK=64)
            outs.append(out)
    finally:
        GLOBAL_SCALE = 2.0
    return outs


@triton.jit
def rows_by_index_kernel(idx_ptr, x_ptr, out_ptr, BLOCK: tl.constexpr):
    """A row chosen by a loaded index (a gather): its addresses depend on memory, so no recording."""
    pid = tl.program_id(0)
    row = tl.load(idx_ptr + pid)
    cols = tl.arange(0, BLOCK)
    tl.store(out_ptr + pid * BLOCK + cols, tl.load(x_ptr + row * BLOCK + cols))


def scenario_gather_rows(seed: int):
    x = _randn(seed, 8 * 16)
    outs = []
    for order in ([0, 1, 2, 3], [7, 6, 5, 4], [1, 1, 1, 1]):
        out = torch.empty(4 * 16)
        rows_by_index_kernel[(4,)](torch.tensor(order, dtype=torch.int32), x, out, BLOCK=16)
        outs.append(out)
    return outs


@triton.jit
def partial_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    """Writes the first 3 of 4 blocks of out: the rest unwritten (the probe past the grid says the grid is short)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) + 1.0, mask=offs < 4 * BLOCK)


def scenario_unwritten_output(seed: int):
    outs = []
    for i in range(3):
        out = torch.empty(4 * 32)
        partial_kernel[(3,)](_randn(seed + i, 4 * 32), out, BLOCK=32)
        outs.append(out[:3 * 32])
    return outs


@triton.jit
def in_place_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(x_ptr + offs, x * 0.5 + 1.0, mask=mask)


def scenario_in_place(seed: int):
    """The same tensor halved in place, launch after launch (its own output read back by the next replay)."""
    x = _randn(seed, 500)
    for _ in range(4):
        in_place_kernel[(8,)](x, 500, BLOCK=64)
    return [x]


@triton.jit
def bf16_fma_kernel(a_ptr, b_ptr, c_ptr, out_ptr, BLOCK: tl.constexpr):
    """bf16 a * b + c: exact bf16 and the fused multiply-add run again through the builder's wrappers."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs)
    tl.store(out_ptr + offs, a * tl.load(b_ptr + offs) + tl.load(c_ptr + offs))


def scenario_bf16_fma(seed: int):
    outs = []
    for i in range(3):
        a, b, c = (_randn(seed + 10 * i + k, 256, dtype=torch.bfloat16) for k in range(3))
        out = torch.empty(256, dtype=torch.bfloat16)
        bf16_fma_kernel[(4,)](a, b, c, out, BLOCK=64)
        outs.append(out)
    return outs


@triton.jit
def label_kernel(labels_ptr, out_ptr, BLOCK: tl.constexpr):
    """The row's label, loaded as a scalar, kept in an integer local at the store (store records keep the kernel's
    integer scalars per program): a value from memory the records of a replay would not have."""
    pid = tl.program_id(0)
    label = tl.load(labels_ptr + pid)
    cols = tl.arange(0, BLOCK)
    tl.store(out_ptr + pid * BLOCK + cols, (cols + label).to(tl.float32))


def scenario_scalar_from_memory(seed: int):
    outs = []
    for labels in ([1, 2, 3], [4, 5, 6], [7, 8, 9]):
        out = torch.empty(3 * 16)
        label_kernel[(3,)](torch.tensor(labels, dtype=torch.int32), out, BLOCK=16)
        outs.append(out)
    return outs
