"""Issue 46's cases where the batched engine and the serial one used to disagree, written as kernels in the style of
the code that showed them: each `scenario_*` function makes fresh inputs from `seed`, launches, and returns what it
computed. engine_diff.py runs each under both engines and compares outputs bit for bit and findings as they are;
tests/cpu/test_engine_parity.py also says what each must find."""

from __future__ import annotations

import torch
import triton
import triton.language as tl


def _rand(seed: int, *shape):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


@triton.jit
def row_sum_kernel(x_ptr, y_ptr, N: tl.constexpr):
    pid = tl.program_id(0)
    x = tl.load(x_ptr + pid * N + tl.arange(0, N))
    tl.store(y_ptr + pid, tl.sum(x, axis=0))


def scenario_sum_overflows_beside_loaded_inf(seed: int):
    """Row 0 holds a loaded inf (no origin); row 1's four values of 2e38 make an Inf in the sum (an origin)."""
    x = _rand(seed, 2, 4).abs() + 1.0
    x[0, 1] = float("inf")
    x[1] = 2e38
    y = torch.empty(2)
    row_sum_kernel[(2,)](x, y, N=4)
    return y


@triton.jit
def row_cumsum_kernel(x_ptr, y_ptr, N: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * N + tl.arange(0, N)
    tl.store(y_ptr + offs, tl.cumsum(tl.load(x_ptr + offs), axis=0))


def scenario_cumsum_overflows_beside_loaded_inf(seed: int):
    x = _rand(seed, 4, 8).abs() + 1.0
    x[0, 3] = float("inf")
    x[2, :] = 1e38
    y = torch.empty(4, 8)
    row_cumsum_kernel[(4,)](x, y, N=8)
    return y


@triton.jit
def tile_dot_kernel(a_ptr, b_ptr, c_ptr, N: tl.constexpr):
    pid = tl.program_id(0)
    r = tl.arange(0, N)
    a = tl.load(a_ptr + pid * N * N + r[:, None] * N + r[None, :])
    b = tl.load(b_ptr + r[:, None] * N + r[None, :])
    tl.store(c_ptr + pid * N * N + r[:, None] * N + r[None, :], tl.dot(a, b))


def scenario_dot_overflows_beside_loaded_inf(seed: int):
    a = _rand(seed, 3, 16, 16).abs() + 1.0
    a[0, 0, 0] = float("inf")
    a[2] *= 1e37
    b = _rand(seed + 1, 16, 16).abs() + 10.0
    c = torch.empty(3, 16, 16)
    tile_dot_kernel[(3,)](a, b, c, N=16)
    return c


@triton.jit
def masked_max_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    """A masked lane's other=-inf in every program; one row's finite values overflow in the sum."""
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + pid * n + cols, mask=cols < n, other=-float("inf"))
    m = tl.max(x, axis=0)
    s = tl.sum(tl.where(cols < n, x, 0.0), axis=0)
    tl.store(y_ptr + pid, s - m)


def scenario_sum_overflows_beside_other_inf(seed: int):
    x = _rand(seed, 4, 6).abs()
    x[1] = 3e38
    y = torch.empty(4)
    masked_max_kernel[(4,)](x.reshape(-1), y, 6, BLOCK=8)
    return y


@triton.jit
def log_sum_kernel(x_ptr, y_ptr, N: tl.constexpr):
    pid = tl.program_id(0)
    x = tl.load(x_ptr + pid * N + tl.arange(0, N))
    tl.store(y_ptr + pid, tl.sum(tl.log(x), axis=0))


def scenario_origins_kept_per_program(seed: int):
    """Program 0 makes a NaN (log(-1)), program 1 an Inf (log(0)), each stored through tl.sum: two origins."""
    x = _rand(seed, 2, 4).abs() + 1.0
    x[0, 2] = -1.0
    x[1, 1] = 0.0
    y = torch.empty(2)
    log_sum_kernel[(2,)](x, y, N=4)
    return y


