"""Dense-row stores whose shadow writes wait aside (sanitize/dense_rows.py): when their runs overlap and when they
cover a storage, and the allocation state they leave when they do (catalogue.poison.Allocations: written whole,
no marks kept) as Shadow.create and the unwritten masks read it. The findings these make in real launches, under
both engines, are in test_engine's scenarios (row_blocks_*)."""

import numpy as np
import torch

from tdebug.catalogue.poison import Allocations, poisoned_empty
from tdebug.interpreter.batched.batch_memory import Rows
from tdebug.sanitize.dense_rows import _covers, _overlap
from tdebug.sanitize.shadow import ArgView, Shadow
from tdebug.sanitize.written import storage_unwritten, unwritten_mask


def _rows(first: int, step: int, n: int, programs: int) -> Rows:
    return Rows(first, step, n, programs, 0, n, n)


def test_runs_overlap_only_where_they_share_an_element():
    left, right = _rows(0, 10, 4, 8), _rows(4, 10, 6, 8)  # columns 0..3 and 4..9 of 8 rows of 10
    assert not _overlap([left, right])
    assert _overlap([left, _rows(3, 10, 2, 8)])  # column 3 twice
    assert _overlap([left, _rows(70, 10, 4, 2)])  # rows 7 and 8 against row 7
    assert not _overlap([left, _rows(80, 10, 4, 2)])  # the rows after them


def test_runs_cover_a_storage_only_when_no_element_is_left_out():
    left, right = _rows(0, 10, 4, 8), _rows(4, 10, 6, 8)
    assert _covers((left, right), 80)
    assert not _covers((left, right), 81)  # one element past the last row
    assert not _covers((left, _rows(4, 10, 5, 8)), 80)  # the last column of every row
    assert not _covers((_rows(10, 10, 10, 7),), 80)  # the first row
    assert _covers((_rows(0, 10, 10, 4), _rows(30, 10, 10, 5)), 80)  # overlapping runs: covered all the same


def test_an_allocation_written_whole_keeps_no_marks_until_a_new_one_takes_its_address():
    allocations = Allocations()
    t = torch.empty(64)
    ptr = t.untyped_storage().data_ptr()
    allocations.add(t)
    marks = allocations.written(ptr)
    assert marks is not None and not marks.any() and not allocations.fully_written(ptr)
    allocations.written_whole(ptr)
    assert allocations.fully_written(ptr) and allocations.written(ptr) is None and allocations.was_empty(ptr)
    allocations.add(t)  # a new allocation at that address: nothing written
    assert not allocations.fully_written(ptr) and not allocations.written(ptr).any()
    untracked = torch.ones(4)
    allocations.written_whole(untracked.untyped_storage().data_ptr())  # not tdebug's: nothing recorded
    assert not allocations.fully_written(untracked.untyped_storage().data_ptr())


def test_a_storage_written_whole_reads_as_holding_data_everywhere():
    with poisoned_empty() as allocations:  # the process's ALLOCATIONS
        t = torch.empty(6, 5)
    ptr = t.untyped_storage().data_ptr()
    view = ArgView("t", t, ptr, t.untyped_storage().nbytes(), t.element_size(), was_empty=True)
    cold = Shadow.create([view])
    assert cold.maybe_cold and cold.init is None and cold.marks is not None  # init made at its first read
    assert cold.holding_data().sum() == 0 and storage_unwritten(t, ptr).all() and unwritten_mask(t).all()
    t[:2] = 1.0  # as a kernel's store would leave it, its marks set
    cold.marks[:10] = cold.marked
    assert np.array_equal(cold.holding_data(), np.arange(30) < 10)
    allocations.written_whole(ptr)
    whole = Shadow.create([view])
    assert not whole.maybe_cold and whole.init is None and whole.marks is None and whole.written is None
    assert not storage_unwritten(t, ptr).any() and not unwritten_mask(t).any()
