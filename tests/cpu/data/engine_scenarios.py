"""Kernels that stress the batched engine: divergent control flow, early returns, atomics, spin locks, asserts,
reductions and scans (built-in and with combine functions), shape ops, NaN origins and races. Each `scenario_*`
function makes fresh inputs from `seed`, launches, and returns what it computed; engine_diff.py runs each one
under the serial and the batched engine and compares the outputs bit for bit and the findings as they are."""

from __future__ import annotations

import torch
import triton
import triton.language as tl


def _rand(seed: int, *shape, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g).to(dtype)


@triton.jit
def causal_rows_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """Row r sums blocks 0..r of x: a trip count per program; each step also stores (stores inside the loop)."""
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    cols = tl.arange(0, BLOCK)
    for j in range(0, row + 1):
        acc += tl.load(x_ptr + j * BLOCK + cols, mask=cols < n, other=0.0)
        tl.store(out_ptr + row * BLOCK + cols, acc, mask=cols < n)


def scenario_divergent_loop(seed: int):
    x = _rand(seed, 9, 32)
    out = torch.empty(9, 32)
    causal_rows_kernel[(9,)](x, out, 32, BLOCK=32)
    return out


@triton.jit
def early_return_kernel(x_ptr, out_ptr, n_rows, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    if row >= n_rows:
        return
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=-float("inf"))
    m = tl.max(x, axis=0)
    e = tl.exp(x - m)
    tl.store(out_ptr + row * n_cols + cols, e / tl.sum(e, axis=0), mask=cols < n_cols)


def scenario_early_return(seed: int):
    x = _rand(seed, 13, 50)
    out = torch.empty(13, 50)
    early_return_kernel[(16,)](x, out, 13, 50, BLOCK=64)
    return out


@triton.jit
def branchy_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    """An `if` on a per-program value after a store, and min() of tensors (Python control flow on both)."""
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, x)
    if pid % 3 == 1:
        tl.store(out_ptr + offs, x * 2.0)
    else:
        tl.store(out_ptr + offs, x - 1.0)
    limit = min(pid, 4)
    tl.store(out_ptr + offs, tl.load(out_ptr + offs) + limit)


def scenario_branch_after_store(seed: int):
    x = _rand(seed, 8 * 16)
    out = torch.empty(8 * 16)
    branchy_kernel[(8,)](x, out, BLOCK=16)
    return out


@triton.jit
def splitk_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """Each program adds its slice into one accumulator with a single atomic."""
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    part = tl.sum(tl.load(x_ptr + offs, mask=offs < n, other=0.0), axis=0)
    tl.atomic_add(out_ptr, part)


@triton.jit
def atomic_loop_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """Atomics in a loop: the engine hands the launch to the serial order."""
    pid = tl.program_id(0)
    for k in range(0, 3):
        offs = (pid * 3 + k) * BLOCK + tl.arange(0, BLOCK)
        tl.atomic_add(out_ptr + tl.arange(0, BLOCK), tl.load(x_ptr + offs, mask=offs < n, other=0.0))


def scenario_atomics(seed: int):
    x = _rand(seed, 1000)
    total = torch.zeros(1)
    splitk_kernel[(8,)](x, total, 1000, BLOCK=128)
    acc = torch.zeros(32)
    atomic_loop_kernel[(10,)](x, acc, 1000, BLOCK=32)
    return total, acc


