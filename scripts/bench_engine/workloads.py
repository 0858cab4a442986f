"""The engine benchmark's workloads (scripts/bench_engine.py): `python workloads.py NAME... [--quick]` runs them,
times each one's launches with time.process_time() and prints one line `TDEBUG_BENCH {json}` per workload
(launch CPU and wall seconds, the largest error against a float64 reference, a digest of the outputs' bytes).

Run plain (TRITON_INTERPRET=1, no tdebug) it installs only the shims Triton's interpreter needs to run these
kernels at all, none of them on the per-op path: float arguments typed fp32 as compiled Triton types them
(tdebug's scalars.py: attention's sm_scale, rms_norm's eps), libdevice through numpy (tdebug's libdevice.py:
Liger's rsqrt) and, on Triton 3.6 only, range() over a scalar tensor under numpy >= 2.4. Under tdebug these
are part of tdebug's own patches and nothing is added. Autotuned kernels are launched through `.fn` with one
fixed config, so every mode runs the same single launch. Before the first timer every mode imports what Triton
imports lazily at a process's first launch (triton.experimental.gluon, from Triton 3.9's argument
specialisation: 0.12-0.18 s here, once per process whatever the engine), so a launch's time is the launch's:
the whole command's time still holds it.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from collections.abc import Callable

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)  # kernels/ and tdebug/ of this checkout


def plain_shims() -> list[str]:
    """The shims plain TRITON_INTERPRET=1 needs for these kernels (nothing when tdebug's patches are in)."""
    patches = sys.modules.get("tdebug.interpreter.patches")
    if patches is not None and patches.STATE.installed:
        return []
    from tdebug.interpreter.semantics import libdevice, scalars
    from tdebug.interpreter.versions import TRITON, patch

    scalars.install()
    libdevice.install()
    shims = ["scalars", "libdevice"]
    if TRITON < (3, 7):
        from triton.runtime import interpreter

        from tdebug.interpreter.patches import _squeeze_index

        patch(interpreter, "_patch_lang_tensor", _squeeze_index, layer="launch_record")
        shims.append("range_over_tensor")
    return shims


SHIMS = plain_shims()

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

QUICK = "--quick" in sys.argv
GEN = torch.Generator().manual_seed(1)


def randn(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.randn(*shape, generator=GEN).to(dtype)


PROFILE = os.environ.get("TDEBUG_BENCH_PROFILE")  # a file: cProfile statistics of the launches go there


class Timer:
    """CPU and wall seconds of the launches, summed over `with timer:` blocks (profiled with
    TDEBUG_BENCH_PROFILE=FILE)."""

    profiler = None

    def __init__(self) -> None:
        self.cpu = self.wall = 0.0

    def __enter__(self) -> Timer:
        if PROFILE and Timer.profiler is None:
            import cProfile

            Timer.profiler = cProfile.Profile()
        if Timer.profiler is not None:
            Timer.profiler.enable()
        self._cpu, self._wall = time.process_time(), time.perf_counter()
        return self

    def __exit__(self, *exc) -> None:
        self.cpu += time.process_time() - self._cpu
        self.wall += time.perf_counter() - self._wall
        if Timer.profiler is not None:
            Timer.profiler.disable()
            Timer.profiler.dump_stats(PROFILE)


def max_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    return (out.double() - ref.double()).abs().max().item()


def digest(*tensors: torch.Tensor) -> str:
    h = hashlib.sha256()
    for t in tensors:
        h.update(t.detach().contiguous().view(torch.uint8).numpy().tobytes())
    return h.hexdigest()[:16]


# --- workloads: each returns (timer, outputs, error, tolerance, programs, steps) ----------------------------------


def _matmul_inputs(dtype: torch.dtype):
    M = N = K = 64 if QUICK else 512
    return M, N, K, randn(M, K, dtype=dtype), randn(K, N, dtype=dtype)


def _matmul(dtype: torch.dtype):
    from kernels.matmul import matmul_kernel

    M, N, K, a, b = _matmul_inputs(dtype)
    BM = BN = BK = 32
    c = torch.empty(M, N, dtype=dtype)
    grid = (triton.cdiv(M, BM) * triton.cdiv(N, BN),)
    with Timer() as timer:
        matmul_kernel.fn[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                               c.stride(0), c.stride(1), INPUT_PRECISION="ieee" if dtype == torch.float32 else "tf32",
                               BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK, GROUP_M=8)
    ref = a.double() @ b.double()
    tol = 1e-3 if dtype == torch.float32 else 0.5
    return timer, [c], max_err(c, ref), tol, grid[0], triton.cdiv(K, BK)


def matmul():
    return _matmul(torch.float32)


def matmul_bf16():
    return _matmul(torch.bfloat16)


def _softmax_input() -> torch.Tensor:
    return randn(64, 100) if QUICK else randn(4096, 1000)


def softmax():
    from kernels.softmax import softmax as run

    x = _softmax_input()
    with Timer() as timer:
        y = run(x)
    return timer, [y], max_err(y, torch.softmax(x.double(), -1)), 1e-5, x.shape[0], 1


def _rms_inputs(dtype: torch.dtype):
    rows, cols = (64, 100) if QUICK else (4096, 1000)
    x, w, dy = randn(rows, cols, dtype=dtype), (randn(cols) * 0.1 + 1).to(dtype), randn(rows, cols, dtype=dtype)
    return x, w, dy


def _rms_reference(x, w, dy, eps):
    xd, wd = x.double().requires_grad_(), w.double().requires_grad_()
    y = xd * torch.rsqrt((xd * xd).mean(-1, keepdim=True) + eps) * wd
    y.backward(dy.double())
    return y.detach(), xd.grad, wd.grad


def _rms(dtype: torch.dtype, forward: bool, backward: bool):
    from liger_kernel.ops.rms_norm import rms_norm_backward, rms_norm_forward

    eps = 1e-6
    x, w, dy = _rms_inputs(dtype)
    y_ref, dx_ref, dw_ref = _rms_reference(x, w, dy, eps)
    timer = Timer()
    if forward:
        with timer:
            y, xv, rstd, block, warps, mode = rms_norm_forward(x, w, eps, 0.0, "llama", None)
    else:
        y, xv, rstd, block, warps, mode = rms_norm_forward(x, w, eps, 0.0, "llama", None)
    outs, errs = [y, rstd], [max_err(y, y_ref)]
    if backward:
        with timer:
            dx, dw = rms_norm_backward(dy.clone(), xv, w, rstd, 0.0, mode, block, warps, False, None)
        outs += [dx, dw]
        errs += [max_err(dx, dx_ref), max_err(dw, dw_ref) / max(1.0, dw_ref.abs().max().item())]
    tol = 1e-3 if dtype == torch.float32 else 0.25
    rows = x.shape[0]
    return timer, outs, max(errs), tol, rows if forward else 1, 1 if forward else rows


def rms_norm_fwd():
    return _rms(torch.float32, forward=True, backward=False)


def rms_norm_bwd():
    return _rms(torch.float32, forward=False, backward=True)


def rms_norm_bf16_fwd():
    return _rms(torch.bfloat16, forward=True, backward=False)


def rms_norm_bf16_bwd():
    return _rms(torch.bfloat16, forward=False, backward=True)


def _attention_inputs():
    B, H, S, D = (1, 2, 128, 16) if QUICK else (2, 4, 512, 64)
    return randn(B, H, S, D), randn(B, H, S, D), randn(B, H, S, D)


def attention_causal():
    from kernels.attention import attention

    q, k, v = _attention_inputs()
    B, H, S, D = q.shape
    with Timer() as timer:
        o = attention(q, k, v, causal=True)
    ref = torch.nn.functional.scaled_dot_product_attention(q.double(), k.double(), v.double(), is_causal=True)
    return timer, [o], max_err(o, ref), 1e-4, triton.cdiv(S, 64) * B * H, "1..S/32 (pid-dependent)"


def matmul_splitk():
    from kernels.matmul_splitk import matmul_splitk as run

    M, N, K, a, b = _matmul_inputs(torch.float32)
    with Timer() as timer:
        c = run(a, b, SPLIT_K=4, BLOCK_M=32, BLOCK_N=32, BLOCK_K=32)
    programs = triton.cdiv(M, 32) * triton.cdiv(N, 32) * 4
    return timer, [c], max_err(c, a.double() @ b.double()), 1e-3, programs, triton.cdiv(K // 4, 32)


@triton.jit
def _column_sums_locked(x_ptr, partial_ptr, lock_ptr, count_ptr, n_cols, stride_x,
                        GROUP: tl.constexpr, BLOCK_N: tl.constexpr):
    """Each row adds itself into its group's partial sum under the group's spin lock (as the layer-norm
    tutorial's backward accumulates dW): atomic_cas acquires, atomic_xchg releases."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0)
    group = row % GROUP
    lock = lock_ptr + group
    count = count_ptr + group
    partial = partial_ptr + group * n_cols + cols
    while tl.atomic_cas(lock, 0, 1) == 1:
        pass
    if tl.load(count) == 0:
        tl.atomic_xchg(count, 1)
    else:
        x += tl.load(partial, mask=mask)
    tl.store(partial, x, mask=mask)
    tl.debug_barrier()
    tl.atomic_xchg(lock, 0)


def _spin_lock_input():
    rows, cols, group = (64, 100, 8) if QUICK else (2048, 1000, 64)
    return randn(rows, cols), group


def spin_lock():
    x, group = _spin_lock_input()
    rows, cols = x.shape
    partial = torch.empty(group, cols)
    locks = torch.zeros(group, dtype=torch.int32)
    counts = torch.zeros(group, dtype=torch.int32)
    with Timer() as timer:
        _column_sums_locked[(rows,)](x, partial, locks, counts, cols, x.stride(0), GROUP=group,
                                     BLOCK_N=triton.next_power_of_2(cols))
    ref = x.double().view(rows // group, group, cols).sum(0)
    return timer, [partial, locks, counts], max_err(partial, ref), 1e-3, rows, 1


def _small_launches_inputs():
    launches, n = (10, 4000) if QUICK else (200, 4000)
    return launches, randn(n), randn(n)


def small_launches():
    """A test suite's shape: many launches of a few programs each (200 vector adds of 4 programs, a fresh
    torch.empty output each, as kernels' wrappers make them): the cost per launch, not per program."""
    from kernels.add import add

    launches, x, y = _small_launches_inputs()
    n = x.numel()
    outs = []
    with Timer() as timer:
        for _ in range(launches):
            outs.append(add(x, y, BLOCK_SIZE=1024))
    ref = x.double() + y.double()
    return timer, outs[-1:], max(max_err(o, ref) for o in outs), 1e-6, triton.cdiv(n, 1024), f"1 ({launches} launches)"


@triton.jit
def _scaled_rows(x_ptr, y_ptr, n_cols, stride_x, stride_y, scale, BLOCK: tl.constexpr):
    """y = scale * x, a row per program, the row in BLOCK-wide steps with a masked tail."""
    row = tl.program_id(0).to(tl.int64)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0)
        tl.store(y_ptr + row * stride_y + cols, x * scale, mask=mask)


def _row_stream_input() -> torch.Tensor:
    rows, cols = (16, 3000) if QUICK else (512, 32000)
    return randn(rows, cols)


def row_stream():
    """A large element-wise pass in the style of Liger-Kernel's losses over a vocabulary (a row per program, a
    wide row in 8192-wide steps, a masked tail, a fresh torch.empty output): the cost per element of a batched
    load and store with every check, not per op."""
    x = _row_stream_input()
    rows, cols = x.shape
    y = torch.empty_like(x)
    with Timer() as timer:
        _scaled_rows[(rows,)](x, y, cols, x.stride(0), y.stride(0), -0.5, BLOCK=8192)
    return timer, [y], max_err(y, x.double() * -0.5), 0.0, rows, triton.cdiv(cols, 8192)


def row_stream_repeated():
    """row_stream's kernel launched four times, a fresh torch.empty output each time (a loop over batches, a test
    calling the op again): what the checks keep from one launch to the next shows as the later launches' cost."""
    x = _row_stream_input()
    rows, cols = x.shape
    with Timer() as timer:
        for _ in range(4):  # the caller keeps the latest output only
            y = torch.empty_like(x)
            _scaled_rows[(rows,)](x, y, cols, x.stride(0), y.stride(0), -0.5, BLOCK=8192)
    return timer, [y], max_err(y, x.double() * -0.5), 0.0, rows, f"{triton.cdiv(cols, 8192)} (4 launches)"


@triton.jit
def _masked_row_loss(x_ptr, y_ptr, labels_ptr, loss_ptr, n_cols, stride, ignore_index, BLOCK: tl.constexpr):
    """A per-row loss with an ignored label, in the style of Liger-Kernel's losses: an ignored row's gradient is
    zeroed and the program returns early; the others store x - y and the row's sum of |x - y|."""
    row = tl.program_id(0).to(tl.int64)
    label = tl.load(labels_ptr + row)
    if label == ignore_index:
        for start in range(0, n_cols, BLOCK):
            cols = start + tl.arange(0, BLOCK)
            tl.store(x_ptr + row * stride + cols, tl.zeros([BLOCK], tl.float32), mask=cols < n_cols)
        tl.store(loss_ptr + row, 0.0)
        return
    total = 0.0
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0)
        y = tl.load(y_ptr + row * stride + cols, mask=mask, other=0.0)
        tl.store(x_ptr + row * stride + cols, x - y, mask=mask)
        total += tl.sum(tl.abs(x - y))
    tl.store(loss_ptr + row, total)


def _divergent_rows_inputs():
    rows, cols = (64, 300) if QUICK else (4096, 1024)
    x, y = randn(rows, cols), randn(rows, cols)
    labels = torch.randint(0, 4, (rows,), generator=GEN)  # a quarter of the rows ignored (label 0), scattered
    return x, y, labels


def _divergent_rows_reference(x, y, labels):
    keep = (labels != 0)[:, None]
    diff = torch.where(keep, x.double() - y.double(), 0.0)
    return diff, diff.abs().sum(1)


def divergent_rows():
    """A launch whose programs take an early `return` or not by a loaded label, scattered over the grid (Liger's
    tvd and cross entropy with ignore_index): how the engine runs programs that diverge."""
    x, y, labels = _divergent_rows_inputs()
    rows, cols = x.shape
    ref_grad, ref_loss = _divergent_rows_reference(x, y, labels)
    loss = torch.empty(rows)
    with Timer() as timer:
        _masked_row_loss[(rows,)](x, y, labels, loss, cols, x.stride(0), 0, BLOCK=512)
    err = max(max_err(x, ref_grad), max_err(loss, ref_loss) / cols)
    return timer, [x, loss], err, 1e-5, rows, triton.cdiv(cols, 512)


@triton.jit
def _chunk_states(k_ptr, v_ptr, out_ptr, cu_seqlens, H: tl.constexpr, K: tl.constexpr, V: tl.constexpr,
                  BT: tl.constexpr):
    """A decayed K^T V state over a varlen batch in chunks of BT steps, in the style of linear-attention
    libraries: program (head, sequence) walks its own sequence (bos..eos from cu_seqlens), so the trip count is
    the sequence's."""
    i_h, i_n = tl.program_id(0), tl.program_id(1)
    bos = tl.load(cu_seqlens + i_n).to(tl.int64)
    eos = tl.load(cu_seqlens + i_n + 1).to(tl.int64)
    T = eos - bos
    rk, rv, rt = tl.arange(0, K), tl.arange(0, V), tl.arange(0, BT)
    h = tl.zeros([K, V], dtype=tl.float32)
    for i_t in range(0, tl.cdiv(T, BT)):
        t = i_t * BT + rt
        m = t < T
        k = tl.load(k_ptr + ((bos + t) * H + i_h)[:, None] * K + rk[None, :], mask=m[:, None], other=0.0)
        v = tl.load(v_ptr + ((bos + t) * H + i_h)[:, None] * V + rv[None, :], mask=m[:, None], other=0.0)
        h = h * 0.99 + tl.dot(tl.trans(k), v, input_precision="ieee")
    tl.store(out_ptr + (i_n * H + i_h) * K * V + rk[:, None] * V + rv[None, :], h)


def _varlen_inputs():
    H, K, V, BT = (2, 16, 16, 32) if QUICK else (4, 32, 32, 64)
    lengths = torch.tensor([128] + [32] * 3 if QUICK else [2048] + [128] * 15, dtype=torch.int64)
    cu = torch.cat([torch.zeros(1, dtype=torch.int64), lengths.cumsum(0)])
    k, v = randn(int(cu[-1]), H, K), randn(int(cu[-1]), H, V)
    return H, K, V, BT, lengths, cu, k, v


def _varlen_reference(H, K, V, BT, lengths, cu, k, v) -> torch.Tensor:
    ref = torch.empty(len(lengths), H, K, V, dtype=torch.float64)
    for n in range(len(lengths)):
        for h in range(H):
            state = torch.zeros(K, V, dtype=torch.float64)
            for c in range(int(cu[n]), int(cu[n + 1]), BT):
                end = min(c + BT, int(cu[n + 1]))
                state = state * 0.99 + k[c:end, h].double().T @ v[c:end, h].double()
            ref[n, h] = state
    return ref


def varlen_chunks():
    """_chunk_states over a skewed varlen batch: one long sequence among short ones (2048 and 15 x 128 steps, 4
    heads: 64 programs, 32 chunks against 2), so most of the long loop runs with few programs left in it."""
    H, K, V, BT, lengths, cu, k, v = _varlen_inputs()
    out = torch.empty(len(lengths), H, K, V)
    with Timer() as timer:
        _chunk_states[(H, len(lengths))](k, v, out, cu, H=H, K=K, V=V, BT=BT)
    ref = _varlen_reference(H, K, V, BT, lengths, cu, k, v)
    chunks = triton.cdiv(lengths, BT)
    return timer, [out], max_err(out, ref), 1e-3, H * len(lengths), f"{int(chunks.min())}..{int(chunks.max())}"


# --- the floor: each workload's computation in torch on the same CPU (`--torch`) ---------------------------------
# What the same arithmetic costs when numpy/torch run it on whole tensors, one thread, in the workload's dtype: the
# anchor for an engine whose work is numpy on whole tiles. Same inputs (same generator, same order), the same
# float64 reference and tolerance as the workload; a floor returns what a workload returns, its timer holding the
# mean of one run over enough repeats to measure (a run is microseconds for some).

FLOOR_SECONDS = 0.02 if QUICK else 0.3  # CPU seconds of repeats per floor


def floor_time(fn: Callable) -> tuple[Timer, object]:
    """fn()'s CPU and wall seconds per run: one untimed run (lazy initialisations, caches), then batches of 1, 4,
    16, ... runs until one batch takes FLOOR_SECONDS; the Timer holds that batch's mean, `reps` its size."""
    out = fn()
    reps = 1
    while True:
        timer = Timer()
        with timer:
            for _ in range(reps):
                fn()
        if timer.cpu >= FLOOR_SECONDS or reps >= 1 << 20:
            break
        reps *= 4
    timer.cpu, timer.wall, timer.reps = timer.cpu / reps, timer.wall / reps, reps
    return timer, out


def _matmul_floor(dtype: torch.dtype):
    M, N, K, a, b = _matmul_inputs(dtype)
    timer, c = floor_time(lambda: a @ b)
    return timer, [c], max_err(c, a.double() @ b.double()), 1e-3 if dtype == torch.float32 else 0.5, 1, 1


def _softmax_floor():
    x = _softmax_input()
    timer, y = floor_time(lambda: torch.softmax(x, -1))
    return timer, [y], max_err(y, torch.softmax(x.double(), -1)), 1e-5, 1, 1


def _rms_floor(dtype: torch.dtype, forward: bool):
    """Llama's RMSNorm as torch runs it (fp32 statistics, the normalised row cast back before the weight), and its
    backward from the saved rstd, as Liger's kernels compute them."""
    eps = 1e-6
    x, w, dy = _rms_inputs(dtype)
    y_ref, dx_ref, dw_ref = _rms_reference(x, w, dy, eps)
    tol = 1e-3 if dtype == torch.float32 else 0.25

    def fwd():
        xf = x.float()
        rstd = torch.rsqrt(xf.pow(2).mean(-1) + eps)
        return w * (xf * rstd[:, None]).to(dtype), rstd

    if forward:
        timer, (y, rstd) = floor_time(fwd)
        return timer, [y, rstd], max_err(y, y_ref), tol, 1, 1
    _, rstd = fwd()

    def bwd():
        xhat = x.float() * rstd[:, None]
        g = dy.float() * w.float()
        dx = rstd[:, None] * (g - xhat * (g * xhat).mean(-1, keepdim=True))
        return dx.to(dtype), (dy.float() * xhat).sum(0).to(w.dtype)

    timer, (dx, dw) = floor_time(bwd)
    err = max(max_err(dx, dx_ref), max_err(dw, dw_ref) / max(1.0, dw_ref.abs().max().item()))
    return timer, [dx, dw], err, tol, 1, 1


def _attention_floor():
    q, k, v = _attention_inputs()
    timer, o = floor_time(lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True))
    ref = torch.nn.functional.scaled_dot_product_attention(q.double(), k.double(), v.double(), is_causal=True)
    return timer, [o], max_err(o, ref), 1e-4, 1, 1