@triton.jit
def softmax_fp16_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    """Exponentials cast to fp16 overflow (inf / inf = NaN in the output): the cast is the origin."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n
    x = tl.load(x_ptr + row * n + cols, mask=mask, other=-float("inf"))
    e = tl.exp(x).to(tl.float16)
    s = tl.sum(e.to(tl.float32), axis=0)
    tl.store(y_ptr + row * n + cols, e.to(tl.float32) / s, mask=mask)


def scenario_softmax_fp16_overflow(seed: int):
    x = _rand(seed, 8, 1000) * 3 + 8
    y = torch.empty(8, 1000)
    softmax_fp16_kernel[(8,)](x, y, 1000, BLOCK=1024)
    return y


@triton.jit
def branch_then_atomics_kernel(x_ptr, total_ptr, tickets_ptr):
    """An `if` that differs between programs, then a float atomic_add and a ticket from an int one."""
    pid = tl.program_id(0)
    v = tl.load(x_ptr + pid)
    if pid % 2 == 0:
        v = v * 1.0
    else:
        v = v + 0.0
    tl.atomic_add(total_ptr, v)
    ticket = tl.atomic_add(tickets_ptr, 1)
    tl.store(tickets_ptr + 1 + pid, ticket)


def scenario_atomics_after_divergent_if(seed: int):
    x = torch.tensor([1e8, 1.0, -1e8, 1.0, 3e7, 2.0, -3e7, 0.5])
    x = x[torch.randperm(8, generator=torch.Generator().manual_seed(seed))] if seed % 2 else x
    total = torch.zeros(1)
    tickets = torch.zeros(9, dtype=torch.int32)
    branch_then_atomics_kernel[(8,)](x, total, tickets)
    return [total, tickets]


@triton.jit
def int_sum_kernel(x_ptr, y_ptr, c_ptr, N: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * N + tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.store(y_ptr + pid, tl.sum(x, axis=0))
    tl.store(c_ptr + offs, tl.cumsum(x, axis=0))


def scenario_int32_sum_wraps(seed: int):
    x = torch.randint(1_100_000_000, 1_200_000_000, (2, 4), dtype=torch.int32,
                      generator=torch.Generator().manual_seed(seed))
    y = torch.empty(2, dtype=torch.int32)
    c = torch.empty(2, 4, dtype=torch.int32)
    int_sum_kernel[(2,)](x, y, c, N=4)
    return [y, c]


@triton.jit
def bf16_cast_kernel(x_ptr, y_ptr, z_ptr, N: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * N + tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    h = x.to(tl.bfloat16)  # 3.3999e38 rounds up past bf16's largest finite value: Inf
    tl.store(y_ptr + offs, h * 2)
    g = (x * 0.5).to(tl.bfloat16)
    tl.store(z_ptr + offs, g + g)  # a bf16 addition that overflows


def scenario_bf16_overflow(seed: int):
    x = _rand(seed, 2, 16).abs() + 1.0
    x[1, :4] = 3.3999e38
    y = torch.empty(2, 16, dtype=torch.bfloat16)
    z = torch.empty(2, 16, dtype=torch.bfloat16)
    bf16_cast_kernel[(2,)](x, y, z, N=16)
    return [y, z]


@triton.jit
def hash_kernel(x_ptr, h_ptr, mix_ptr, b_ptr, N: tl.constexpr):
    """Wraps on purpose: a multiplicative hash stored as int32, xor-shift mixing, int8 arithmetic."""
    pid = tl.program_id(0)
    offs = pid * N + tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.store(h_ptr + offs, x * -1640531535)  # 0x9E3779B1 as an int32
    m = x * 73244475
    tl.store(mix_ptr + offs, m ^ (m >> 16))
    b = tl.load(b_ptr + offs).to(tl.int8)
    tl.store(b_ptr + offs, (b * 3 + 7).to(tl.int32))


def scenario_intentional_wraps(seed: int):
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(1 << 20, 1 << 30, (4, 16), dtype=torch.int32, generator=g)
    h = torch.empty(4, 16, dtype=torch.int32)
    mix = torch.empty(4, 16, dtype=torch.int32)
    b = torch.randint(40, 127, (4, 16), dtype=torch.int32, generator=g)
    hash_kernel[(4,)](x, h, mix, b, N=16)
    return [h, mix, b]


@triton.jit
def findings_order_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    """Findings at two lines in several programs (NaN origins at line A in some, B in others, and a store past the
    end in the last): one order, program then line, whichever engine ran them."""
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=1.0)
    a = tl.sqrt(x)
    b = tl.log(x + 1.0)
    if pid % 2 == 0:
        tl.store(y_ptr + offs, b, mask=offs < n)
    else:
        tl.store(y_ptr + offs, a, mask=offs < n)
    tl.store(y_ptr + n + offs, x, mask=offs < n + 1)


def scenario_findings_order(seed: int):
    x = _rand(seed, 64).abs() + 0.5
    x[[3, 20, 37, 52]] = -2.0
    y = torch.empty(64 + 60)  # the last store runs past the end in the last program
    findings_order_kernel[(4,)](x, y, 64, BLOCK=16)
    return y


@triton.jit
def scaled_dot_kernel(a_ptr, s_ptr, b_ptr, c_ptr, N: tl.constexpr):
    """Two ops of one line make Infs: the scaling in one program, tl.dot in another (found by the fuzzer)."""
    pid = tl.program_id(0)
    r = tl.arange(0, N)
    tile = r[:, None] * N + r[None, :]
    c = tl.dot(tl.load(a_ptr + pid * N * N + tile) * tl.load(s_ptr + pid), tl.load(b_ptr + tile))
    tl.store(c_ptr + pid * N * N + tile, c)


def scenario_two_origins_on_one_line(seed: int):
    a = _rand(seed, 2, 16, 16).abs() + 1.0
    a[0] *= 1e20  # program 0: finite after the scaling, the dot overflows
    a[1] *= 1e30  # program 1: the scaling overflows
    s = torch.tensor([1.0, 1e10])
    b = _rand(seed + 1, 16, 16).abs() * 1e20 + 1e20
    c = torch.empty(2, 16, 16)
    scaled_dot_kernel[(2,)](a, s, b, c, N=16)
    return c


@triton.jit
def running_min_kernel(x_ptr, acc_ptr, old_ptr, big_ptr, B: tl.constexpr):
    """A float atomic_min (Triton builds it from integer atomics and bitcasts) hands back the old value, inf at
    first: moved bits, not an Inf made here; the exp that overflows in another program is the only origin."""
    pid = tl.program_id(0)
    lane = tl.arange(0, B)
    x = tl.load(x_ptr + pid * B + lane)
    tl.store(big_ptr + pid * B + lane, tl.exp(x))
    old = tl.atomic_min(acc_ptr + lane % 4, x)
    tl.store(old_ptr + pid * B + lane, old)


def scenario_float_atomic_min_returns_inf(seed: int):
    x = _rand(seed, 4, 8)
    x[2, 3] = 100.0  # exp overflows in program 2
    acc = torch.full((4,), float("inf"))
    old = torch.empty(4, 8)
    big = torch.empty(4, 8)
    running_min_kernel[(4,)](x, acc, old, big, B=8)
    return [acc, old, big]
