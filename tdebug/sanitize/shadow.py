"""The sanitizer's shadow of a launch's memory: its tensor arguments (ArgView) and, per storage, what each
element holds and which programs wrote and read it (Shadow)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..catalogue.poison import ALLOCATIONS, storage_bytes, storage_poison_mask
from .written import marks_by_element


@dataclass
class ArgView:
    """One tensor argument of a launch."""

    name: str
    tensor: torch.Tensor
    storage_ptr: int
    storage_bytes: int
    elsize: int
    was_empty: bool = False  # allocated by torch.empty (poisoned): may hold never-written elements
    home: torch.Tensor | None = None  # the caller's tensor when `tensor` is the interpreter's host copy of it
    _member: np.ndarray | None = None

    @property
    def home_ptr(self) -> int:
        """The storage the caller owns: the same across launches, unlike a launch's host copy."""
        return self.home.untyped_storage().data_ptr() if self.home is not None else self.storage_ptr

    @property
    def full_cover(self) -> bool:
        t = self.tensor
        return t.is_contiguous() and t.storage_offset() == 0 and t.numel() * self.elsize == self.storage_bytes

    def member(self) -> np.ndarray:
        """Bool per storage element: does this view span it?"""
        if self._member is None:
            n = self.storage_bytes // self.elsize
            m = torch.zeros(n, dtype=torch.bool, device="cpu")  # not the script's default device
            t = self.tensor
            if t.numel():
                m.as_strided(t.shape, t.stride(), t.storage_offset()).fill_(True)
            self._member = m.numpy()
        return self._member

    def logical_index(self, element: int) -> tuple[int, ...] | None:
        """The index into the view of a storage element, or None when the view does not span it."""
        t = self.tensor
        off = element - t.storage_offset()
        if off < 0:
            return None
        dims = sorted(range(t.dim()), key=lambda d: -t.stride(d))
        idx = [0] * t.dim()
        for d in dims:
            s = t.stride(d)
            if s == 0:
                continue
            idx[d], off = divmod(off, s)
            if idx[d] >= t.shape[d]:
                return None
        return tuple(idx) if off == 0 else None

NONE = -1  # no program (writer, reader, atomic_by)
# Element size -> the unsigned word of it, and that word with every byte True (an element's written marks, whole)
_WORDS = {size: (np.dtype(f"u{size}"), int.from_bytes(b"\x01" * size, "little")) for size in (1, 2, 4, 8)}