@triton.jit
def spin_lock_kernel(x_ptr, out_ptr, lock_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    v = tl.load(x_ptr + pid * BLOCK + offs)
    while tl.atomic_cas(lock_ptr, 0, 1) == 1:
        pass
    tl.store(out_ptr + offs, tl.load(out_ptr + offs) + v)
    tl.atomic_xchg(lock_ptr, 0)


def scenario_spin_lock(seed: int):
    x = _rand(seed, 6 * 16)
    out = torch.zeros(16)
    lock = torch.zeros(1, dtype=torch.int32)
    spin_lock_kernel[(6,)](x, out, lock, BLOCK=16)
    return out


@triton.jit
def group_lock_kernel(x_ptr, partial_ptr, lock_ptr, count_ptr, n, GROUP: tl.constexpr, BLOCK: tl.constexpr,
                      RELEASE: tl.constexpr, LOCKED_STORE: tl.constexpr):
    """A row per program added into its group's partial sum under the group's lock, the first visitor of a group
    storing instead (the layer-norm tutorial's dW accumulation). RELEASE=False: the lock is never let go (the
    group's next program spins forever); LOCKED_STORE=False: the partial is written after the release (a race)."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n
    x = tl.load(x_ptr + row * n + cols, mask=mask, other=0.0)
    group = row % GROUP
    partial = partial_ptr + group * n + cols
    while tl.atomic_cas(lock_ptr + group, 0, 1) == 1:
        pass
    count = tl.load(count_ptr + group)
    if count == 0:
        tl.atomic_xchg(count_ptr + group, 1)
    else:
        x += tl.load(partial, mask=mask)
    if LOCKED_STORE:
        tl.store(partial, x, mask=mask)
    if RELEASE:
        tl.atomic_xchg(lock_ptr + group, 0)
    if not LOCKED_STORE:
        tl.store(partial, x, mask=mask)


def _group_lock(seed: int, rows: int, group: int, release: bool = True, locked_store: bool = True):
    n = 37
    x = _rand(seed, rows, n)
    partial = torch.empty(group, n)
    locks, counts = torch.zeros(group, dtype=torch.int32), torch.zeros(group, dtype=torch.int32)
    group_lock_kernel[(rows,)](x, partial, locks, counts, n, GROUP=group, BLOCK=64, RELEASE=release,
                               LOCKED_STORE=locked_store)
    return partial, locks, counts


def scenario_group_locks(seed: int):
    return _group_lock(seed, 100, 8)


def scenario_group_locks_uneven(seed: int):
    """More groups than a batch holds at first, a grid no multiple of them."""
    return _group_lock(seed, 150, 70)


def scenario_group_lock_never_released(seed: int):
    return _group_lock(seed, 24, 4, release=False)


def scenario_group_lock_race(seed: int):
    return _group_lock(seed, 24, 4, locked_store=False)


@triton.jit
def ticket_then_lock_kernel(x_ptr, out_ptr, ticket_ptr, lock_ptr, BLOCK: tl.constexpr):
    """A ticket every program takes from one counter, then a lock per pair of programs: the batch's atomics
    meet on the counter."""
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    ticket = tl.atomic_add(ticket_ptr, 1)
    while tl.atomic_cas(lock_ptr + pid // 2, 0, 1) == 1:
        pass
    v = tl.load(x_ptr + pid * BLOCK + offs) * (ticket + 1).to(tl.float32)
    tl.store(out_ptr + (pid // 2) * BLOCK + offs, tl.load(out_ptr + (pid // 2) * BLOCK + offs) + v)
    tl.atomic_xchg(lock_ptr + pid // 2, 0)


def scenario_ticket_then_lock(seed: int):
    x = _rand(seed, 10 * 16)
    out = _rand(seed + 1, 5 * 16)
    ticket, locks = torch.zeros(1, dtype=torch.int32), torch.zeros(5, dtype=torch.int32)
    ticket_then_lock_kernel[(10,)](x, out, ticket, locks, BLOCK=16)
    return out, ticket, locks


@triton.jit
def assert_kernel(x_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    x = tl.load(x_ptr + pid * BLOCK + tl.arange(0, BLOCK))
    tl.device_assert(x < 100.0, "x too big")


def scenario_device_assert(seed: int):
    x = _rand(seed, 8 * 16)
    x[5 * 16 + 3] = 500.0
    x[6 * 16 + 1] = 700.0
    assert_kernel[(8,)](x, BLOCK=16)
    return x


@triton.jit
def _argmax_combine(v1, i1, v2, i2):
    gt = (v1 > v2) | ((v1 == v2) & (i1 < i2))
    return tl.where(gt, v1, v2), tl.where(gt, i1, i2)


@triton.jit
def _mul_combine(a, b):
    return a * b


@triton.jit
def reductions_kernel(x_ptr, out_ptr, idx_ptr, scan_ptr, hist_ptr, R: tl.constexpr, C: tl.constexpr):
    pid = tl.program_id(0)
    r = tl.arange(0, R)
    c = tl.arange(0, C)
    x = tl.load(x_ptr + pid * R * C + r[:, None] * C + c[None, :])
    s0 = tl.sum(x, axis=0)
    s1 = tl.max(x, axis=1)
    s2 = tl.sum(x)
    am = tl.argmax(x, axis=1)
    v, i = tl.reduce((x, tl.broadcast_to(c[None, :], (R, C))), 1, _argmax_combine)
    p = tl.reduce(x * 0.5, 0, _mul_combine, keep_dims=True)
    tl.store(out_ptr + pid * (2 * C + 2 * R + 1) + c, s0)
    tl.store(out_ptr + pid * (2 * C + 2 * R + 1) + C + r, s1)
    tl.store(out_ptr + pid * (2 * C + 2 * R + 1) + C + R, s2)
    tl.store(out_ptr + pid * (2 * C + 2 * R + 1) + C + R + 1 + r, v)
    tl.store(out_ptr + pid * (2 * C + 2 * R + 1) + C + 2 * R + 1 + c, tl.reshape(p, (C,)))
    tl.store(idx_ptr + pid * 2 * R + r, am)
    tl.store(idx_ptr + pid * 2 * R + R + r, i)
    cs = tl.cumsum(x, axis=1)
    cp = tl.associative_scan(x, 0, _mul_combine)
    tl.store(scan_ptr + pid * 2 * R * C + r[:, None] * C + c[None, :], cs)
    tl.store(scan_ptr + pid * 2 * R * C + R * C + r[:, None] * C + c[None, :], cp)
    bins = (tl.abs(x) * 3.0).to(tl.int32)
    h = tl.histogram(tl.reshape(tl.minimum(bins, 7), (R * C,)), 8)
    tl.store(hist_ptr + pid * 8 + tl.arange(0, 8), h)


def scenario_reductions(seed: int):
    P, R, C = 5, 4, 8
    x = _rand(seed, P, R, C)
    out = torch.empty(P, 2 * C + 2 * R + 1)
    idx = torch.empty(P, 2 * R, dtype=torch.int32)
    scan = torch.empty(P, 2, R, C)
    hist = torch.empty(P, 8, dtype=torch.int32)
    reductions_kernel[(P,)](x, out, idx, scan, hist, R=R, C=C)
    return out, idx, scan, hist


@triton.jit
def shapes_kernel(x_ptr, y_ptr, out_ptr, B: tl.constexpr):
    pid = tl.program_id(0)
    i = tl.arange(0, B)
    x = tl.load(x_ptr + pid * B * B + i[:, None] * B + i[None, :])
    y = tl.load(y_ptr + pid * B + i)
    t = tl.trans(x)
    d = tl.dot(x, t)
    j = tl.join(y, y * 2.0)
    a, b = tl.split(j)
    g = tl.gather(x, tl.broadcast_to((B - 1 - i)[None, :], (B, B)), 1)
    w = tl.where(y > 0, y, pid * 1.0)
    e = tl.expand_dims(w, 0) + tl.reshape(d, (B, B)) + g
    tl.store(out_ptr + pid * (B * B + B) + i[:, None] * B + i[None, :], e + a[None, :] - b[:, None])
    tl.store(out_ptr + pid * (B * B + B) + B * B + i, tl.sum(t, axis=0) + (pid * B + i).to(tl.float32))


def scenario_shapes(seed: int):
    P, B = 6, 16
    x = _rand(seed, P, B, B)
    y = _rand(seed + 1, P, B)
    out = torch.empty(P, B * B + B)
    shapes_kernel[(P,)](x, y, out, B=B)
    return out


@triton.jit
def grid3d_kernel(out_ptr, NX, NY, NZ):
    x = tl.program_id(0)
    y = tl.program_id(1)
    z = tl.program_id(2)
    v = x * 100 + y * 10 + z + tl.num_programs(0) * 1000
    tl.store(out_ptr + (x * NY + y) * NZ + z, v)


def scenario_grid3d(seed: int):
    out = torch.empty(3, 4, 5, dtype=torch.int32)
    grid3d_kernel[(3, 4, 5)](out, 3, 4, 5)
    return out


@triton.jit
def nan_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.log(x) * 2.0
    tl.store(out_ptr + offs, y)


def scenario_nan_origin(seed: int):
    x = _rand(seed, 8 * 32).abs() + 0.5
    x[3 * 32 + 7] = -1.0
    x[6 * 32 + 2] = -2.0
    out = torch.empty(8 * 32)
    nan_kernel[(8,)](x, out, BLOCK=32)
    return out


@triton.jit
def race_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    """Programs overlap by half a block: write/write and read/write races."""
    pid = tl.program_id(0)
    offs = pid * (BLOCK // 2) + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) + tl.load(out_ptr + offs))


def scenario_races(seed: int):
    x = _rand(seed, 9 * 8 + 8)
    out = torch.zeros(9 * 8 + 8)
    race_kernel[(9,)](x, out, BLOCK=16)
    return out


@triton.jit
def oob_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """No mask on the store: the last program writes past the end of out."""
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr + offs, x * 3.0)


def scenario_out_of_bounds(seed: int):
    x = _rand(seed, 100)
    out = torch.empty(100)
    oob_kernel[(4,)](x, out, 100, BLOCK=32)
    return out


@triton.jit
def uninit_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) + 1.0)


def scenario_uninitialised(seed: int):
    x = torch.empty(4 * 16)
    x[:40] = _rand(seed, 40)
    out = torch.empty(4 * 16)
    uninit_kernel[(4,)](x, out, BLOCK=16)
    return out



def scenario_written_by_an_earlier_launch(seed: int):
    """A torch.empty tensor whose first rows one launch writes and whose every row the next reads: uninit only
    past them (the marks an earlier launch left), the first launch's output untouched by torch."""
    x = _rand(seed, 8 * 16)
    half = torch.empty(8 * 16)
    uninit_kernel[(5,)](x, half, BLOCK=16)
    out = torch.empty(8 * 16)
    uninit_kernel[(8,)](half, out, BLOCK=16)
    return out

@triton.jit
def bf16_kernel(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    tl.store(out_ptr + offs, x * y + x)


def scenario_bf16(seed: int):
    x = _rand(seed, 4 * 64, dtype=torch.bfloat16)
    y = _rand(seed + 1, 4 * 64, dtype=torch.bfloat16)
    out = torch.empty(4 * 64, dtype=torch.bfloat16)
    bf16_kernel[(4,)](x, y, out, BLOCK=64)
    return out


@triton.jit
def bf16_reductions_kernel(x_ptr, sum_ptr, max_ptr, scan_ptr, N: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + row * N + offs)
    tl.store(sum_ptr + row, tl.sum(x, axis=0))
    tl.store(max_ptr + row, tl.max(x, axis=0))
    tl.store(scan_ptr + row * N + offs, tl.cumsum(x, axis=0))


def scenario_bf16_reductions(seed: int):
    """Reductions and scans on bf16: computed on fp32 values and rounded back once (interpreter/semantics/bf16.py)."""
    x = _rand(seed, 7, 64, dtype=torch.bfloat16)
    sums = torch.empty(7, dtype=torch.bfloat16)
    maxes = torch.empty(7, dtype=torch.bfloat16)
    scans = torch.empty(7, 64, dtype=torch.bfloat16)
    bf16_reductions_kernel[(7,)](x, sums, maxes, scans, N=64)
    return sums, maxes, scans


@triton.jit
def retyped_pointers_kernel(x_ptr, out_ptr, bytes_ptr, BLOCK: tl.constexpr):
    """Loads and stores through pointers of another element type than the tensor's: bytes of a float tensor,
    a float read at an address that is not a multiple of 4 from its storage (the batched engine's numpy loads and
    stores must give way to Triton's own there), then a plain row copy after a per-program branch."""
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    raw = x_ptr.to(tl.pointer_type(tl.int8))
    b = tl.load(raw + offs * 4 + 1)  # the second byte of each float
    tl.store(bytes_ptr + offs, b)
    shifted = (raw + 2).to(tl.pointer_type(tl.float32))  # 2 bytes into the storage
    y = tl.load(shifted + offs, mask=offs < BLOCK * 4 - 1, other=0.0)
    if pid % 2 == 0:
        tl.store(out_ptr + offs, y)
    else:
        tl.store(out_ptr + offs, tl.load(x_ptr + offs) * 2.0)


def scenario_retyped_pointers(seed: int):
    x = _rand(seed, 4 * 32)
    out = torch.empty(4 * 32)
    raw = torch.empty(4 * 32, dtype=torch.int8)
    retyped_pointers_kernel[(4,)](x, out, raw, BLOCK=32)
    return out, raw


@triton.jit
def ticket_kernel(counter_ptr, ticket_ptr, x_ptr, out_ptr):
    """Each program takes a ticket: the value its atomic returns, decided by program order. One atomic op per
    program, so the batched engine runs it once for the whole batch, lanes in program order."""
    pid = tl.program_id(0)
    ticket = tl.atomic_add(counter_ptr + pid % 3, 1)
    tl.store(ticket_ptr + pid, ticket)
    tl.store(out_ptr + pid, tl.load(x_ptr + pid) * ticket.to(tl.float32))


def scenario_atomic_tickets(seed: int):
    counter = torch.zeros(3, dtype=torch.int32)
    tickets = torch.empty(37, dtype=torch.int32)
    x = _rand(seed, 37)
    out = torch.empty(37)
    ticket_kernel[(37,)](counter, tickets, x, out)
    return counter, tickets, out


@triton.jit
def shared_row_kernel(w_ptr, x_ptr, out_ptr, N: tl.constexpr):
    """Every program reads the same weight row (one row for the whole batch in the reader shadow); the last
    program then writes into it: a read/write race with every other program."""
    pid = tl.program_id(0)
    cols = tl.arange(0, N)
    w = tl.load(w_ptr + cols)
    x = tl.load(x_ptr + pid * N + cols)
    tl.store(out_ptr + pid * N + cols, x * w)
    if pid == tl.num_programs(0) - 1:
        tl.store(w_ptr + cols, w * 2.0)


def scenario_shared_row(seed: int):
    w = _rand(seed, 16)
    x = _rand(seed + 1, 6, 16)
    out = torch.empty(6, 16)
    shared_row_kernel[(6,)](w, x, out, N=16)
    return out, w


@triton.jit
def rows_in_place_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr, SPILL: tl.constexpr):
    """Each program reads row p of x and rows p and p+1 of y (dense runs: the batched engine keeps such reads as
    runs until a store reaches the tensor) and writes row p of x in place. SPILL: the last program also writes
    row 3 of y, which programs 2 and 3 read in the first batch (a read/write race across batches)."""
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    last = tl.num_programs(0) - 1
    x = tl.load(x_ptr + pid * n + cols, mask=cols < n, other=0.0)
    y = tl.load(y_ptr + pid * n + cols, mask=cols < n, other=0.0)
    nxt = tl.load(y_ptr + tl.minimum(pid + 1, last) * n + cols, mask=cols < n, other=0.0)
    tl.store(x_ptr + pid * n + cols, x * y + nxt, mask=cols < n)
    if SPILL:
        if pid == last:  # (a mask `(cols < n) & (pid == last)` stops Triton 3.9's own interpreter: "mask has
            tl.store(y_ptr + 3 * n + cols, x, mask=cols < n)  # unsupported dtype")


def scenario_rows_in_place(seed: int):
    """In place, row by row: no race (a program writes only the row of x it read); 100 programs, two batches."""
    x = _rand(seed, 100, 12)
    y = _rand(seed + 1, 100, 12)
    rows_in_place_kernel[(100,)](x, y, 12, BLOCK=16, SPILL=False)
    return x


def scenario_read_then_spill(seed: int):
    x = _rand(seed, 100, 12)
    y = _rand(seed + 1, 100, 12)
    rows_in_place_kernel[(100,)](x, y, 12, BLOCK=16, SPILL=True)
    return x, y


@triton.jit
def last_program_row_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    """A block mask and-ed with a per-program scalar condition: on Triton 3.9 the comparison comes back typed
    int32 and so does the mask (its own interpreter refuses it: "mask has unsupported dtype")."""
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    last = tl.num_programs(0) - 1
    x = tl.load(x_ptr + pid * n + cols, mask=(cols < n) & (pid >= 0), other=0.0)
    tl.store(y_ptr + cols, x, mask=(cols < n) & (pid == last))


def scenario_scalar_mask(seed: int):
    x = _rand(seed, 9, 12)
    y = torch.zeros(12)
    last_program_row_kernel[(9,)](x, y, 12, BLOCK=16)
    assert torch.equal(y, x[8]), "the last program's row"
    return y


@triton.jit
def dense_rows_kernel(x_ptr, y_ptr, z_ptr, n, stride, BLOCK: tl.constexpr, MODE: tl.constexpr):
    """A row per program in BLOCK-wide steps with a masked tail: every program's lanes one dense run of elements,
    the runs `stride` apart (the checks' strided path, batch_memory.Rows). MODE 0: y = 2x, y read back, z = x + y
    (loads of a tensor stored to in the launch); 1: x halved in place; 2: each program also reads the next row of
    x before writing its own (a read/write race, found at the store); 3: each program stores rows pid + 1 and then
    pid of y (a write/write race with the next program); 4: each program stores its row of y, then reads the next
    program's (a read/write race found at the load, after stores whose shadow writes wait aside)."""
    row = tl.program_id(0)
    for start in range(0, n, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n
        x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0)
        if MODE == 0:
            tl.store(y_ptr + row * stride + cols, x * 2.0, mask=mask)
            y = tl.load(y_ptr + row * stride + cols, mask=mask, other=0.0)
            tl.store(z_ptr + row * stride + cols, x + y, mask=mask)
        elif MODE == 1:
            tl.store(x_ptr + row * stride + cols, x * 0.5, mask=mask)
        elif MODE == 2:
            nxt = tl.load(x_ptr + (row + 1) * stride + cols, mask=mask, other=0.0)
            tl.store(x_ptr + row * stride + cols, x + nxt, mask=mask)
        elif MODE == 3:
            tl.store(y_ptr + (row + 1) * stride + cols, x, mask=mask)
            tl.store(y_ptr + row * stride + cols, x, mask=mask)
        else:
            tl.store(y_ptr + row * stride + cols, x, mask=mask)
            nxt = tl.load(y_ptr + (row + 1) * stride + cols, mask=mask, other=0.0)
            tl.store(z_ptr + row * stride + cols, nxt, mask=mask)


def _dense(seed: int, mode: int, rows: int = 300, n: int = 300, pad: int = 5, grid: int | None = None,
           empty_x: bool = False):
    stride = n + pad
    x = _rand(seed, rows + 1, stride)
    if empty_x:  # the first half of the rows written, the rest as torch.empty left it
        x = torch.empty(rows + 1, stride)
        x[: rows // 2] = _rand(seed, rows // 2, stride)
    y, z = torch.empty(rows + (mode >= 3), stride), torch.empty(rows, stride)
    if pad:  # the padding columns hold data (no unwritten finding: what is checked is the rows)
        y[:, n:], z[:, n:] = 0.0, 0.0
    dense_rows_kernel[(grid or rows,)](x, y, z, n, stride, BLOCK=128, MODE=mode)
    return x, y, z


def scenario_dense_rows(seed: int):
    return _dense(seed, 0)


def scenario_dense_rows_in_place(seed: int):
    return _dense(seed, 1)[0]


def scenario_dense_rows_read_race(seed: int):
    return _dense(seed, 2)[0]


def scenario_dense_rows_write_race(seed: int):
    return _dense(seed, 3)[1]


def scenario_dense_rows_uninitialised(seed: int):
    return _dense(seed, 0, empty_x=True)[1]


def scenario_dense_rows_past_the_end(seed: int):
    return _dense(seed, 1, rows=40, grid=42)[0]


def scenario_dense_rows_read_next(seed: int):
    return _dense(seed, 4)[1:]


@triton.jit
def row_block_pairs_kernel(x_ptr, y_ptr, z_ptr, ROWS: tl.constexpr, N: tl.constexpr, MODE: tl.constexpr):
    """ROWS whole rows per program (batch_memory.Rows), y stored, then MODE 0: y's next block read into z (a
    read/write race with the next program, found at the load after stores whose shadow writes wait aside); 1: y's
    next block stored too (a write/write race: the second store overlaps the first's runs kept aside)."""
    pid = tl.program_id(0)
    offs = (pid * ROWS + tl.arange(0, ROWS))[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + offs)
    tl.store(y_ptr + offs, x * 2.0)
    if MODE == 0:
        tl.store(z_ptr + offs, tl.load(y_ptr + offs + ROWS * N))
    else:
        tl.store(y_ptr + offs + ROWS * N, x)


def scenario_row_blocks_read_next(seed: int):
    x = _rand(seed, 64 * 4, 32)
    y, z = torch.empty(65 * 4, 32), torch.empty(64 * 4, 32)
    row_block_pairs_kernel[(64,)](x, y, z, ROWS=4, N=32, MODE=0)
    return y, z


def scenario_row_blocks_store_next(seed: int):
    x = _rand(seed, 64 * 4, 32)
    y = torch.empty(65 * 4, 32)
    row_block_pairs_kernel[(64,)](x, y, y, ROWS=4, N=32, MODE=1)
    return y


def scenario_row_blocks_written_whole(seed: int):
    """Outputs written whole by one launch's dense rows (their marks dropped: written whole) read by a torch op and by
    a second launch: nothing unwritten. One written in its first half only, read by both: the rest unwritten.
    (x halved: the kernel is exp, and the launches reading its outputs compute exp(exp(x)), which overflows to Inf,
    a NaN/Inf origin, for a draw of randn above ~4.5 - about one seed in 40 did.)"""
    x = _rand(seed, 96 * 4, 32) * 0.5
    y = torch.empty(96 * 4, 32)
    row_blocks_kernel[(96,)](x, y, ROWS=4, N=32)
    total = y.sum()
    again = torch.empty(96 * 4, 32)
    row_blocks_kernel[(96,)](y, again, ROWS=4, N=32)
    half = torch.empty(96 * 4, 32)
    row_blocks_kernel[(48,)](x, half, ROWS=4, N=32)  # the first 48 blocks
    partial = half.sum()  # a torch op reading the unwritten half: uninit
    out = torch.empty(96 * 4, 32)
    row_blocks_kernel[(96,)](half, out, ROWS=4, N=32)  # a launch reading it: uninit
    return total, again, half[: 48 * 4], out[: 48 * 4], partial.isnan()


@triton.jit
def row_blocks_kernel(x_ptr, y_ptr, ROWS: tl.constexpr, N: tl.constexpr):
    """ROWS whole rows per program, a 2-D block: together one dense run of ROWS * N elements."""
    pid = tl.program_id(0)
    offs = (pid * ROWS + tl.arange(0, ROWS))[:, None] * N + tl.arange(0, N)[None, :]
    tl.store(y_ptr + offs, tl.exp(tl.load(x_ptr + offs)))


def scenario_row_blocks(seed: int):
    x = _rand(seed, 96 * 4, 32)
    y = torch.empty(96 * 4, 32)
    row_blocks_kernel[(96,)](x, y, ROWS=4, N=32)
    return y


@triton.jit
def head_blocks_kernel(x_ptr, y_ptr, z_ptr, S, stride_h, BLOCK: tl.constexpr, MODE: tl.constexpr):
    """Program (block, head) of a 2-D grid reads and writes BLOCK elements of its head's row. In the serial engine's
    order (the grid's first axis outer) the programs of one block are `stride_h` apart and the next block starts
    again BLOCK further: a Rows access per block (the checks' RowGroups), the last block's tail masked. MODE 0:
    y = 2x, y read back, z = x + y; 1: x halved in place; 2: each program also stores the next block of its head's
    row (a write/write race with a program of the next group); 3: every program also reads its head's first block
    (loads whose groups reach the same runs), z = x + that block; 4: as 3, and the first block's programs then
    store x's first block (a read/write race with the programs of the other groups); 5: as 3, and each program
    stores BLOCK elements of y half a block after the previous block's (the first block's programs half as many):
    runs of different lengths per group, a write/write race between the later groups."""
    blk = tl.program_id(0)
    head = tl.program_id(1)
    cols = blk * BLOCK + tl.arange(0, BLOCK)
    mask = cols < S
    x = tl.load(x_ptr + head * stride_h + cols, mask=mask, other=0.0)
    if MODE == 0:
        tl.store(y_ptr + head * stride_h + cols, x * 2.0, mask=mask)
        y = tl.load(y_ptr + head * stride_h + cols, mask=mask, other=0.0)
        tl.store(z_ptr + head * stride_h + cols, x + y, mask=mask)
    elif MODE == 1:
        tl.store(x_ptr + head * stride_h + cols, x * 0.5, mask=mask)
    elif MODE == 2:
        wide = blk * BLOCK + tl.arange(0, 2 * BLOCK)
        tl.store(y_ptr + head * stride_h + wide, wide.to(tl.float32), mask=wide < S)
    else:
        first = tl.load(x_ptr + head * stride_h + tl.arange(0, BLOCK))  # every block's programs read it
        tl.store(z_ptr + head * stride_h + cols, x + first, mask=mask)
        if MODE == 4:  # and the first block's programs then write it: a read/write race with the others
            tl.store(x_ptr + head * stride_h + cols, first, mask=mask & (blk == 0))
        if MODE == 5:  # half blocks apart, the first block's runs half as long: a block's run overlaps the next's
            half = blk * (BLOCK // 2) + tl.arange(0, BLOCK)
            lanes = tl.where(blk == 0, BLOCK // 2, BLOCK)
            tl.store(y_ptr + head * stride_h + half, first, mask=tl.arange(0, BLOCK) < lanes)


def _heads(seed: int, mode: int, heads: int = 5, S: int = 300, pad: int = 70, empty_x: bool = False):
    x = _rand(seed, heads, S + pad)
    if empty_x:  # the first heads written, the rest as torch.empty left them
        x = torch.empty(heads, S + pad)
        x[:2] = _rand(seed, 2, S + pad)
    y, z = torch.zeros(heads, S + pad), torch.zeros(heads, S + pad)
    head_blocks_kernel[(triton.cdiv(S, 64), heads)](x, y, z, S, S + pad, BLOCK=64, MODE=mode)
    return x, y, z


def scenario_head_blocks(seed: int):
    return _heads(seed, 0)


def scenario_head_blocks_in_place(seed: int):
    return _heads(seed, 1)[0]


def scenario_head_blocks_write_race(seed: int):
    return _heads(seed, 2)[1]


def scenario_head_blocks_uninitialised(seed: int):
    return _heads(seed, 0, empty_x=True)[1:]


def scenario_head_blocks_shared_reads(seed: int):
    return _heads(seed, 3)[2]


def scenario_head_blocks_read_race(seed: int):
    x, _, z = _heads(seed, 4)
    return x, z


def scenario_head_blocks_uneven_race(seed: int):
    return _heads(seed, 5)[1]


@triton.jit
def ignored_rows_kernel(x_ptr, y_ptr, labels_ptr, loss_ptr, count_ptr, n_cols, ignore_index, BLOCK: tl.constexpr):
    """Liger's losses' form: a row whose label is ignored is zeroed in a loop and the program returns; the others
    bind names in both branches of an `if` on a loaded value, read after it, loop over the row and take a ticket."""
    row = tl.program_id(0)
    label = tl.load(labels_ptr + row)
    if label == ignore_index:
        for start in range(0, n_cols, BLOCK):
            cols = start + tl.arange(0, BLOCK)
            tl.store(x_ptr + row * n_cols + cols, tl.zeros([BLOCK], tl.float32), mask=cols < n_cols)
        tl.store(loss_ptr + row, 0.0)
        return
    if label % 2 == 1:
        scale = label.to(tl.float32) + 1.0
        shift = label
    else:
        scale = 0.5 - label.to(tl.float32)
        shift = label * 3
    total = 0.0
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
        y = tl.load(y_ptr + row * n_cols + cols, mask=mask, other=0.0)
        d = (x - y) * scale + shift
        if row % 3 == 0:  # nested: an `if` inside the loop inside a branch
            d = tl.abs(d) - 1.0
        tl.store(x_ptr + row * n_cols + cols, d, mask=mask)
        total += tl.sum(d)
    tl.store(loss_ptr + row, total + tl.atomic_add(count_ptr, 1).to(tl.float32) * 0.0)


def scenario_ignored_rows(seed: int):
    g = torch.Generator().manual_seed(seed)
    x, y = _rand(seed, 23, 70), _rand(seed + 1, 23, 70)
    labels = torch.randint(0, 4, (23,), generator=g)
    loss, count = torch.empty(23), torch.zeros(1, dtype=torch.int32)
    ignored_rows_kernel[(23,)](x, y, labels, loss, count, 70, 0, BLOCK=32)
    return x, loss, count


@triton.jit
def ce_rows_kernel(x_ptr, labels_ptr, loss_ptr, n_cols, ignore_index, BLOCK: tl.constexpr, MODE: tl.constexpr):
    """Liger's cross entropy's form, a row in one block: a row whose label is ignored is zeroed and its program
    returns (the batch's other programs go on as runs of unequal length, single programs among them); the others
    read their row twice, store the gradient in place (reads and stores of a storage the launch stores to) and the
    loss. MODE 1: each also reads the next row after storing its own (a read/write race with the next program)."""
    row = tl.program_id(0).to(tl.int64)
    label = tl.load(labels_ptr + row)
    x_ptr += row * n_cols
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    if label == ignore_index:
        tl.store(x_ptr + cols, 0.0, mask=mask)
        tl.store(loss_ptr + row, 0.0)
        return
    x = tl.load(x_ptr + cols, mask=mask, other=float("-inf"))
    m = tl.max(x)
    d = tl.sum(tl.exp(x - m))
    x_y = tl.load(x_ptr + label)
    x = tl.load(x_ptr + cols, mask=mask, other=0.0)
    tl.store(x_ptr + cols, tl.exp(x - m) / d, mask=mask)
    loss = tl.log(d) + m - x_y
    if MODE == 1:
        loss += tl.sum(tl.load(x_ptr + n_cols + cols, mask=mask, other=0.0)) * 0.0
    tl.store(loss_ptr + row, loss)


def _ce_rows(seed: int, mode: int):
    g = torch.Generator().manual_seed(seed)
    rows, n = 160, 1000  # runs long enough to be checked as runs (dense_rows._RUN_LANES: lanes per run)
    x = _rand(seed, rows + mode, n)
    labels = torch.randint(0, n, (rows,), generator=g)
    labels[torch.randint(0, rows, (3,), generator=g)] = -100
    labels[[1, 2, 3, 9, 11]] = -100  # a run of ignored rows, and single programs between ignored ones
    loss = torch.empty(rows)
    ce_rows_kernel[(rows,)](x, labels, loss, n, -100, BLOCK=1024, MODE=mode)
    return x, loss


def scenario_ce_rows(seed: int):
    return _ce_rows(seed, 0)


def scenario_ce_rows_read_next(seed: int):
    return _ce_rows(seed, 1)


@triton.jit
def ragged_tail_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr, MODE: tl.constexpr):
    """An element-wise kernel over n elements, n no multiple of BLOCK: every program's row whole but the last one's
    (`offs < n`). MODE 1: then each reads the next program's elements of out (a read/write race); MODE 2: out is
    read before anything wrote it (torch.empty); MODE 3: the next program's elements of x, past the end for the
    last one (masked by n + BLOCK: a bounds finding)."""
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    if MODE == 2:
        extra = tl.load(out_ptr + offs, mask=mask, other=0.0) * 0.0
    else:
        extra = 0.0
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask) + extra, mask=mask)
    if MODE == 1:
        nxt = tl.load(out_ptr + offs + BLOCK, mask=offs + BLOCK < n, other=0.0)
        tl.store(y_ptr + offs, nxt, mask=mask)
    if MODE == 3:
        nxt = tl.load(x_ptr + offs + BLOCK, mask=offs < n + BLOCK, other=0.0)
        tl.store(y_ptr + offs, nxt, mask=mask)


def _ragged_tail(seed: int, mode: int, spare: int = 0, again: bool = False):
    n = 50_003  # 49 programs of 1024 lanes: enough lanes for the two groups (dense_rows._ragged_tail)
    x, y = _rand(seed, n), _rand(seed + 1, n)
    out = torch.empty(n + spare)  # `spare` elements past n: no program writes them (out is not written whole)
    ragged_tail_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024, MODE=mode)
    if again:  # a second launch reads out before storing to it: every element the first wrote holds data
        ragged_tail_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024, MODE=2)
    return out, y


