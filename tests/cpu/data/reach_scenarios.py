"""Kernels in the style of real code the sanitizer meets (written for tdebug's tests, not copied):
unsloth-style builtin aliases, attention-style block pointers on a ragged length, a tutorial-style
grouped GEMM over a table of pointers, a layer-norm-backward-style spin-locked accumulation, and a
kernel carrying its own @triton_viz.trace. Run as `python reach_scenarios.py NAME` under the sanitizer.
"""

import sys

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

# --- builtins through module-level aliases (unsloth writes `triton_cast = tl.cast`) ---------------------
triton_cast = tl.cast
triton_exp = tl.exp
triton_tanh = libdevice.tanh


def tf32(x: torch.Tensor) -> torch.Tensor:
    """fp32 values as an fp32 tl.dot reads them at TF32 input precision (Triton's default): 13 low mantissa bits
    dropped. The references multiply these in float64, so the checks stay at fp32 tolerances."""
    return (x.float().contiguous().view(torch.int32) & -0x2000).view(torch.float32)


@triton.jit
def softplus_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = triton_cast(tl.load(x_ptr + offs, mask=mask, other=0.0), tl.float32)
    y = tl.log(1.0 + triton_exp(x))
    tl.store(y_ptr + offs, triton_cast(y, y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def tanh_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, triton_tanh(triton_cast(x, tl.float32)), mask=mask)


def aliases():
    x = torch.randn(1000)
    y = torch.empty_like(x)
    softplus_kernel[(triton.cdiv(1000, 256),)](x, y, 1000, BLOCK=256)
    torch.testing.assert_close(y, torch.nn.functional.softplus(x))


def libdevice_alias():
    x = torch.randn(1000)
    y = torch.empty_like(x)
    tanh_kernel[(triton.cdiv(1000, 256),)](x, y, 1000, BLOCK=256)
    torch.testing.assert_close(y, torch.tanh(x))


# --- block pointers: attention-style scores over a ragged sequence length ---------------------------
@triton.jit
def scores_kernel(q_ptr, k_ptr, s_ptr, seq_len, stride_qm, stride_kn, stride_sm,
                  HEAD: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CHECKED: tl.constexpr):
    start_m = tl.program_id(0) * BLOCK_M
    q_block = tl.make_block_ptr(q_ptr, shape=(seq_len, HEAD), strides=(stride_qm, 1), offsets=(start_m, 0),
                                block_shape=(BLOCK_M, HEAD), order=(1, 0))
    kt_block = tl.make_block_ptr(k_ptr, shape=(HEAD, seq_len), strides=(1, stride_kn), offsets=(0, 0),
                                 block_shape=(HEAD, BLOCK_N), order=(0, 1))
    s_block = tl.make_block_ptr(s_ptr, shape=(seq_len, seq_len), strides=(stride_sm, 1), offsets=(start_m, 0),
                                block_shape=(BLOCK_M, BLOCK_N), order=(1, 0))
    if CHECKED:
        q = tl.load(q_block, boundary_check=(0,), padding_option="zero")
    else:
        q = tl.load(q_block)
    for _ in range(0, seq_len, BLOCK_N):
        if CHECKED:
            kt = tl.load(kt_block, boundary_check=(1,), padding_option="zero")
            tl.store(s_block, tl.dot(q, kt), boundary_check=(0, 1))
        else:
            kt = tl.load(kt_block)
            tl.store(s_block, tl.dot(q, kt))
        kt_block = tl.advance(kt_block, (0, BLOCK_N))
        s_block = tl.advance(s_block, (0, BLOCK_N))


def block_pointers(checked: bool):
    seq_len, head = 45, 16  # not a multiple of the 16-row blocks
    q, k = torch.randn(seq_len, head), torch.randn(seq_len, head)
    s = torch.empty(seq_len, seq_len)
    scores_kernel[(triton.cdiv(seq_len, 16),)](q, k, s, seq_len, q.stride(0), k.stride(0), s.stride(0),
                                               HEAD=head, BLOCK_M=16, BLOCK_N=16, CHECKED=checked)
    if checked:  # unchecked, the last row block reads past q and k: its scores are garbage
        torch.testing.assert_close(s, tf32(q) @ tf32(k).T, rtol=1e-4, atol=1e-4)


# --- grouped GEMM over tables of pointers (tutorial 08 style, with masks for ragged sizes) -------------
@triton.jit
def grouped_matmul_kernel(a_ptrs, b_ptrs, c_ptrs, sizes, lds, group_size, NUM_PROGRAMS: tl.constexpr,
                          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    tile = tl.program_id(0)
    first_tile = 0
    for g in range(group_size):
        m = tl.load(sizes + g * 3)
        n = tl.load(sizes + g * 3 + 1)
        k = tl.load(sizes + g * 3 + 2)
        tiles_n = tl.cdiv(n, BLOCK_N)
        tiles = tl.cdiv(m, BLOCK_M) * tiles_n
        while tile >= first_tile and tile < first_tile + tiles:
            a = tl.load(a_ptrs + g).to(tl.pointer_type(tl.float32))
            b = tl.load(b_ptrs + g).to(tl.pointer_type(tl.float32))
            c = tl.load(c_ptrs + g).to(tl.pointer_type(tl.float32))
            lda = tl.load(lds + g * 3)
            ldb = tl.load(lds + g * 3 + 1)
            ldc = tl.load(lds + g * 3 + 2)
            rm = (tile - first_tile) // tiles_n * BLOCK_M + tl.arange(0, BLOCK_M)
            rn = (tile - first_tile) % tiles_n * BLOCK_N + tl.arange(0, BLOCK_N)
            acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
            for kk in range(0, tl.cdiv(k, BLOCK_K)):
                rk = kk * BLOCK_K + tl.arange(0, BLOCK_K)
                x = tl.load(a + rm[:, None] * lda + rk[None, :], mask=(rm[:, None] < m) & (rk[None, :] < k), other=0.0)
                y = tl.load(b + rk[:, None] * ldb + rn[None, :], mask=(rk[:, None] < k) & (rn[None, :] < n), other=0.0)
                acc += tl.dot(x, y)
            tl.store(c + rm[:, None] * ldc + rn[None, :], acc, mask=(rm[:, None] < m) & (rn[None, :] < n))
            tile += NUM_PROGRAMS
        first_tile += tiles


def grouped_gemm(bug: str = ""):
    shapes = [(33, 20, 17), (16, 40, 31), (45, 9, 24)]  # (M, N, K) per group
    group_a = [torch.randn(m, k) for m, n, k in shapes]
    group_b = [torch.randn(k, n) for m, n, k in shapes]
    group_c = [torch.empty(m, n) for m, n, k in shapes]
    a_addrs = [a.data_ptr() for a in group_a]
    c_addrs = [c.data_ptr() for c in group_c]
    if bug == "stale":
        freed = torch.randn(1 << 20)  # large enough to go back to the system when freed
        a_addrs[1] = freed.data_ptr()
        del freed
    if bug == "shared_output":  # a copy-paste slip in the launcher: group 1 writes into group 0's output
        c_addrs[1] = c_addrs[0]
    a_ptrs = torch.tensor(a_addrs)
    b_ptrs = torch.tensor([b.data_ptr() for b in group_b])
    c_ptrs = torch.tensor(c_addrs)
    sizes = torch.tensor([s for m, n, k in shapes for s in (m, n, k)], dtype=torch.int32)
    strides = [(a.stride(0), b.stride(0), c.stride(0)) for a, b, c in zip(group_a, group_b, group_c)]
    lds = torch.tensor([s for triple in strides for s in triple], dtype=torch.int32)
    grouped_matmul_kernel[(4,)](a_ptrs, b_ptrs, c_ptrs, sizes, lds, len(shapes), NUM_PROGRAMS=4,
                                BLOCK_M=16, BLOCK_N=16, BLOCK_K=16)
    if not bug:
        for a, b, c in zip(group_a, group_b, group_c):
            torch.testing.assert_close(c, tf32(a) @ tf32(b), rtol=1e-4, atol=1e-4)


# --- partial column sums under a spin lock (layer-norm backward style) ------------------------------------
@triton.jit
def column_sums_kernel(x_ptr, partial_ptr, locks_ptr, counts_ptr, n_cols, stride, GROUPS: tl.constexpr,
                       LOCK: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0)
    group = row % GROUPS
    partial = partial_ptr + group * n_cols + cols
    count = counts_ptr + group
    if LOCK == "per_program":
        lock = locks_ptr + row  # one lock per program: excludes nobody
    else:
        lock = locks_ptr + group
    if LOCK != "none":
        while tl.atomic_cas(lock, 0, 1) == 1:
            pass
    if tl.load(count) == 0:
        tl.atomic_xchg(count, 1)
    else:
        x += tl.load(partial, mask=mask)
    tl.store(partial, x, mask=mask)
    if LOCK != "none" and LOCK != "leak":  # "leak": the release forgotten
        tl.atomic_xchg(lock, 0)


def spin_lock(lock: str):
    rows, cols, groups = 24, 37, 4
    x = torch.randn(rows, cols)
    partial = torch.zeros(groups, cols)
    locks = torch.zeros(rows, dtype=torch.int32)
    counts = torch.zeros(groups, dtype=torch.int32)
    column_sums_kernel[(rows,)](x, partial, locks, counts, cols, x.stride(0), GROUPS=groups, LOCK=lock, BLOCK=64)
    torch.testing.assert_close(partial.sum(0), x.sum(0), rtol=1e-4, atol=1e-4)


# --- a kernel that carries its own triton-viz decorator, with a missing mask ---------------------------
def triton_viz_traced():
    import triton_viz

    @triton_viz.trace("sanitizer")
    @triton.jit
    def scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs)  # no mask: the last block reads past x
        tl.store(y_ptr + offs, x * 3.0, mask=offs < n)

    x = torch.randn(100)
    y = torch.empty_like(x)
    scale_kernel[(2,)](x, y, 100, BLOCK=64)
    torch.testing.assert_close(y, 3 * x)


SCENARIOS = {
    "aliases": aliases,
    "libdevice_alias": libdevice_alias,
    "block_checked": lambda: block_pointers(True),
    "block_unchecked": lambda: block_pointers(False),
    "grouped_gemm": grouped_gemm,
    "grouped_gemm_stale": lambda: grouped_gemm("stale"),
    "grouped_gemm_shared_output": lambda: grouped_gemm("shared_output"),
    "lock_shared": lambda: spin_lock("shared"),
    "lock_none": lambda: spin_lock("none"),
    "lock_per_program": lambda: spin_lock("per_program"),
    "lock_leak": lambda: spin_lock("leak"),
    "triton_viz_traced": triton_viz_traced,
}

if __name__ == "__main__":
    SCENARIOS[sys.argv[1]]()
