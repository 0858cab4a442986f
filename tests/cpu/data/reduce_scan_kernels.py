"""Kernels whose tl.reduce / tl.associative_scan take their own combine function (test_reduce_scan.py): each case
prints a digest of its outputs and how many times its combine function ran, as JSON. argv[1]: `plain` (Triton's
interpreter as it is), `tdebug` (tdebug's interpreter patches) or `tdebug-loop` (the same without
interpreter/fast/reduce_scan.py: Triton's per-element loop for every combine function); TDEBUG_EXECUTOR picks the
engine."""

import hashlib
import json
import os
import sys

os.environ["TRITON_INTERPRET"] = "1"
if sys.argv[1:2] in (["tdebug"], ["tdebug-loop"]):
    from tdebug.interpreter import patches
    from tdebug.interpreter.fast import reduce_scan

    if sys.argv[1] == "tdebug-loop":
        reduce_scan.install = lambda: None
    patches.install()

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

CALLS = [0]


@triton.jit
def keyed_add(x, y):
    """A segmented count: the upper 16 bits a key, the lower a count (associative on sorted keys only)."""
    CALLS[0] += 1
    return tl.where((x >> 16) == (y >> 16), x + (y & 0xFFFF), y)


@triton.jit
def keyed_scan_kernel(keys_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    packed = (tl.load(keys_ptr + offs) << 16) | 1
    tl.store(out_ptr + offs, tl.associative_scan(packed, 0, keyed_add))


@triton.jit
def argmax_last(v1, i1, v2, i2):
    """Ties go to the larger index (Triton's own argmax keeps the smaller)."""
    CALLS[0] += 1
    take = (v2 > v1) | ((v2 == v1) & (i2 > i1))
    return tl.where(take, v2, v1), tl.where(take, i2, i1)


@triton.jit
def argmax_rows_kernel(x_ptr, v_ptr, i_ptr, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.arange(0, BN)
    x = tl.load(x_ptr + rows[:, None] * BN + cols[None, :])
    idx = tl.broadcast_to(cols[None, :], (BM, BN))
    v, i = tl.reduce((x, idx), 1, argmax_last)
    tl.store(v_ptr + rows, v)
    tl.store(i_ptr + rows, i)


@triton.jit
def plus(a, b):
    CALLS[0] += 1
    return a + b


@triton.jit
def float_scan_kernel(x_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(out_ptr + offs, tl.associative_scan(tl.load(x_ptr + offs), 0, plus))


@triton.jit
def reverse_scan_kernel(x_ptr, out_ptr, BM: tl.constexpr, BN: tl.constexpr):
    offs = tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :]
    tl.store(out_ptr + offs, tl.associative_scan(tl.load(x_ptr + offs), 1, plus, reverse=True))


@triton.jit
def whole_tile_kernel(x_ptr, out_ptr, BM: tl.constexpr, BN: tl.constexpr):
    offs = tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :]
    total = tl.reduce(tl.load(x_ptr + offs), None, plus, keep_dims=True)
    tl.store(out_ptr + tl.arange(0, 1)[:, None] + tl.arange(0, 1)[None, :], total)


@triton.jit
def branchy_max(a, b):
    """Python control flow on its scalars: runs one element at a time only."""
    CALLS[0] += 1
    if a > b:
        return a
    return b


@triton.jit
def branchy_kernel(x_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(out_ptr + offs, tl.associative_scan(tl.load(x_ptr + offs), 0, branchy_max))


@triton.jit
def online_softmax(m1, d1, m2, d2):
    CALLS[0] += 1
    m = tl.maximum(m1, m2)
    return m, d1 * tl.exp(m1 - m) + d2 * tl.exp(m2 - m)


@triton.jit
def softmax_stats_kernel(x_ptr, m_ptr, d_ptr, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    x = tl.load(x_ptr + rows[:, None] * BN + tl.arange(0, BN)[None, :])
    m, d = tl.reduce((x, tl.full((BM, BN), 1.0, tl.float32)), 1, online_softmax)
    tl.store(m_ptr + rows, m)
    tl.store(d_ptr + rows, d)


def digest(*tensors) -> str:
    h = hashlib.sha256()
    for t in tensors:
        h.update(t.contiguous().view(torch.uint8).numpy().tobytes())
    return h.hexdigest()[:16]


def cases(seed: int) -> dict:
    g = torch.Generator().manual_seed(seed)
    out: dict = {}

    def run(name, fn):
        CALLS[0] = 0
        out[name] = {"digest": fn(), "calls": CALLS[0]}

    def keyed(sort: bool):
        keys = torch.randint(0, 6, (512,), generator=g, dtype=torch.int32)
        keys = keys.sort().values if sort else keys
        y = torch.empty(512, dtype=torch.int32)
        keyed_scan_kernel[(1,)](keys, y, N=512)
        return digest(y)

    def argmax():
        x = torch.randint(0, 5, (64, 32), generator=g).float()  # many ties
        v, i = torch.empty(64), torch.empty(64, dtype=torch.int32)
        argmax_rows_kernel[(4,)](x, v, i, BM=16, BN=32)
        return digest(v, i)

    def float_scan():
        x = torch.randn(256, generator=g)
        y = torch.empty(256)
        float_scan_kernel[(1,)](x, y, N=256)
        return digest(y)

    def reverse():
        x = torch.randint(-1000, 1000, (8, 64), generator=g, dtype=torch.int32)
        y = torch.empty_like(x)
        reverse_scan_kernel[(1,)](x, y, BM=8, BN=64)
        return digest(y)

    def whole():
        x = torch.randint(-1000, 1000, (8, 16), generator=g, dtype=torch.int32)
        y = torch.empty((1, 1), dtype=torch.int32)
        whole_tile_kernel[(1,)](x, y, BM=8, BN=16)
        return digest(y)

    def branchy():
        x = torch.randn(64, generator=g)
        y = torch.empty(64)
        branchy_kernel[(1,)](x, y, N=64)
        return digest(y)

    def softmax_stats():
        x = torch.randn(64, 32, generator=g)
        m, d = torch.empty(64), torch.empty(64)
        softmax_stats_kernel[(4,)](x, m, d, BM=16, BN=32)
        return digest(m, d)

    run("keyed_sorted", lambda: keyed(True))
    run("keyed_unsorted", lambda: keyed(False))
    run("argmax", argmax)
    run("float_scan", float_scan)
    run("reverse", reverse)
    run("whole_tile", whole)
    run("branchy", branchy)
    run("softmax_stats", softmax_stats)
    return out


if __name__ == "__main__":
    print(json.dumps(cases(int(os.environ.get("SEED", "0")))))
