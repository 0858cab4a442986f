"""Minimal kernels on which the engine fuzzer (kernel_fuzz.py) found the batched engine and the serial one
disagreeing, one `scenario_*` per class of disagreement, each written down from the fuzzer's shrunk kernel. Each
makes fresh inputs from `seed`, launches, and returns what it computed (in-place inputs included);
engine_diff.py --scenarios runs each under both engines and compares outputs bit for bit, findings, error and
store records."""

from __future__ import annotations

import torch
import triton
import triton.language as tl


def _rand(seed: int, *shape, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g).to(dtype)


def _fill(g, kind, dtype, size):
    """kernel_fuzz.py's inputs: normal values, or huge ones (x 1e5 below fp32)."""
    x = torch.randn(size, generator=g, dtype=torch.float64)
    if kind == "big":
        x = x * 1e5 if dtype != torch.float32 else x * 1e37
    return x.to(dtype)


@triton.jit
def ticket_after_if_kernel(acc_ptr, out_ptr):
    """An `if` on pid whose body does nothing, then one ticket per program: the batch splits at the `if`."""
    pid = tl.program_id(0)
    if pid % 2 == 0:
        pass
    t = tl.atomic_add(acc_ptr, 1)
    tl.store(out_ptr + pid, t)


def scenario_ticket_after_if(seed: int):
    """Serial [0, 1, 2]; batched [0, 2, 1] (the group of even programs first). Issue 46, cause 3."""
    acc = torch.zeros(1, dtype=torch.int32)
    out = torch.empty(3, dtype=torch.int32)
    ticket_after_if_kernel[(3,)](acc, out)
    return acc, out


@triton.jit
def atomic_in_ragged_loop_kernel(x_ptr, acc_ptr, B: tl.constexpr):
    """Float atomic_add in a loop whose start differs per program (a predicated loop): the order of the adds."""
    pid = tl.program_id(0)
    lane = tl.arange(0, B)
    v = tl.load(x_ptr + pid * B + lane)
    for _ in range(pid % 3, 3):
        tl.atomic_add(acc_ptr + lane % 4, v)


def scenario_atomic_in_ragged_loop(seed: int):
    """The accumulator's last bits differ: the adds of different programs applied in another order than the
    serial engine's (program by program). Issue 46, cause 3 (the same order, reached through a predicated loop)."""
    x = _rand(seed, 7 * 4)
    acc = torch.zeros(4)
    atomic_in_ragged_loop_kernel[(7,)](x, acc, B=4)
    return acc


@triton.jit
def atomic_of_reverse_scan_kernel(x_ptr, acc_ptr, B: tl.constexpr):
    lane = tl.arange(0, B)
    v = tl.load(x_ptr + lane)
    c = tl.cumsum(v, axis=0, reverse=True)
    tl.atomic_add(acc_ptr + lane % 4, c)


def scenario_atomic_of_reverse_scan(seed: int):
    """One program: an atomic_add of a reverse scan's values. Both engines read garbage (the values are a
    negative-stride numpy view, np.flip in Triton's ScanOps, and Triton's interpreter hands its data pointer to
    the C++ atomic_rmw as if contiguous): the accumulator differs from run to run. NEW."""
    x = _rand(seed, 8)
    acc = torch.zeros(4)
    atomic_of_reverse_scan_kernel[(1,)](x, acc, B=8)
    return acc


@triton.jit
def split_then_race_kernel(x_ptr, y_ptr, out_ptr, n, B: tl.constexpr):
    """Odd programs read y[pid]; even programs store over y's block (a race). Serial: Triton's grid loop, axis 0
    outermost, so program (0, 3) (pid 9) reads y[9] before program (2, 0) (pid 2) stores it; batched: the batch
    splits at the `if` and one group runs whole before the other."""
    pid = tl.program_id(0) + tl.program_id(1) * 3
    lane = tl.arange(0, B)
    offs = pid * B + lane
    v = tl.load(x_ptr + offs, mask=lane % 2 == 0, other=-float("inf")).to(tl.float16)
    if pid % 2 == 1:
        v = (v + tl.load(y_ptr + pid)).to(tl.float16)
    else:
        tl.store(y_ptr + offs, v.to(tl.int32), mask=offs < n)
    tl.store(out_ptr + offs, v, mask=offs < n)