def scenario_ragged_tail(seed: int):
    return _ragged_tail(seed, 0)


def scenario_ragged_tail_written_whole(seed: int):
    return _ragged_tail(seed, 0, again=True)


def scenario_ragged_tail_written_in_part(seed: int):
    return _ragged_tail(seed, 0, spare=7, again=True)


def scenario_ragged_tail_read_next(seed: int):
    return _ragged_tail(seed, 1)


def scenario_ragged_tail_uninitialised(seed: int):
    return _ragged_tail(seed, 2)


def scenario_ragged_tail_past_the_end(seed: int):
    return _ragged_tail(seed, 3)


@triton.jit
def two_atomics_kernel(x_ptr, even_ptr, odd_ptr, out_ptr):
    """An atomic in each branch of an `if`, their tickets used: each program takes one, in program order."""
    pid = tl.program_id(0)
    x = tl.load(x_ptr + pid)
    if x > 0:
        ticket = tl.atomic_add(even_ptr, 1)
    else:
        ticket = tl.atomic_add(odd_ptr, 1)
    tl.store(out_ptr + pid, ticket)


def scenario_two_atomics(seed: int):
    x = _rand(seed, 29)
    even, odd = torch.zeros(1, dtype=torch.int32), torch.zeros(1, dtype=torch.int32)
    out = torch.empty(29, dtype=torch.int32)
    two_atomics_kernel[(29,)](x, even, odd, out)
    return even, odd, out


