"""What the checks keep between launches stays small: the store records of a batched store keep its addresses as an
Affine (each program's first address and one block of offsets) and a mask shared by every program as one row, a
committed batch lets its undo go, and the written marks of a torch.empty output go when the output does. Each is
exact: the records read back the very addresses and mask; the marks of a live allocation stay."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from tdebug.catalogue.poison import Allocations
from tdebug.interpreter.hooks import stores
from tdebug.interpreter.hooks.stores import Affine, _shared_rows

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tests" / "cpu" / "data" / "retained_memory.py"


def test_a_launch_repeated_on_fresh_outputs_does_not_grow_what_the_checks_keep():
    done = subprocess.run([sys.executable, "-m", "tdebug", "sanitize", "--device", "cpu", str(SCRIPT)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    line = next(x for x in done.stdout.splitlines() if x.startswith("{"))
    out = json.loads(line)
    held, size = out["held"], out["output_bytes"]
    per_launch = (held[-1] - held[1]) / (len(held) - 2)
    # Before: ~6x the output per launch (a record's address and mask per lane, the batches' undo kept through the
    # records, the marks of every earlier output); the records' bookkeeping per batch is what is left.
    assert per_launch < 0.05 * size, (held, size)


def _affine_case(rng: np.random.Generator, dtype) -> np.ndarray:
    programs = int(rng.integers(2, 9))
    block = tuple(int(b) for b in rng.integers(1, 7, size=int(rng.integers(1, 3))))
    pattern = rng.integers(-(1 << 20), 1 << 20, size=block).astype(np.int64)
    firsts = rng.integers(0, 1 << 62, size=programs).astype(np.int64)
    if rng.random() < 0.3:
        firsts[0] = -firsts[0]  # a wrap-around address (uint64 above 2**63)
    out = (firsts.reshape((programs,) + (1,) * len(block)) + pattern).astype(dtype)
    return out


@pytest.mark.parametrize("chunk", [3, 1 << 18])  # a few programs per pass (a lane of any of them breaks it), all
def test_affine_reads_back_every_programs_addresses_and_refuses_anything_else(monkeypatch, chunk):
    monkeypatch.setattr(stores, "_AFFINE_CHUNK", chunk)
    monkeypatch.setattr(stores, "_COMPACT_FROM", 0)  # the small cases here: checked too
    rng = np.random.default_rng()
    for _ in range(300):
        dtype = np.uint64 if rng.random() < 0.5 else np.int64
        addresses = _affine_case(rng, dtype)
        affine = Affine.of(addresses)
        assert affine is not None
        for i in range(addresses.shape[0]):
            got = affine.of_program(i)
            assert got.dtype == addresses.dtype and got.shape == addresses.shape[1:]
            assert np.array_equal(got, addresses[i])
        if addresses[0].size > 1:  # (a one-lane block is affine whatever its addresses)
            broken = addresses.copy()
            p = int(rng.integers(1, addresses.shape[0]))  # a program other than the first: its block moved apart
            lane = tuple(int(rng.integers(0, s)) for s in addresses.shape[1:])
            broken[(p,) + lane] += dtype(8)
            assert Affine.of(broken) is None
    one_program = np.arange(6, dtype=np.uint64).reshape(1, 6)
    shared = np.broadcast_to(np.arange(6, dtype=np.uint64), (4, 6))  # every program at the same addresses
    assert Affine.of(one_program) is None and Affine.of(shared) is None
    assert Affine.of(np.arange(8, dtype=np.int32).reshape(2, 4)) is None  # not an address array
    monkeypatch.setattr(stores, "_COMPACT_FROM", 1 << 14)
    assert Affine.of(_affine_case(rng, np.uint64)) is None  # too small to be worth the check: kept as it is


def test_a_mask_shared_by_every_program_is_kept_as_one_row_and_reads_back_the_same(monkeypatch):
    monkeypatch.setattr(stores, "_COMPACT_FROM", 0)
    rng = np.random.default_rng()
    row = rng.random((5, 7)) < 0.6
    same = np.repeat(row[None], 4, axis=0)
    kept = _shared_rows(same)
    assert np.array_equal(kept, same) and kept.strides[0] == 0 and kept.base is not same
    differs = same.copy()
    differs[3, 2, 4] = not differs[3, 2, 4]
    assert _shared_rows(differs) is differs


def test_the_written_marks_of_an_allocation_go_with_it_and_a_newer_one_keeps_its_own():
    allocations = Allocations()
    t = torch.empty(1000)
    ptr = t.untyped_storage().data_ptr()
    allocations.add(t)
    marks = allocations.written(ptr)
    assert marks is not None and marks.size == 4000
    marks[:8] = True
    assert allocations.written(ptr)[:8].all()  # kept while the tensor lives
    del t, marks
    gc.collect()
    assert ptr not in allocations._written and allocations.written(ptr) is None

    old, new = torch.empty(10), torch.empty(10)
    allocations.add(old)
    old_ref = allocations._storages[old.untyped_storage().data_ptr()]
    key = new.untyped_storage().data_ptr()
    allocations.add(new)
    allocations.written(key)[:4] = True
    allocations._forget(key, old_ref)  # an older tensor's death reported at the newer one's address
    assert allocations.written(key)[:4].all()


def test_a_predicated_loops_iterations_do_not_keep_each_others_values():
    script = ROOT / "tests" / "cpu" / "data" / "loop_memory.py"
    done = subprocess.run([sys.executable, "-m", "tdebug", "sanitize", "--device", "cpu", "--executor", "batched",
                           str(script)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    out = json.loads(next(x for x in done.stdout.splitlines() if x.startswith("{")))
    # Before: each iteration's state held the last one's, and with it every value of every iteration (the long
    # loop's peak 29 values of the batch above the short one's, about one per iteration); under 2 now.
    assert out["long"] - out["short"] < 8 * out["value_bytes"], out