def scenario_split_then_race(seed: int):
    """Outputs differ (a read sees, or not, a store by another program), and so do the race and NaN findings.
    NEW (the split order of cause 3, for plain loads and stores)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(48, generator=g).to(torch.float16)
    y = torch.randint(-8, 9, (48,), generator=g, dtype=torch.int32)
    out = torch.empty(48, dtype=torch.float16)
    split_then_race_kernel[(3, 4)](x, y, out, 48, B=4)
    return x, y, out


@triton.jit
def split_after_reads_kernel(x_ptr, B: tl.constexpr):
    """Each program reads its block and one element of the next block, then even programs store their block."""
    pid = tl.program_id(0)
    offs = pid * B + tl.arange(0, B)
    v = tl.load(x_ptr + offs)
    w = tl.load(x_ptr + offs + 1, mask=offs + 1 < 24)
    if pid % 2 == 0:
        tl.store(x_ptr + offs, v + w)


def scenario_split_after_reads(seed: int):
    """x half uninitialised. Serial: program 2's store after program 1's read of x[16] is the race ("stores to
    ... that another program reads"), and program 1's read of x[16] is uninitialised; batched: the race is
    program 1's load ("load of ... that another program stores to") and that read is not counted uninitialised
    (12 vs 11 lanes). NEW (split order, race and uninit findings)."""
    x = torch.empty(24)
    x[:12] = _rand(seed, 12)
    split_after_reads_kernel[(3,)](x, B=8)
    return x


@triton.jit
def fp16_overflow_in_ragged_loop_kernel(x0_ptr, x1_ptr, ov1_ptr, n, B: tl.constexpr):
    """The fuzzer's kernel as it shrank it: an fp16 accumulator in a loop whose start differs per program
    (the batch splits by trip count); fp16 + bf16 is computed in fp32 and cast back to fp16, where it overflows."""
    pid = tl.program_id(0) + tl.program_id(1) * 5
    lane = tl.arange(0, B)
    offs = pid * B + lane
    v1 = (tl.load(x0_ptr + offs)).to(tl.float16)
    for i in range(pid % 3, 3):
        v1 = (v1 + tl.load(x1_ptr + offs + i, mask=offs + i < n, other=0)).to(tl.float16)
    tl.store(ov1_ptr + offs, v1, mask=offs < n)


def scenario_fp16_overflow_in_ragged_loop(seed: int):
    """The fuzzer's inputs (seed 0: most other seeds agree). The NaN finding of line `v1 = ...` (one finding per
    origin line, store and tensor): serial "Inf first produced here, by a conversion in float16", batched "by an
    addition in float16", the same lanes listed ("fp_trunc(86528) = inf"): the message is the first origin
    recorded on that line, and the engines record programs in another order. Issue 46, cause 6 (order), through
    NanTracker.findings' merge of the origins of one line (tdebug/sanitize/nan.py)."""
    g = torch.Generator().manual_seed(0)
    x0 = _fill(g, "randn", torch.float16, 40)
    x1 = _fill(g, "big", torch.bfloat16, 40)
    ov1 = torch.empty(40, dtype=torch.float16)
    fp16_overflow_in_ragged_loop_kernel[(5, 1)](x0, x1, ov1, 40, B=8)
    return [x0, x1, ov1]


@triton.jit
def log_then_sum_kernel(x_ptr, out_ptr, B: tl.constexpr):
    pid = tl.program_id(0)
    v = tl.log(tl.load(x_ptr + pid * B + tl.arange(0, B)))
    tl.store(out_ptr + pid, tl.sum(v, axis=0))


def scenario_log_then_sum(seed: int):
    """Both programs take log of negatives, each summed: the NaN findings differ. Issue 46, cause 2."""
    x = _rand(seed, 16)
    out = torch.empty(2)
    log_then_sum_kernel[(2,)](x, out, B=8)
    return out


@triton.jit
def uninit_in_ragged_loop_kernel(x_ptr, B: tl.constexpr):
    """Program p reads p % 4 + 1 overlapping windows; the upper half of x was never written. The serial engine
    meets program 3's windows one after the other, the batched one iteration by iteration, every program's
    window at once (program 4's reaches element 16 before program 3's second window does)."""
    pid = tl.program_id(0)
    offs = pid * B + tl.arange(0, B)
    v = tl.load(x_ptr + offs, mask=offs < 28)
    for i in range(0, pid % 4 + 1):
        v += tl.load(x_ptr + offs + i, mask=offs + i < 28, other=0)


def scenario_uninit_in_ragged_loop(seed: int):
    """Same count and programs, other example elements: [14, 15, 16, 17] serial, [14, 15, 18, 16] batched."""
    x = torch.empty(28)
    x[:14] = _rand(seed, 14)
    uninit_in_ragged_loop_kernel[(7,)](x, B=4)
    return x