@triton.jit
def branch_findings_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """Findings in both branches of an `if`: a load past the end in one, a NaN made in the other."""
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    if pid % 2 == 0:
        v = tl.load(x_ptr + offs + 3)  # past the end for the last even program
    else:
        v = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
        v = tl.log(v - 10.0)  # NaN from finite values
    tl.store(out_ptr + offs, v, mask=offs < n)


def scenario_branch_findings(seed: int):
    x = _rand(seed, 5 * 16)
    out = torch.empty(5 * 16)
    branch_findings_kernel[(5,)](x, out, 5 * 16, BLOCK=16)
    return out




@triton.jit
def labelled_rows_kernel(x_ptr, labels_ptr, loss_ptr, n_cols, ignore_index: tl.constexpr, BLOCK: tl.constexpr,
                         HAS_LABEL: tl.constexpr, PER_ELEMENT: tl.constexpr):
    """Liger's tvd form: the early return inside a constexpr `if` (the rest of the kernel then runs in each branch
    that does not return), a constexpr `if` inside the zeroing loop."""
    row = tl.program_id(0).to(tl.int64)
    x_ptr += row * n_cols
    if HAS_LABEL:
        label = tl.load(labels_ptr + row)
        if label == ignore_index:
            for i in range(0, n_cols, BLOCK):
                cols = i + tl.arange(0, BLOCK)
                tl.store(x_ptr + cols, 0.0, mask=cols < n_cols)
                if PER_ELEMENT:
                    tl.store(loss_ptr + row * n_cols + cols, 0.0, mask=cols < n_cols)
            return
    total = 0.0
    for i in range(0, n_cols, BLOCK):
        cols = i + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + cols, mask=cols < n_cols, other=0.0)
        tl.store(x_ptr + cols, x * 0.5, mask=cols < n_cols)
        if PER_ELEMENT:
            tl.store(loss_ptr + row * n_cols + cols, tl.abs(x), mask=cols < n_cols)
        else:
            total += tl.sum(tl.abs(x))
    if not PER_ELEMENT:
        tl.store(loss_ptr + row, total)