def _spin_lock_floor():
    x, group = _spin_lock_input()
    rows, cols = x.shape
    timer, partial = floor_time(lambda: x.view(rows // group, group, cols).sum(0))
    return timer, [partial], max_err(partial, x.double().view(rows // group, group, cols).sum(0)), 1e-3, 1, 1


def _small_launches_floor():
    launches, x, y = _small_launches_inputs()
    timer, outs = floor_time(lambda: [x + y for _ in range(launches)])
    return timer, outs[-1:], max_err(outs[-1], x.double() + y.double()), 1e-6, 1, launches


def _row_stream_floor(times: int):
    x = _row_stream_input()
    timer, ys = floor_time(lambda: [x * -0.5 for _ in range(times)])
    return timer, ys[-1:], max_err(ys[-1], x.double() * -0.5), 0.0, 1, times


def _divergent_rows_floor():
    x, y, labels = _divergent_rows_inputs()
    keep = (labels != 0)[:, None]

    def rows():
        diff = torch.where(keep, x - y, 0.0)
        return diff, diff.abs().sum(1)

    timer, (grad, loss) = floor_time(rows)
    ref_grad, ref_loss = _divergent_rows_reference(x, y, labels)
    return timer, [grad, loss], max(max_err(grad, ref_grad), max_err(loss, ref_loss) / x.shape[1]), 1e-5, 1, 1


def _varlen_floor():
    """The decayed state in closed form: after C chunks, chunk c's k^T v carries 0.99^(C-1-c), so each sequence's
    state is one k^T v over its steps with k's rows weighted by their chunk's decay (the kernel's multiply-adds,
    as one batched matmul over the heads per sequence)."""
    H, K, V, BT, lengths, cu, k, v = _varlen_inputs()

    def states():
        out = torch.empty(len(lengths), H, K, V)
        for n in range(len(lengths)):
            bos, eos = int(cu[n]), int(cu[n + 1])
            chunk = torch.arange(eos - bos) // BT
            decay = torch.pow(0.99, (chunk[-1] - chunk).to(torch.float32))
            out[n] = torch.einsum("thk,thv->hkv", k[bos:eos] * decay[:, None, None], v[bos:eos])
        return out

    timer, out = floor_time(states)
    return timer, [out], max_err(out, _varlen_reference(H, K, V, BT, lengths, cu, k, v)), 1e-3, 1, 1


FLOORS: dict[str, Callable] = {
    "matmul": lambda: _matmul_floor(torch.float32), "matmul_bf16": lambda: _matmul_floor(torch.bfloat16),
    "matmul_splitk": lambda: _matmul_floor(torch.float32),
    "softmax": _softmax_floor,
    "rms_norm_fwd": lambda: _rms_floor(torch.float32, True), "rms_norm_bwd": lambda: _rms_floor(torch.float32, False),
    "rms_norm_bf16_fwd": lambda: _rms_floor(torch.bfloat16, True),
    "rms_norm_bf16_bwd": lambda: _rms_floor(torch.bfloat16, False),
    "attention_causal": _attention_floor, "spin_lock": _spin_lock_floor, "small_launches": _small_launches_floor,
    "row_stream": lambda: _row_stream_floor(1), "row_stream_repeated": lambda: _row_stream_floor(4),
    "varlen_chunks": _varlen_floor, "divergent_rows": _divergent_rows_floor,
}


def first_launch_imports() -> None:
    """What Triton imports at a process's first launch, imported now (outside every timer, in every mode)."""
    import importlib.util

    if importlib.util.find_spec("triton.experimental.gluon") is not None:
        import triton.experimental.gluon  # noqa: F401


WORKLOADS: dict[str, Callable] = {f.__name__: f for f in (
    matmul, softmax, rms_norm_fwd, rms_norm_bwd, attention_causal, matmul_splitk, spin_lock, matmul_bf16,
    rms_norm_bf16_fwd, rms_norm_bf16_bwd, small_launches, row_stream, row_stream_repeated, varlen_chunks,
    divergent_rows)}


def main() -> int:
    names = [a for a in sys.argv[1:] if not a.startswith("--")]
    if not names or any(name not in WORKLOADS for name in names):
        print(f"usage: workloads.py NAME... [--quick] [--torch]; NAME one of {', '.join(WORKLOADS)}",
              file=sys.stderr)
        return 2
    patches = sys.modules.get("tdebug.interpreter.patches")
    floor = "--torch" in sys.argv  # each workload's computation in torch, one thread: the floor
    if floor:
        torch.set_num_threads(1)
    first_launch_imports()
    for name in names:
        GEN.manual_seed(1)  # the same inputs whether a workload runs alone or after others (--quick)
        timer, outs, err, tol, programs, steps = (FLOORS if floor else WORKLOADS)[name]()
        record = {"workload": name, "launch_cpu": round(timer.cpu, 4), "launch_wall": round(timer.wall, 4),
                  "err": err, "ok": bool(err <= tol), "digest": digest(*outs), "programs": programs,
                  "steps": steps, "quick": QUICK, "triton": triton.__version__, "shims": SHIMS,
                  "tdebug": bool(patches is not None and patches.STATE.installed),
                  "tdebug_at": os.path.dirname(os.path.dirname(sys.modules["tdebug"].__file__))
                  if "tdebug" in sys.modules else None}
        if floor:
            record.update({"launch_cpu": float(f"{timer.cpu:.4g}"), "launch_wall": float(f"{timer.wall:.4g}"),
                           "floor": True, "floor_reps": timer.reps, "threads": torch.get_num_threads()})
        print("TDEBUG_BENCH " + json.dumps(record), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