@triton.jit
def fma_overflow_kernel(x_ptr, out_ptr, B: tl.constexpr):
    """tl.fma of two huge finite values overflows to Inf; a later line's addition overflows too, unstored."""
    pid = tl.program_id(0)
    offs = pid * B + tl.arange(0, B)
    v = tl.load(x_ptr + offs)
    f = tl.fma(v, v, 1.0)
    w = v + v  # noqa: F841 - an Inf nobody stores: no finding, but it made the serial engine look at later ops
    tl.store(out_ptr + offs, f)


def scenario_fma_overflow(seed: int):
    """The fused rounding hid numpy's overflow flag: the serial engine named program 1's fma only (program 0's
    unstored `v + v` had switched the check on), the batched one no origin at all (every fma ran first)."""
    x = _rand(seed, 16)
    x[1], x[9] = 3e38, -3e38
    out = torch.empty(16)
    fma_overflow_kernel[(2,)](x, out, B=8)
    return out


@triton.jit
def scalar_bound_in_loop_kernel(x_ptr, trips_ptr, acc_ptr, out_ptr, B: tl.constexpr):
    """A ticket taken inside a loop whose trip count is loaded: program 1 makes no iteration, so it never binds
    `t`; the store after the loop records each program's integer locals (who stored what)."""
    pid = tl.program_id(0)
    offs = pid * B + tl.arange(0, B)
    v = tl.load(x_ptr + offs)
    for i in range(0, tl.load(trips_ptr + pid)):  # noqa: B007 - i is an integer local the records name
        t = tl.atomic_add(acc_ptr, 1)  # noqa: F841 - bound for the store records, read by no one
    tl.store(out_ptr + offs, v)


def scenario_scalar_bound_in_loop(seed: int):
    """The batched engine's records named `t` for program 1 too (bound for every program of the batch)."""
    x = _rand(seed, 24)
    trips = torch.tensor([1, 0, 1], dtype=torch.int32)  # one ticket at most per program: the batch keeps it
    acc = torch.zeros(1, dtype=torch.int32)
    out = torch.empty(24)
    scalar_bound_in_loop_kernel[(3,)](x, trips, acc, out, B=8)
    return acc, out


@triton.jit
def exp2_of_reverse_scan_kernel(x_ptr, out_ptr, t_ptr, B: tl.constexpr):
    """exp2 / log2 of a reversed scan (numpy: a flipped view) and of a transposed tile (a strided view)."""
    pid = tl.program_id(0)
    offs = pid * B + tl.arange(0, B)
    v = tl.cumsum(tl.load(x_ptr + offs), axis=0, reverse=True)
    tl.store(out_ptr + offs, tl.exp2(v) + tl.log2(tl.abs(v) + 1.0))
    r = tl.arange(0, 4)
    tile = tl.load(x_ptr + pid * 16 + r[:, None] * 4 + r[None, :])
    tl.store(t_ptr + pid * 16 + r[:, None] * 4 + r[None, :], tl.exp2(tl.trans(tile)))


def scenario_exp2_of_reverse_scan(seed: int):
    """Serial and batched differed in the last bit: numpy's exp2 rounds a strided operand (scalar loop) and a
    contiguous one (SIMD loop) differently, and the two engines' arrays lie differently."""
    x = _rand(seed, 64) * 3
    out, t = torch.empty(64), torch.empty(64)
    exp2_of_reverse_scan_kernel[(4,)](x, out, t, B=16)
    return out, t


@triton.jit
def bf16_scalar_local_kernel(x_ptr, out_ptr, B: tl.constexpr):
    """A bf16 scalar local (a product reduction of values with NaN/Inf), then a store: the store records name each
    program's integer locals, and a bf16 value (held as uint16 bits) is none of them."""
    pid = tl.program_id(0)
    offs = pid * B + tl.arange(0, B)
    v = tl.load(x_ptr + offs)
    s = tl.reduce(v, 0, _mul_combine)  # noqa: F841 - a local the records must not read
    tl.store(out_ptr + offs, v)


@triton.jit
def _mul_combine(a, b):
    return a * b