@dataclass
class Shadow:
    """Per-storage shadow state for one launch, in elements of `elsize` bytes. The per-program tables (writer,
    reader, atomic_by, multi_reader) are made at their first write: None reads as every element untouched."""

    ptr: int
    nbytes: int
    elsize: int
    views: list[ArgView]
    init: np.ndarray | None  # per element: holds data (read and written only while maybe_cold; see create)
    member_any: np.ndarray | None  # None: some view covers the whole storage
    writer: np.ndarray | None = None
    reader: np.ndarray | None = None
    multi_reader: np.ndarray | None = None
    atomic_by: np.ndarray | None = None
    stored: bool = False
    written: np.ndarray | None = None  # the allocation's marks across launches, a row per element (written.py)
    marks: np.ndarray | None = None  # the same marks, one word per element (written: every byte of a row set)
    marked: int = 0  # a word with every byte set to True
    maybe_cold: bool = True  # False: every element held data from the start (init is all True)
    # Reads by batched loads not yet in the reader table, until the next store or atomic on the storage (or a
    # serial access) writes them into it in order (LaunchChecker._defer, _settle): per load (first elements,
    # counts, programs, None, or the load's Rows) of its programs' dense runs, or (elements, None, each lane's
    # program, the access's programs) as they were.
    pending: tuple = ()
    # Stores of dense rows whose writer-table writes wait aside (DenseRows._keep), each (Rows, programs): on
    # elements no program had written, disjoint from one another; written into the table before anything reads it.
    stores_pending: tuple = ()
    # Rows of dense-row stores whose written marks wait for the launch's end (DenseRows.settle_marks).
    marks_pending: tuple = ()
    covered: bool = False  # a store of this launch wrote every element (a replayed store's run, launch_replay.py)
    _scratch: np.ndarray | None = None  # per element, garbage between uses (programs_per_element)
    _bytes: np.ndarray | None = None  # the storage's memory (array())

    @property
    def elements(self) -> int:
        return self.nbytes // self.elsize

    @property
    def shift(self) -> int:
        return self.elsize.bit_length() - 1

    def array(self, dtype: np.dtype) -> np.ndarray:
        """The storage's memory as a numpy array of `dtype` (its element size): no copy."""
        if self._bytes is None:  # numpy over the storage's address: no torch op (under tdebug's torch hooks, a
            # torch.empty and a set_ through the write tracker cost more than the launch's own loads)
            self._bytes = storage_bytes(self.ptr, self.nbytes)
        return self._bytes.view(dtype)

    def table(self, name: str, programs: type = np.int32) -> np.ndarray:
        """The table `name`, made now if it is not yet (every element untouched); `programs`: the integer type
        its program ids take (LaunchChecker.pid_dtype)."""
        t = getattr(self, name)
        if t is None:
            t = np.zeros(self.elements, dtype=bool) if name == "multi_reader" else \
                np.full(self.elements, NONE, dtype=programs)
            setattr(self, name, t)
        return t

    def programs_per_element(self, elems: np.ndarray, lane_pids: np.ndarray,
                             last: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
        """Per lane of a batched access: the first and the last program (in the serial engine's order) among the
        lanes on its element. A batched access holds its programs' lanes program by program, in that order, so
        numpy's in-order assignment leaves an element the last lane's program (and, lanes reversed, the first)."""
        if ascending(elems):
            return lane_pids, lane_pids  # no element twice (the common case: each program its own row)
        if self._scratch is None:
            self._scratch = np.empty(self.elements, dtype=np.int32)
        scratch = self._scratch
        scratch[elems[::-1]] = lane_pids[::-1]
        first = scratch[elems]
        if not last:
            return first, None
        scratch[elems] = lane_pids
        return first, scratch[elems]

    @classmethod
    def create(cls, views: list[ArgView]) -> Shadow:
        first = views[0]
        n = first.storage_bytes // first.elsize
        # Written whole by earlier launches or torch ops: every element holds data, as in a tensor torch.empty
        # did not make.
        empty = first.was_empty and not ALLOCATIONS.fully_written(first.home_ptr)
        written = marks_by_element(first.home_ptr, first.elsize) if empty else None
        marks, marked = None, 0
        if written is not None and first.elsize in _WORDS and written.flags.c_contiguous:
            word, marked = _WORDS[first.elsize]
            marks = written.reshape(-1).view(word)  # a view: writes mark the bytes
        if first.full_cover or any(v.full_cover for v in views[1:]):
            member_any = None
        else:
            member_any = np.zeros(n, dtype=bool)
            for v in views:
                member_any |= v.member()
        # init: None with maybe_cold, made at its first read (LaunchChecker._init_of) where the marks record every
        # write (the elements then holding data are found as well then as now); None without: every element held
        # data from the start, nothing reads the table.
        shadow = cls(first.storage_ptr, first.storage_bytes, first.elsize, views, None, member_any, written=written,
                     marks=marks, marked=marked, maybe_cold=empty)
        if empty and marks is None:
            shadow.init = shadow.holding_data()
            shadow.maybe_cold = not shadow.init.all()
        return shadow

    def holding_data(self) -> np.ndarray:
        """Per element, whether it holds data now: it no longer holds the poison, or it is marked written (by a
        kernel or a torch op: a value written that happens to equal the poison counts too; written.py)."""
        init = ~storage_poison_mask(self.views[0].tensor)
        if self.covered:  # (a store of this launch wrote every element)
            init[...] = True
        elif self.written is not None and not init.all():
            init[: self.written.shape[0]] |= (self.marks == self.marked) if self.marks is not None \
                else self.written.all(axis=1)
        return init

    def view_of(self, element: int) -> ArgView:
        for v in self.views:
            if v.full_cover or v.member()[element]:
                return v
        # Outside every view: the view whose span is nearest.
        def distance(v: ArgView) -> int:
            t = v.tensor
            lo = t.storage_offset()
            hi = lo + sum((s - 1) * st for s, st in zip(t.shape, t.stride()))
            return 0 if lo <= element <= hi else min(abs(element - lo), abs(element - hi))

        return min(self.views, key=distance)


def ascending(elems: np.ndarray) -> bool:
    """No element twice, in increasing order (each program's lanes of a batched access its own row block)."""
    return elems.size < 2 or bool((elems[1:] > elems[:-1]).all())