def scenario_labelled_rows(seed: int):
    g = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, 3, (19,), generator=g)
    x, y = _rand(seed, 19, 40), _rand(seed + 1, 19, 40)
    loss, per = torch.empty(19), torch.empty(19, 40)
    labelled_rows_kernel[(19,)](x, labels, loss, 40, 0, BLOCK=16, HAS_LABEL=True, PER_ELEMENT=False)
    labelled_rows_kernel[(19,)](y, labels, per, 40, 1, BLOCK=16, HAS_LABEL=True, PER_ELEMENT=True)
    return x, y, loss, per


@triton.jit
def return_only_kernel(x_ptr):
    """A kernel whose body is a bare `return` (its early-return rewrite leaves no statement)."""
    return


@triton.jit
def helper_returning_early(x, limit):
    if limit < 0:
        return
    tl.device_assert(limit >= 0)


@triton.jit
def helper_return_kernel(x_ptr, out_ptr, B: tl.constexpr):
    """A jit helper with an early return, called by programs that take it and programs that do not."""
    pid = tl.program_id(0)
    offs = pid * B + tl.arange(0, B)
    helper_returning_early(x_ptr, pid - 2)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) * 2.0)


def scenario_return_only(seed: int):
    x = _rand(seed, 8)
    return_only_kernel[(3,)](x)
    out = torch.empty(5 * 8)
    y = _rand(seed, 5 * 8)
    helper_return_kernel[(5,)](y, out, B=8)
    return x, out