def scenario_bf16_scalar_local(seed: int):
    """Serial and batched recorded the product's NaN bits differently (which NaN numpy keeps depends on its loop)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(640, generator=g, dtype=torch.float64)
    picks = torch.randint(0, 640, (80,), generator=g)
    specials = torch.tensor([float("nan"), float("inf"), -float("inf"), 3e38, -1e-40, 7e4, 0.0], dtype=torch.float64)
    x[picks] = specials[torch.randint(0, 7, (80,), generator=g)]
    x = x.to(torch.bfloat16)
    out = torch.empty(640, dtype=torch.bfloat16)
    bf16_scalar_local_kernel[(20,)](x, out, B=32)
    return out


@triton.jit
def counter_beside_bf16_kernel(x0_ptr, ov2_ptr, n, B: tl.constexpr):
    """A loop whose start differs per program (split-K's form) adding its counter to a bf16 tensor: the serial
    engine's counter was a Python int (bf16 arithmetic), the predicated loop's an int32 tensor (fp32, as compiled);
    now an int32 tensor on both (loop_counters)."""
    pid = tl.program_id(0)
    lane = tl.arange(0, B)
    offs = pid * B + lane
    v1 = (tl.load(x0_ptr + offs)).to(tl.bfloat16)
    v2 = (tl.exp(v1.to(tl.float32))).to(tl.float32)
    for i in range(pid % 3 * 2, pid % 3 * 2 + 2):
        v2 += ((v1 + v1) + i).to(tl.float32)
    tl.store(ov2_ptr + offs, v2, mask=offs < n)


def scenario_counter_beside_bf16(seed: int):
    g = torch.Generator().manual_seed(seed)
    x0 = _fill(g, "randn", torch.bfloat16, 16)
    ov2 = torch.empty(16, dtype=torch.float32)
    counter_beside_bf16_kernel[(2,)](x0, ov2, 16, B=8)
    return [x0, ov2]



@triton.jit
def shared_inf_kernel(ov_ptr, n, B: tl.constexpr):
    """An Inf made from a value every program shares (log of tl.zeros): the batched engine computes it once for the
    batch, the serial engine once per program; the finding names every program that made it on both (nan.py)."""
    pid = tl.program_id(0)
    offs = pid * B + tl.arange(0, B)
    acc = tl.zeros((B,), dtype=tl.float32)
    tl.store(ov_ptr + offs, tl.log(acc), mask=offs < n)


def scenario_shared_inf(seed: int):
    ov = torch.empty(24, dtype=torch.float32)
    shared_inf_kernel[(3,)](ov, 24, B=8)
    return [ov]


def _special(g, dtype, size):
    """kernel_fuzz.py's "special" inputs: normal values with NaN/Inf/huge/tiny lanes (floats), with the type's
    extremes in a quarter of the lanes (integers)."""
    if dtype.is_floating_point:
        x = torch.randn(size, generator=g, dtype=torch.float64)
        picks = torch.randint(0, size, (max(1, size // 8),), generator=g)
        specials = torch.tensor([float("nan"), float("inf"), -float("inf"), 3e38, -1e-40, 7e4, 0.0])
        x[picks] = specials[torch.randint(0, len(specials), (len(picks),), generator=g)].double()
        return x.to(dtype)
    wide = torch.randint(-8, 9, (size,), generator=g, dtype=torch.int64)
    info = torch.iinfo(dtype)
    picks = torch.randint(0, size, (max(1, size // 4),), generator=g)
    wide[picks] = torch.tensor([info.max, info.min, info.max - 1])[torch.randint(0, 3, (len(picks),), generator=g)]
    return wide.to(dtype)


@triton.jit
def int_to_half_in_loop_kernel(x0_ptr, x1_ptr, ov_ptr, n, B: tl.constexpr):
    """int32 extremes converted to fp16 make Infs in both iterations of a loop, in several programs, with the same
    example text ("lane 3: finite inputs = inf") made by one program's second iteration and another's first: the
    batched engine stores every program's at once, iteration by iteration, the serial engine program by program.
    The examples kept must not depend on which came first (nan._first_distinct)."""
    pid = tl.program_id(0)
    offs = pid * B + tl.arange(0, B)
    v = (tl.load(x0_ptr + offs, mask=offs < n)).to(tl.float16)
    for i in range(0, 2):
        v = (v + tl.load(x1_ptr + offs + i, mask=offs + i < n, other=0)).to(tl.float16)
    tl.store(ov_ptr + offs, v, mask=offs < n)


def scenario_int_to_half_in_loop(seed: int):
    g = torch.Generator().manual_seed(0)  # the fuzzer's inputs (seed 37): these extremes make the shared text
    x0, x1 = _special(g, torch.float16, 64), _special(g, torch.int32, 64)
    ov = torch.empty(64, dtype=torch.float16)
    int_to_half_in_loop_kernel[(8,)](x0, x1, ov, 64, B=8)
    return [x0, x1, ov]
