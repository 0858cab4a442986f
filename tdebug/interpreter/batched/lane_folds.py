"""An fp32 accumulator's fold over a chunk of lanes as whole numpy ops: `acc += term` (or `-=`) of every iteration
in order, bit for bit what Triton's front end and tdebug's wrappers would make one iteration at a time, where
nothing in it can make a finding; None where loop_lanes must fold iteration by iteration.

What is computed, per program: a plain term gives acc + x_0 + x_1 + ... in fp32, left to right, which is numpy's
add.accumulate along the iterations (sequential in the array's dtype, never pairwise); a term that is a product
(fma.FACTORS: a * b, the GPU fuses the add into an fma) gives round32(a_t * b_t + acc) each iteration, the product
exact in fp64 and the sum rounded once (fma.fused), which the loop here reproduces wherever no fp64 sum lies on or
near a rounding tie of fp32 (fma.near_ties): any such sum, any NaN or Inf among the operands or the sums, a side
array on a handle (the NaN check's origins) or a shape, dtype or factor the fold does not know hands it back.
Numpy's error flags stay off here (errstate ignore): an op that would raise one is handed back before it counts.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ..semantics.fma import FACTORS, near_ties, sum_to_odd
from .program_axis import HANDLE_KEYS, MARK, mark

SIGNS = {operator.iadd: 1.0, operator.add: 1.0, operator.isub: -1.0, operator.sub: -1.0}
STRIDE = 64  # iterations whose fp64 sums are searched for ties at once
MAX_TIES = 64  # restarts at a tie, at most: past them (sums below fp32's normal range, say) the fold is handed back


def fold(total: Any, term: Any, op, programs: int, trips: int) -> Any:
    """`total op term` over the chunk's `trips` iterations (term: a row per program and iteration, program p's
    iteration t in row p * trips + t), or None where the fold must go iteration by iteration."""
    import triton.language as tl
    from triton.runtime.interpreter import TensorHandle

    sign = SIGNS.get(op)
    if sign is None or not isinstance(term, tl.tensor) or term.dtype != tl.float32:
        return None
    data = getattr(term.handle, "data", None)
    if not getattr(term.handle, MARK, False) or not isinstance(data, np.ndarray) \
            or data.shape[:1] != (programs * trips,):
        return None
    block = data.shape[1:]  # a row's shape: the block's (a scalar's row may hold one element)
    if not isinstance(total, tl.tensor) or total.type != term.type or not _plain(total.handle):
        return None  # (`acc = 0.0` is a tensor already: the interpreter wraps each assigned value in to_tensor)
    acc = _rows(total.handle, programs, 1, block)
    if acc is None:
        return None
    factors = getattr(term.handle, FACTORS, None)
    if factors is None:
        if not _plain(term.handle):
            return None
        terms = _rows(term.handle, programs, trips, block)
        if terms is None:
            return None
        data = _sum(acc[:, 0], terms, sign)
    else:
        if set(vars(term.handle)) - HANDLE_KEYS != {FACTORS} or len(factors) != 2:
            return None
        a, b = (_rows(f, programs, trips, block) for f in factors)
        if a is None or b is None or not all(_plain(f, FACTORS) for f in factors):
            return None
        data = _fused_sum(acc[:, 0], a, b, sign)
    if data is None:
        return None
    return tl.tensor(mark(TensorHandle(data, tl.float32)), term.type)


def _plain(handle, *allowed: str) -> bool:
    """A TensorHandle with nothing beside its values (no origins, no provenance; no factors but where `allowed`: a
    factor's own factors, which its product's sum never reads)."""
    return set(vars(handle)) <= HANDLE_KEYS.union(allowed)


def _rows(handle, programs: int, trips: int, block: tuple) -> np.ndarray | None:
    """The handle's fp32 values as (programs, trips, *block): a batched handle's rows, or one value of a row's shape
    that every program shares."""
    from triton.runtime.interpreter import TensorHandle

    if type(handle) is not TensorHandle:
        return None
    data = handle.data
    if not isinstance(data, np.ndarray) or data.dtype != np.float32:
        return None
    if getattr(handle, MARK, False):
        if data.shape != (programs * trips,) + block:
            return None
        return data.reshape((programs, trips) + block)
    if data.shape != block:
        return None
    return np.broadcast_to(data, (programs, trips) + block)


def _sum(acc: np.ndarray, terms: np.ndarray, sign: float) -> np.ndarray | None:
    """acc + terms[:, 0] + terms[:, 1] + ... (sign -1: minus each), in fp32, left to right."""
    if not (np.isfinite(acc).all() and np.isfinite(terms).all()):
        return None
    with np.errstate(all="ignore"):
        parts = np.concatenate([acc[:, None], terms if sign == 1.0 else -terms], axis=1)
        sums = np.add.accumulate(parts, axis=1)  # a - b is a + (-b) exactly: one accumulate for both signs
    if not np.isfinite(sums).all():
        return None
    return np.ascontiguousarray(sums[:, -1])


def _fused_sum(acc: np.ndarray, a: np.ndarray, b: np.ndarray, sign: float) -> np.ndarray | None:
    """round32(sign * a_t * b_t + acc) for t in order, the product exact. Each iteration rounds the fp64 sum once
    more; every STRIDE iterations their sums are searched for ties, and from the first one on the iterations run
    again, that one's sum rounded to odd first (fma.sum_to_odd). None past MAX_TIES such restarts."""
    if not (np.isfinite(acc).all() and np.isfinite(a).all() and np.isfinite(b).all()):
        return None
    trips, restarts = a.shape[1], 0
    with np.errstate(all="ignore"):
        products = a.astype(np.float64) * b.astype(np.float64)  # exact: at most 2 x 24 significant bits
        if sign != 1.0:
            products = -products
        sums = np.empty_like(products)
        acc32, t = acc, 0
        while t < trips:
            end = min(t + STRIDE, trips)
            acc64 = acc32.astype(np.float64)
            for i in range(t, end):
                acc32 = np.add(products[:, i], acc64, out=sums[:, i]).astype(np.float32)
                acc64 = acc32.astype(np.float64)
            ties = near_ties(np.ascontiguousarray(sums[:, t:end]).reshape(-1), "fp32")
            if not ties.size:
                t = end
                continue
            restarts += 1
            if restarts > MAX_TIES:
                return None
            first = t + int(np.unravel_index(ties, sums[:, t:end].shape)[1].min())
            before = acc if first == 0 else sums[:, first - 1].astype(np.float32)
            sums[:, first] = sum_to_odd(products[:, first], before.astype(np.float64), "fp32")
            acc32, t = sums[:, first].astype(np.float32), first + 1
        if not (np.isfinite(sums).all() and np.isfinite(acc32).all()):
            return None
    return acc32
