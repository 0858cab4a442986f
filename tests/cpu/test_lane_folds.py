"""lane_folds: an fp32 accumulator folded over a chunk's iterations as whole numpy ops gives the bits of the
iteration-by-iteration fold (Triton's fp32 add; fma.fused for a product), and hands back what it cannot vouch for."""

from __future__ import annotations

import numpy as np
import pytest

from tdebug.interpreter.batched import lane_folds
from tdebug.interpreter.semantics import fma


def _handle(data: np.ndarray):
    import triton.language as tl
    from triton.runtime.interpreter import TensorHandle

    return TensorHandle(np.ascontiguousarray(data, dtype=np.float32), tl.float32)


def _fused_reference(acc: np.ndarray, a: np.ndarray, b: np.ndarray, sign: float) -> np.ndarray:
    """The serial engine's fold: fma.fused once per iteration, as its create_fadd / create_fsub call it."""
    for t in range(a.shape[1]):
        acc = fma.fused(_handle(a[:, t]), _handle(b[:, t]), _handle(acc), sign, 1.0, "fp32")
    return acc


def _inputs(seed: int, programs: int = 3, trips: int = 300, block: int = 33):
    rng = np.random.default_rng(seed)
    acc = rng.standard_normal((programs, block)).astype(np.float32)
    a = rng.standard_normal((programs, trips, block)).astype(np.float32)
    b = (rng.standard_normal((programs, trips, block)) * 1e-3).astype(np.float32)
    return acc, a, b


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_fused_fold_is_the_per_iteration_fma(sign: float) -> None:
    for seed in range(4):
        acc, a, b = _inputs(seed)
        got = lane_folds._fused_sum(acc, a, b, sign)
        assert got is not None
        assert got.tobytes() == _fused_reference(acc, a, b, sign).tobytes()


def test_fused_fold_rounds_a_tie_as_one_rounding() -> None:
    """2^30 + 2^7 plus 64 (1 + 2^-20) (1 - 2^-20) lies just below a tie of fp32: fp64's sum is the tie itself, whose
    even neighbour is a step too high. The fold restarts there and rounds that sum to odd first."""
    acc, a, b = _inputs(7, programs=2, trips=200, block=8)
    acc[:, :2] = 2.0**30 + 2.0**7
    a[:, :150, :2] = 0.0
    a[:, 150, :2] = 64.0 * (1 + 2.0**-20)
    b[:, 150, :2] = 1 - 2.0**-20
    got = lane_folds._fused_sum(acc, a, b, 1.0)
    reference = _fused_reference(acc, a, b, 1.0)
    assert got is not None and got.tobytes() == reference.tobytes()
    naive = np.float32(np.float64(2.0**30 + 2.0**7) + np.float64(a[0, 150, 0]) * np.float64(b[0, 150, 0]))
    exact = np.float32(2.0**30 + 2.0**7)
    assert naive != exact  # the double rounding the restart avoids
    single = _fused_reference(acc[:, :2], a[:, :151, :2], b[:, :151, :2], 1.0)
    assert (single == exact).all()


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_plain_fold_is_fp32_left_to_right(sign: float) -> None:
    acc, a, _ = _inputs(3)
    want = acc.copy()
    for t in range(a.shape[1]):
        want = want + a[:, t] if sign == 1.0 else want - a[:, t]
    got = lane_folds._sum(acc, a, sign)
    assert got is not None and got.tobytes() == want.tobytes()


def test_what_the_fold_hands_back() -> None:
    acc, a, b = _inputs(5, trips=100)
    big = a.copy()
    big[0, 10, 0] = 3e38
    assert lane_folds._sum(acc, np.where(big > 1e38, np.float32(np.inf), big), 1.0) is None  # an Inf among the terms
    assert lane_folds._sum(acc, np.concatenate([big, big], axis=1), 1.0) is None  # a sum that overflows
    assert lane_folds._fused_sum(acc, a, np.full_like(b, np.nan), 1.0) is None
    # Every sum below fp32's smallest normal number: a tie to search at each iteration, past MAX_TIES restarts.
    assert lane_folds._fused_sum(acc * 1e-39, a * 1e-20, b * 1e-20, 1.0) is None
