"""The interpreter sanitizer's memory model: every load, store and atomic of a launch checked lane by lane.

For each launch we know its tensor arguments (name, storage, view). Each active lane's address is
checked *before* the access against the elements the argument views really span (a sliced view does
not own the gap between its rows), so an out-of-bounds lane is reported and masked off instead of
segfaulting the interpreter. Shadow state per storage element tracks:
- init:   holds data (False for torch.empty memory that still holds the poison pattern);
- writer: the program that stored to it in this launch (-1: none);
- reader: the first program that loaded it in this launch, and whether a second one did.
Programs of one launch run in no defined order on a GPU, so an element written by one program and
read or written by another, without atomics, is a race whatever order the interpreter used.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Protocol

import numpy as np
import torch

from ..catalogue.poison import storage_bytes, storage_poison_mask
from ..interpreter.batched.batch_memory import RowGroups, Rows, forget_span, program_layout, saved
from ..report import Finding
from .locks import LockOrder
from .written import marks_by_element

MAX_EXAMPLES = 4
_NONE = np.empty(0, dtype=np.intp)  # no lane left unresolved (shared: never written)
_NONE.flags.writeable = False
PENDING_LANES = 1 << 23  # a launch's batched reads kept aside lane by lane (12 bytes each), at most


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


@dataclass
class Shadow:
    """Per-storage shadow state for one launch, in elements of `elsize` bytes. The per-program tables (writer,
    reader, atomic_by, multi_reader) are made at their first write: None reads as every element untouched."""

    ptr: int
    nbytes: int
    elsize: int
    views: list[ArgView]
    init: np.ndarray | None  # None: every element holds data (read and written only while maybe_cold)
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
    # Reads by batched loads not yet in the reader table, while no store or atomic has reached the storage in
    # this launch (LaunchChecker._defer): per load (first elements, counts, programs, None, or the load's Rows)
    # of its programs' dense runs, or (elements, None, each lane's program, the access's programs) as they were.
    pending: tuple = ()
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
        if _ascending(elems):
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
        written = marks_by_element(first.home_ptr, first.elsize) if first.was_empty else None
        marks, marked = None, 0
        if written is not None and first.elsize in (1, 2, 4, 8) and written.flags.c_contiguous:
            marks = written.reshape(-1).view(np.dtype(f"u{first.elsize}"))  # a view: writes mark the bytes
            marked = int.from_bytes(b"\x01" * first.elsize, "little")
        if first.was_empty:
            # Unwritten: no kernel or torch op marked it, and it still holds the poison (written.py).
            init = ~storage_poison_mask(first.tensor)
            maybe_cold = not init.all()
            if written is not None and maybe_cold:
                init[: written.shape[0]] |= (marks == marked) if marks is not None else written.all(axis=1)
                maybe_cold = not init.all()
        else:
            init = None  # every element held data from the start: nothing reads the table
            maybe_cold = False
        if any(v.full_cover for v in views):
            member_any = None
        else:
            member_any = np.zeros(n, dtype=bool)
            for v in views:
                member_any |= v.member()
        return cls(first.storage_ptr, first.storage_bytes, first.elsize, views, init, member_any, written=written,
                   marks=marks, marked=marked, maybe_cold=maybe_cold)

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


@dataclass
class Issue:
    """Findings accumulate here, one per (check, line, tensor, cause), with a count and a few examples."""

    check: str
    message: str
    kernel: str
    file: str
    line: int
    tensor: ArgView | None
    masked: bool | None
    count: int = 0
    pids: list[tuple[int, ...]] = field(default_factory=list)
    indices: list = field(default_factory=list)
    _by_pid: dict = field(default_factory=dict, repr=False)  # program -> its first examples, in its own order

    def add(self, count: int, pid: tuple[int, ...], examples: list) -> None:
        """Count lanes; keep the examples of the first programs in the serial engine's order (pid order), each
        program's in its own order, an element once: the same examples whichever engine ran the programs, in
        whatever order their accesses came (which element an earlier program also reached decides nothing)."""
        self.count += count
        if pid not in self.pids:
            self.pids = sorted(self.pids + [pid])[:MAX_EXAMPLES]
        own = self._by_pid.setdefault(pid, [])
        for e in examples:
            if len(own) < MAX_EXAMPLES and not any(e == x for x in own):
                own.append(e)
        # The first MAX_EXAMPLES distinct examples in (program, its order); later programs' cannot count any more
        # (an earlier program's list only grows), so they are let go.
        kept: list = []
        for p in sorted(self._by_pid):
            if len(kept) >= MAX_EXAMPLES:
                del self._by_pid[p]
                continue
            kept.extend(e for e in self._by_pid[p] if not any(e == x for x in kept))
        self.indices = kept[:MAX_EXAMPLES]

    def copy(self) -> Issue:
        return replace(self, pids=list(self.pids), indices=list(self.indices),
                       _by_pid={p: list(v) for p, v in self._by_pid.items()})

    def finding(self) -> Finding:
        t = self.tensor
        return Finding(
            check=self.check, message=self.message, kernel=self.kernel, file=self.file, line=self.line,
            pids=self.pids, tensor=t.name if t else "",
            tensor_shape=tuple(t.tensor.shape) if t else (), tensor_strides=tuple(t.tensor.stride()) if t else (),
            indices=self.indices, masked=self.masked, count=self.count)


def _ascending(elems: np.ndarray) -> bool:
    """No element twice, in increasing order (each program's lanes of a batched access its own row block)."""
    return elems.size < 2 or bool((elems[1:] > elems[:-1]).all())


def _lanes_of(linear_pid, sel: np.ndarray):
    """The programs of the lanes `sel` (a batched access), or the one program of the access."""
    return linear_pid[sel] if isinstance(linear_pid, np.ndarray) else linear_pid


_RUN_CHECK_LANES = 1 << 18  # lanes per pass of _evenly_spaced_runs (temporaries that stay in cache)


def _evenly_spaced_runs(addrs: np.ndarray, a0: int, step: int, es: int) -> bool:
    """Is every lane (program i, lane j) of addrs (uint64, programs x lanes) at a0 + i * step + j * es?"""
    count, n = addrs.shape
    pattern = np.arange(n, dtype=np.uint64) * np.uint64(es)
    rows = max(1, _RUN_CHECK_LANES // max(1, n))
    for r in range(0, count, rows):
        chunk = addrs[r:r + rows]
        firsts = np.uint64(a0) + np.uint64(step) * np.arange(r, r + chunk.shape[0], dtype=np.uint64)
        if not (np.subtract(chunk, firsts[:, None]) == pattern).all():
            return False
    return True


def _evenly_spaced(values: np.ndarray, step: int) -> bool:
    """values[i] == values[0] + i * step for every i (uint64, wrapping as the addresses do)."""
    return bool((np.subtract(values, values[0]) == np.uint64(step) * np.arange(values.size, dtype=np.uint64)).all())


def _own(table: np.ndarray, programs: np.ndarray) -> bool:
    """Every element of a (programs, run) view of a program table untouched or the row's own program's."""
    return bool(((table == programs[:, None]) | (table < 0)).all())


class Reach(Protocol):
    """Memory a launch reaches beyond its arguments (live.PointerReach: pointers built from integers)."""

    def views_for(self, addrs: np.ndarray) -> list[list[ArgView]]: ...

    def stale(self, addr: int) -> tuple[str, ArgView | None] | None: ...


class LaunchChecker:
    """Checks the accesses of one kernel launch."""

    dense_rows = True  # batched accesses of dense rows take the strided path (_dense); False: lane by lane

    def __init__(self, kernel: str, views: list[ArgView], checks: frozenset[str], order: LockOrder | None = None,
                 reach: Reach | None = None) -> None:
        self.kernel = kernel
        self.checks = checks
        self.order = order  # spin locks seen so far: accesses they order are no races
        self.reach = reach  # pointers built from integers: live tensors they reach are in bounds
        by_storage: dict[tuple[int, int], list[ArgView]] = {}
        for v in views:
            by_storage.setdefault((v.storage_ptr, v.elsize), []).append(v)
        self.shadows = [Shadow.create(vs) for vs in by_storage.values()]
        self.shadows.sort(key=lambda s: s.ptr)
        self.issues: dict[tuple, Issue] = {}
        self._pid_of: Callable[[int], tuple[int, int, int]] | None = None  # batched accesses: linear -> (x, y, z)
        self.undo: list | None = None  # while a batch runs: what to put back to undo it (_write)
        # The last access when every active lane fell in one storage, in bounds: (shadow, whether every lane is at
        # a whole element, element indices, the active lanes or None for every lane) - what a batched load or
        # store needs to do it with numpy (batch_memory).
        self.resolved: tuple[Shadow, bool, np.ndarray, np.ndarray | None] | None = None
        self._marked_bad = False  # the access being checked has a lane not to perform
        self._programs: np.ndarray | None = None  # the batched access's programs, one per row of its lanes
        self._made: set[tuple[int, str]] = set()  # tables made in this batch (undone by dropping them)
        self.one_program = False  # a launch of one program: no other program to race with
        self.volatile = False  # the access being checked is a volatile load (a flag: locks.LockOrder.acquire_from)
        # The integer type of the program tables (writer, reader, atomic_by): int16 where every program id fits,
        # those of programs one block past the grid too (tdebug's probes for unwritten elements): half the bytes
        # of a table as big as its tensor to fill, page in and read.
        self.pid_dtype: type = np.int32
        self._grid: tuple[int, int, int] | None = None
        self._pending_lanes = 0  # lanes of the reads kept aside as they were (_defer), in every storage

    def set_grid(self, gx: int, gy: int, gz: int) -> None:
        """The launch's grid, before its first access (the program tables' integer type follows from it)."""
        if self._grid is None:
            self._grid = (gx, gy, gz)
            self.pid_dtype = np.int16 if (gx + 1) * (gy + 1) * (gz + 1) < np.iinfo(np.int16).max else np.int32

    # -- reporting ---------------------------------------------------------------------------------
    def _issue(self, check: str, message: str, where: tuple[str, int], view: ArgView | None,
               masked: bool | None) -> Issue:
        key = (check, where, view.name if view else "", message)
        issue = self.issues.get(key)
        if issue is None:
            issue = self.issues[key] = Issue(check, message, self.kernel, where[0], where[1], view, masked)
        return issue

    def _nearest(self, addr: int, among: list[Shadow] | None = None) -> tuple[Shadow, int]:
        """The storage nearest to an address outside all of them, and the signed byte distance."""
        among = among or self.shadows
        best, best_d = among[0], None
        for s in among:
            d = addr - s.ptr if addr < s.ptr else addr - (s.ptr + s.nbytes)
            if best_d is None or abs(d) < abs(best_d):
                best, best_d = s, d
        return best, int(best_d if best_d is not None else 0)

    # -- the check ---------------------------------------------------------------------------------
    def access(self, kind: str, ptrs: np.ndarray, mask: np.ndarray | None, pid: tuple[int, int, int] | None,
               linear_pid: int | np.ndarray, where: tuple[str, int], how: str = "",
               pid_of: Callable[[int], tuple[int, int, int]] | None = None,
               origin: int | None = None) -> np.ndarray | None:
        """Check one memory op; returns a mask of lanes safe to perform (None: all requested lanes).
        `how` names the access in bounds findings when "load"/"store" says too little.

        The batched engine checks the lanes of many programs in one call: `linear_pid` is then an array, the
        program of each lane (broadcastable to ptrs), `pid` is None and `pid_of` names a linear program id.
        Findings are then made per program, as the serial engine makes them one program at a time."""
        flat_ptrs = ptrs.reshape(-1)
        has_mask = mask is not None
        how = how or kind
        self.resolved = None
        forget_span()
        batched = isinstance(linear_pid, np.ndarray)
        if batched:
            self._pid_of = pid_of
            self._programs = np.asarray(linear_pid).reshape(-1) if np.ndim(linear_pid) and \
                np.shape(linear_pid)[0] == ptrs.shape[0] and np.size(linear_pid) == ptrs.shape[0] else None
            if self._programs is not None and self.dense_rows and self._dense(kind, ptrs, mask, origin):
                return None
        if has_mask:
            active = (mask if mask.shape == ptrs.shape else np.broadcast_to(mask, ptrs.shape)).reshape(-1)
            count = int(np.count_nonzero(active))
            if count == 0:
                return None
            if count == active.size:  # every lane on (a tile's inner blocks): as without a mask
                lanes = None
                addrs = flat_ptrs
            else:
                lanes = np.flatnonzero(active)
                addrs = flat_ptrs[lanes]
        else:
            active = None
            addrs = flat_ptrs
            lanes = None  # every lane
        n = addrs.size
        if n == 0:
            return None
        if batched:
            if self._programs is not None:  # a program per row of lanes: each repeated over its active lanes
                rows = self._programs.size
                linear_pid = np.repeat(self._programs, flat_ptrs.size // rows if lanes is None else
                                       np.count_nonzero(active.reshape(rows, -1), axis=1))
            else:
                linear_pid = np.broadcast_to(linear_pid, ptrs.shape).reshape(-1)
                if lanes is not None:
                    linear_pid = linear_pid[lanes]
        bad = np.zeros(n, dtype=bool)
        self._marked_bad = False
        access = (kind, how, pid, linear_pid, where, has_mask)
        home = self._home(origin)
        unresolved = self._in_storages(home or self.shadows, access, addrs, None, bad)
        if unresolved.size and self.reach is not None and not home:
            reached = [Shadow.create(views) for views in self.reach.views_for(addrs[unresolved])]
            if reached:
                self.shadows = sorted(self.shadows + reached, key=lambda s: s.ptr)
                unresolved = self._in_storages(reached, access, addrs, unresolved, bad)
        if unresolved.size:
            bad[unresolved] = True
            self._marked_bad = True
            if "bounds" in self.checks:
                out = addrs[unresolved]
                self._each_program(np.ones(out.size, bool), _lanes_of(linear_pid, unresolved), pid,
                                   lambda m, p: self._outside_all(out[m], how, p, where, has_mask, home))
        if not self._marked_bad:
            if self.resolved is not None and lanes is not None:
                self.resolved = self.resolved[:3] + (lanes,)
            return None
        self.resolved = None
        safe = active.copy() if active is not None else np.ones(flat_ptrs.size, dtype=bool)
        safe[bad.nonzero()[0] if lanes is None else lanes[bad]] = False
        return safe.reshape(ptrs.shape)

    def _home(self, origin: int | None) -> list[Shadow]:
        """The storage a pointer was computed from (provenance), when it is one of the launch's: [] if not known."""
        return [s for s in self.shadows if s.ptr == origin] if origin is not None else []

    # -- dense rows: every program one run of elements (a row per program), done on strided views ------------
    def _dense(self, kind: str, ptrs: np.ndarray, mask: np.ndarray | None, origin: int | None) -> bool:
        """Check a batched load or store whose programs each reach one dense run of one storage's elements, the
        runs evenly spaced and disjoint (Rows), or so in each group of consecutive programs (RowGroups: a 2-D grid
        run with its outer axis first, as the serial engine runs it, its inner axis across the runs: the heads of
        one query block), with (programs, run) views of the shadow tables instead of per-lane index arrays. Only an
        access that finds nothing is done here, leaving the tables as the lane by lane path would; False (nothing
        changed): take that path."""
        found = self._rows(kind, ptrs, mask, origin, self._programs.size)
        if found is not None:
            s, rows = found
            parts = [(self._programs, rows)]
            resolved: Rows | RowGroups = rows
        else:
            grouped = self._row_groups(kind, ptrs, mask, origin)
            if grouped is None:
                return False
            s, resolved = grouped
            parts = [(self._programs[begin:end], rows) for begin, end, rows in resolved.parts()]
        if not self._rows_update(kind, s, parts):
            return False
        self.resolved = (s, True, resolved, None)
        return True

    def _row_groups(self, kind: str, ptrs: np.ndarray, mask: np.ndarray | None,
                    origin: int | None) -> tuple[Shadow, RowGroups] | None:
        """The access as Rows in each of its equal groups of consecutive programs (one storage, the runs of all
        groups disjoint), when the programs' first lanes run evenly for a while and then start again; else None."""
        count = self._programs.size
        if kind == "atomic" or count < 4 or ptrs.ndim < 2 or ptrs.dtype not in (np.uint64, np.int64) \
                or not ptrs.flags.c_contiguous:
            return None
        firsts = ptrs.reshape(count, -1)[:, 0].view(np.int64)
        steps = np.diff(firsts)
        breaks = np.flatnonzero(steps != steps[0])
        size = int(breaks[0]) + 1 if breaks.size else count
        if size < 2 or size == count or count % size:
            return None
        every = ptrs.reshape(count, -1)
        shared_mask = None if mask is None else np.broadcast_to(mask, ptrs.shape).reshape(count, -1)
        groups, storage = [], None
        for i in range(0, count, size):
            found = self._rows(kind, every[i:i + size], None if shared_mask is None else shared_mask[i:i + size],
                               origin, size)
            if found is None or (storage is not None and found[0] is not storage):
                return None
            storage = found[0]
            groups.append(found[1])
        if kind == "store":  # runs of two groups that overlap: the lane by lane path tells who races
            starts = np.concatenate([r.first + r.step * np.arange(r.programs, dtype=np.int64) for r in groups])
            ends = starts + np.repeat([r.n for r in groups], size)  # each group's runs are its own length
            order = np.argsort(starts, kind="stable")
            if (ends[order][:-1] > starts[order][1:]).any():
                return None
        return storage, RowGroups(tuple(groups), size)

    def _rows(self, kind: str, ptrs: np.ndarray, mask: np.ndarray | None, origin: int | None,
              count: int) -> tuple[Shadow, Rows] | None:
        """The access (`count` programs, a row of ptrs each) as Rows of one storage, when it is one (checked on
        every active lane), else None."""
        if kind == "atomic" or count < 2 or ptrs.ndim < 2 or ptrs.dtype not in (np.uint64, np.int64) \
                or not ptrs.flags.c_contiguous:
            return None
        width = ptrs.size // count
        start, stop = 0, width
        if mask is not None:  # the same lanes active in every program, one run of them
            shared = np.broadcast_to(mask, ptrs.shape)
            if shared.strides[0] == 0:
                row = shared[0].reshape(-1)
            elif mask.shape == ptrs.shape:  # (a view of a mask broadcast over some axes: reshape copies it)
                every = mask.reshape(count, width)
                row = every[0]
                if not (every == row).all():
                    return None
            else:
                return None
            lanes = np.flatnonzero(row)
            if not lanes.size or int(lanes[-1]) + 1 - int(lanes[0]) != lanes.size:
                return None
            start, stop = int(lanes[0]), int(lanes[-1]) + 1
        n = stop - start
        addrs = ptrs.reshape(count, width)[:, start:stop].view(np.uint64)
        a0 = int(addrs[0, 0])
        s = next((s for s in self._home(origin) or self.shadows if 0 <= a0 - s.ptr < s.nbytes), None)
        if s is None or s.member_any is not None:
            return None
        es = s.elsize
        step = int(addrs[1, 0]) - a0
        if (a0 - s.ptr) % es or step % es or step < n * es or int(addrs[0, -1]) - a0 != (n - 1) * es \
                or a0 + step * (count - 1) + n * es > s.ptr + s.nbytes:
            return None
        layout = program_layout(ptrs)
        if layout is not None:  # made as a pointer per program plus shared offsets: a few numbers tell
            if not _evenly_spaced(layout[0], step) or not _evenly_spaced(layout[1][start:stop], es):
                return None
        elif not _evenly_spaced_runs(addrs, a0, step, es):
            return None
        return s, Rows((a0 - s.ptr) // es, step // es, n, count, start, stop, width)

    def _rows_update(self, kind: str, s: Shadow, parts: list[tuple[np.ndarray, Rows]]) -> bool:
        """The shadow update of an access as Rows (each with its programs) that finds nothing (False, nothing
        written: it may find something, the lane by lane path decides). Every part is checked before any is
        written."""
        checks = self.checks
        race = "race" in checks and not self.one_program
        if race and self.order is not None and self.order.active:
            return False
        if kind == "load":
            if "uninit" in checks and s.maybe_cold and not all(rows.view(s.init).all() for _, rows in parts):
                return False
            if race:
                if s.stored:  # its reads go into the reader table now (_readers)
                    return False
                for programs, rows in parts:
                    self._defer_rows(s, rows, programs)
            return True
        if s.marks is None and s.written is not None:
            return False
        unwritten = [True] * len(parts)  # per part: no element of it has a writer in this launch yet
        if race:
            if s.atomic_by is not None:
                return False
            self._settle(s)  # as the lane by lane path does first: the same if it takes over
            for i, (programs, rows) in enumerate(parts):
                if s.writer is not None:
                    before = rows.view(s.writer)
                    unwritten[i] = int(before.max()) < 0
                    if not unwritten[i] and not _own(before, programs):
                        return False
                if s.reader is not None:
                    read = rows.view(s.reader)
                    if int(read.max()) >= 0:
                        if not _own(read, programs):
                            return False
                        if s.multi_reader is not None and (rows.view(s.multi_reader) & (read >= 0)).any():
                            return False
        if self.undo is not None and not s.stored:
            self.undo.append((s, "stored", None))
        s.stored = True
        for (programs, rows), fresh in zip(parts, unwritten):
            if race:
                self._write_rows(s, "writer", rows, programs[:, None], NONE if fresh else None)
            if s.maybe_cold:
                self._write_rows(s, "init", rows, True, grows=True)
            if s.marks is not None:
                self._write_rows(s, "marks", rows, s.marked, grows=True)
        return True

    def _defer_rows(self, s: Shadow, rows: Rows, programs: np.ndarray) -> None:
        """_defer's record of a Rows load: each program's first element and count."""
        begin = rows.first + rows.step * np.arange(rows.programs, dtype=np.int64)
        self._pend(s, (begin, np.full(rows.programs, rows.n, dtype=np.int64), programs, rows))

    def _write_rows(self, s: Shadow, name: str, rows: Rows, value, was=None, grows: bool = False) -> None:
        """_write through a Rows view: undoable while a batch runs (`was`: the one value every element held).
        `grows`: the table's elements only go from 0 to `value` (init, the written marks), so a read tells
        whether anything changes and, when none was set, what the undo keeps (no copy)."""
        if grows and self.undo is not None and getattr(s, name) is not None:
            view = rows.view(getattr(s, name))
            if not view.any():
                was = 0
            elif (view == value).all():
                return
        if self.undo is not None and (id(s), name) not in self._made:
            array = getattr(s, name)
            if array is None:
                self.undo.append((s, name, None))
                self._made.add((id(s), name))
            else:
                view = rows.view(array)
                self.undo.append((view, Ellipsis, view.copy() if was is None else was))
        rows.view(s.table(name, self.pid_dtype))[...] = value

    def _each_program(self, found: np.ndarray, lane_pids, pid, report: Callable) -> None:
        """report(mask, pid) for the lanes in `found`: once (one program), or once per program with such lanes
        in program order (the batched engine's lanes of many programs)."""
        if not found.any():
            return
        if not isinstance(lane_pids, np.ndarray):
            report(found, pid)
            return
        for p in np.unique(lane_pids[found]):
            report(found & (lane_pids == p), self._pid_of(int(p)))

    def _in_storages(self, shadows: list[Shadow], access: tuple, addrs: np.ndarray, todo: np.ndarray | None,
                     bad: np.ndarray) -> np.ndarray:
        """Check the lanes `todo` (indices into addrs; None: all of them) that fall in these storages; returns
        the others (indices into addrs)."""
        kind, how, pid, linear_pid, where, has_mask = access
        sub = addrs if todo is None else addrs[todo]
        unresolved = None
        for s in shadows:
            # Unsigned offsets: an address below the storage wraps around to a huge one.
            offs = (sub.view(np.uint64) if sub.dtype == np.int64 else sub.astype(np.uint64)) - np.uint64(s.ptr)
            if int(offs.max()) < s.nbytes:  # every lane inside (one pass)
                sel = todo  # None: every lane of addrs
                whole = todo is None
                unresolved = np.zeros(sub.size, dtype=bool)
            else:
                inside = offs < np.uint64(s.nbytes)
                if not inside.any():
                    continue
                idx = np.flatnonzero(inside)
                sel = idx if todo is None else todo[idx]
                offs = offs[idx]
                whole = False
                unresolved = ~inside if unresolved is None else unresolved & ~inside
            # A batched load or store may use these elements (batch_memory); a serial one never does.
            resolve = whole and s.member_any is None and isinstance(linear_pid, np.ndarray)
            if resolve:
                aligned = s.elsize == 1 or not int(np.bitwise_or.reduce(offs)) & (s.elsize - 1)
            elems = np.right_shift(offs, np.uint64(s.shift), out=offs).view(np.int64)  # offs is ours: in place
            if resolve:
                self.resolved = (s, aligned, elems, None)
            lane_pids = linear_pid if whole or not isinstance(linear_pid, np.ndarray) else linear_pid[sel]
            if s.member_any is not None:
                outside_view = ~s.member_any[elems]
                if outside_view.any():
                    if sel is None:
                        sel = np.arange(sub.size)
                    if "bounds" in self.checks:
                        def report(m, p, s=s, elems=elems):
                            ex = elems[m]
                            view = s.view_of(int(ex[0]))
                            issue = self._issue("bounds", f"{how} outside the elements of tensor '{view.name}' "
                                                "(inside its storage, between or past the view's rows)", where,
                                                view, has_mask)
                            start = view.tensor.storage_offset()
                            issue.add(int(m.sum()), p, [f"element offset {int(e) - start} from '{view.name}'[0]"
                                                        for e in ex[:MAX_EXAMPLES]])

                        self._each_program(outside_view, lane_pids, pid, report)
                    bad[sel[outside_view]] = True
                    self._marked_bad = True
                    keep = ~outside_view
                    sel, elems = sel[keep], elems[keep]
                    lane_pids = _lanes_of(linear_pid, sel)
            if elems.size:
                self._shadow_update(kind, s, elems, pid, lane_pids, where)
            if whole:
                return _NONE
            if unresolved is not None and not unresolved.any():
                break
        if unresolved is None:
            return np.arange(sub.size) if todo is None else todo
        return np.flatnonzero(unresolved) if todo is None else todo[unresolved]

    def _outside_all(self, out: np.ndarray, how: str, pid: tuple[int, int, int], where: tuple[str, int],
                     has_mask: bool, home: list[Shadow] | None = None) -> None:
        """A bounds finding for addresses outside every storage the launch may touch (outside `home`, the
        storage the pointers came from, when it is known)."""
        stale = self.reach.stale(int(out[0])) if self.reach is not None else None
        if stale is not None:
            what, table = stale
            issue = self._issue("bounds", f"{how} {what}", where, table, has_mask)
            issue.add(int(out.size), pid, [f"address 0x{int(a):x}" for a in out[:MAX_EXAMPLES]])
            return
        if not self.shadows:
            issue = self._issue("bounds", f"{how} outside every tensor of the process", where, None, has_mask)
            issue.add(int(out.size), pid, [f"address 0x{int(a):x}" for a in out[:MAX_EXAMPLES]])
            return
        s, dist = self._nearest(int(out[0]), home)
        view = s.views[0]
        side = "past the end of" if dist >= 0 else "before the start of"
        # Known provenance: out of the tensor the pointer came from, wherever the lane lands (placement-free).
        what = f"{side} '{view.name}'" if home else f"outside every tensor of the launch: {side} '{view.name}'"
        issue = self._issue("bounds", f"{how} {what}", where, view, has_mask)
        examples = []
        for a in out[:MAX_EXAMPLES]:
            s2, _ = self._nearest(int(a), home)
            v2 = s2.views[0]
            element = (int(a) - s2.ptr) // s2.elsize - v2.tensor.storage_offset()
            examples.append(f"'{v2.name}' element {element} (of {v2.tensor.numel()})")
        issue.add(int(out.size), pid, examples)

    def _report(self, check: str, message: str, s: Shadow, elems: np.ndarray, found: np.ndarray, lane_pids,
                pid, where: tuple[str, int]) -> None:
        """A finding about elements of one storage ('{}' in the message: the tensor's name), per program."""
        def report(m, p):
            ex = elems[m]
            view = s.view_of(int(ex[0]))
            issue = self._issue(check, message.format(view.name), where, view, None)
            issue.add(int(m.sum()), p, [view.logical_index(int(e)) for e in ex[:MAX_EXAMPLES]])

        self._each_program(found, lane_pids, pid, report)

    def _shadow_update(self, kind: str, s: Shadow, elems: np.ndarray, pid: tuple[int, int, int] | None,
                       linear_pid: int | np.ndarray, where: tuple[str, int]) -> None:
        checks = self.checks
        lanes = isinstance(linear_pid, np.ndarray)  # the batched engine: a program per lane
        race = "race" in checks and not self.one_program  # the program tables serve the race check only
        if kind == "load":
            if "uninit" in checks and s.maybe_cold:
                self._report("uninit", "load of tensor '{}' memory that nothing has written (allocated with "
                             "torch.empty)", s, elems, ~s.init[elems], linear_pid, pid, where)
            if race:
                if self.volatile and self.order is not None and not lanes:
                    if s.writer is not None:
                        self.order.acquire_from(s, elems, s.writer[elems])
                    if s.atomic_by is not None:  # a flag published with an atomic (atomic_xchg, atomic_add)
                        self.order.acquire_from(s, elems, s.atomic_by[elems], "atomic")
                if s.writer is not None:
                    other = self._unordered(s, "writer", elems, s.writer[elems], linear_pid)
                    self._report("race", "load of tensor '{}' elements that another program stores to in the "
                                 "same launch (read/write race)", s, elems, other, linear_pid, pid, where)
                if lanes:
                    if s.stored or not self._defer(s, elems, linear_pid):
                        self._settle(s)
                        self._readers(s, elems, linear_pid)
                    return
                self._settle(s)
                # The reader kept is the last one ordered after the ones before (the first one, without locks).
                if s.reader is None:
                    self._write(s, "reader", elems, linear_pid)
                    mine = elems
                else:
                    before = s.reader[elems]
                    concurrent = self._unordered(s, "reader", elems, before, linear_pid)
                    mine = elems[~concurrent]
                    self._write(s, "reader", mine, linear_pid, before[~concurrent])
                    if concurrent.any():
                        self._mark_several(s, elems[concurrent])
                self._stamp(s, "reader", mine)
            return
        # store or atomic
        if self.undo is not None and not s.stored:
            self.undo.append((s, "stored", None))
        s.stored = True
        if kind != "store" and "uninit" in checks and s.maybe_cold:
            # An atomic reads the old value before it writes: on torch.empty memory it adds to garbage.
            cold = ~s.init[elems]
            if lanes and cold.any():  # an element an earlier program of this op reached first: written by now
                cold &= s.programs_per_element(elems, linear_pid, last=False)[0] == linear_pid
            self._report("uninit", "atomic read-modify-write of tensor '{}' memory that nothing has written "
                         "(allocated with torch.empty): it combines with garbage", s, elems, cold,
                         linear_pid, pid, where)
        role, table = ("writer", "writer") if kind == "store" else ("atomic", "atomic_by")
        if race:
            self._settle(s)
            before = getattr(s, table)[elems] if getattr(s, table) is not None else None
            if kind == "store":
                ww = self._unordered(s, "writer", elems, before, linear_pid) \
                    if before is not None else np.zeros(elems.size, dtype=bool)
                if s.atomic_by is not None:
                    ww |= self._unordered(s, "atomic", elems, s.atomic_by[elems], linear_pid)
                if lanes:  # stored by an earlier program of this same op: the serial engine's writer by now
                    first = s.programs_per_element(elems, linear_pid, last=False)[0]
                    if first is not linear_pid:
                        ww |= linear_pid != first
                self._report("race", "stores to tensor '{}' elements that another program also writes in the "
                             "same launch, without atomics (write/write race; on a 2-D tile, often a missing "
                             "column mask spilling into the next row)", s, elems, ww, linear_pid, pid, where)
                if s.reader is not None:
                    r = s.reader[elems]
                    wr = self._unordered(s, "reader", elems, r, linear_pid)
                    if s.multi_reader is not None:
                        wr |= s.multi_reader[elems] & (r >= 0)
                    self._report("race", "stores to tensor '{}' elements that another program reads in the same "
                                 "launch (read/write race)", s, elems, wr & ~ww, linear_pid, pid, where)
            elif s.writer is not None:
                mixed = self._unordered(s, "writer", elems, s.writer[elems], linear_pid)
                self._report("race", "atomic on tensor '{}' elements that another program writes with a plain "
                             "store in the same launch", s, elems, mixed, linear_pid, pid, where)
            self._write(s, table, elems, linear_pid, before)  # lanes in program order: the last program's stays
            self._stamp(s, role, elems)
        if s.maybe_cold:
            self._write(s, "init", elems, True)
        if s.marks is not None:
            self._write(s, "marks", elems, s.marked)
        elif s.written is not None:
            self._write(s, "written", elems, True)

    def _readers(self, s: Shadow, elems: np.ndarray, lane_pids: np.ndarray) -> None:
        """Reader shadow after the loads of many programs, as the serial engine leaves it after running them in
        program order: an element's first reader stays; a second program reading it marks it read by several."""
        row = self._same_row(elems, lane_pids)
        if row is not None:  # every program read the same elements (a weight row, say): one row to update
            programs = self._programs
            first, last = int(programs[0]), int(programs[-1])
            if s.reader is None:
                self._write(s, "reader", row, first)
                several = np.full(row.size, first != last)
            else:
                before = s.reader[row]
                read = before >= 0
                several = (first != last) | (read & (before != first))
                self._write(s, "reader", row, np.where(read, before, first), before)
            if several.any():
                self._mark_several(s, row[several])
            return
        first, last = s.programs_per_element(elems, lane_pids)
        distinct = first is lane_pids  # no element twice in this access
        if s.reader is None:
            self._write(s, "reader", elems, first)
            several = None if distinct else first != last
        else:
            before = s.reader[elems]
            read = before >= 0
            if distinct:
                several = read & (lane_pids != before)
            else:
                several = np.where(read, (first != before) | (last != before), first != last)
            self._write(s, "reader", elems, np.where(read, before, first), before)
        if several is not None and several.any():
            self._mark_several(s, elems[several])

    def _defer(self, s: Shadow, elems: np.ndarray, lane_pids: np.ndarray) -> bool:
        """Keep a batched load's reads aside instead of writing them into the reader table now: the table serves
        only a later store to the same storage in this launch (a read/write race), and most loads are of inputs
        the launch never writes. Kept as runs when each program's lanes are a dense ascending run of elements (a
        row block: a few numbers per program give back the very lanes), else as they are while the launch holds
        fewer than PENDING_LANES such lanes; False: write the table now."""
        n = elems.size
        if _ascending(elems):
            starts = np.flatnonzero(lane_pids[1:] != lane_pids[:-1]) + 1
            first = np.concatenate(([0], starts))
            last = np.concatenate((starts - 1, [n - 1]))
            counts = last - first + 1
            begin = elems[first]
            record = (begin, counts, lane_pids[first], None) \
                if bool((elems[last] - begin == counts - 1).all()) else None
        else:
            record = None
        if record is None:
            if self._pending_lanes + n > PENDING_LANES:
                return False
            self._pending_lanes += n
            record = (elems, None, lane_pids, self._programs)
        self._pend(s, record)
        return True

    def _pend(self, s: Shadow, record: tuple) -> None:
        """Keep a load's reads aside (undoable while a batch runs)."""
        if self.undo is not None:
            self.undo.append((s, "pending", s.pending))
        s.pending = s.pending + (record,)

    def _settle(self, s: Shadow) -> None:
        """Write the deferred reads into the reader table, in the order they happened (the table as _readers
        would have left it had it run at each load)."""
        if not s.pending:
            return
        if self.undo is not None:
            self.undo.append((s, "pending", s.pending))
        records, s.pending = s.pending, ()
        current = self._programs  # the access being checked now; _readers reads each record's own
        for elems, counts, pids, extra in records:
            self._programs = None if isinstance(extra, Rows) else extra
            if counts is None:  # kept as they were
                self._pending_lanes -= elems.size
                self._readers(s, elems, pids)
                continue
            if isinstance(extra, Rows) and self._readers_rows(s, extra, pids):
                continue
            ends = np.cumsum(counts)
            lanes = np.arange(int(ends[-1]), dtype=np.int64) + np.repeat(elems - (ends - counts), counts)
            self._readers(s, lanes, np.repeat(pids, counts))
        self._programs = current

    def _readers_rows(self, s: Shadow, rows: Rows, pids: np.ndarray) -> bool:
        """_readers for the reads of a Rows load, through a view, when every element it read is unread so far or
        read by its own row's program only (the table then as _readers leaves it); False: nothing done."""
        was = NONE
        if s.reader is not None:
            before = rows.view(s.reader)
            if int(before.max()) >= 0:
                if not _own(before, pids):
                    return False
                was = None
        self._write_rows(s, "reader", rows, pids[:, None], was)
        return True

    def _same_row(self, elems: np.ndarray, lane_pids: np.ndarray) -> np.ndarray | None:
        """The elements of one program when every program of this batched access has the very same ones (in
        the same order), else None."""
        programs = self._programs
        if programs is None or programs.size < 2 or elems.size % programs.size:
            return None
        k = elems.size // programs.size
        # A program's lanes are contiguous: when each chunk of k lanes begins and ends in its own program,
        # every program has exactly those k lanes.
        if not ((lane_pids[::k] == programs).all() and (lane_pids[k - 1::k] == programs).all()):
            return None
        rows = elems.reshape(programs.size, -1)
        row = rows[0]
        if row.size == 0 or rows[-1][0] != row[0] or not (rows == row).all():
            return None
        return row

    def _mark_several(self, s: Shadow, elems: np.ndarray) -> None:
        """Elements read by more than one program (only those not marked yet are written)."""
        if s.multi_reader is not None:
            elems = elems[~s.multi_reader[elems]]
        self._write(s, "multi_reader", elems, True, False)

    # -- undoing a batch (the batched engine splits a batch whose programs diverge, and runs it again) ---------
    def _write(self, s: Shadow, name: str, elems: np.ndarray, value, before=None) -> None:
        """s.<name>[elems] = value, undoable while a batch runs: the elements' old values are kept (`before`:
        they were read already), or the table is dropped if this batch made it."""
        if not elems.size:
            return
        if self.undo is not None and (id(s), name) not in self._made:
            array = getattr(s, name)
            if array is None:
                self.undo.append((s, name, None))  # made in this batch: rolled back to none
                self._made.add((id(s), name))
            elif before is not None:
                self.undo.append((array, elems, before))
            else:
                self.undo.append(saved(array, elems))
        s.table(name, self.pid_dtype)[elems] = value

    def checkpoint(self) -> tuple:
        """Start recording what this launch's checks change, to roll back to here."""
        self.undo = []
        self._made = set()
        return ({key: issue.copy() for key, issue in self.issues.items()}, list(self.shadows), self._pending_lanes)

    def rollback(self, token: tuple) -> None:
        for target, what, old in reversed(self.undo or []):
            if isinstance(target, Shadow):
                setattr(target, what, False if what == "stored" else old)
            else:
                target[what] = old
        self.issues, self.shadows, self._pending_lanes = token
        self.undo = None

    def commit(self, token: tuple) -> None:
        self.undo = None

    # -- order through locks (locks.py): an access ordered before this program's is no race -------------
    def _unordered(self, s: Shadow, role: str, elems: np.ndarray, pids: np.ndarray, linear_pid: int) -> np.ndarray:
        """Per element: its last `role` access was by another program and is not ordered before this one."""
        if not pids.size or int(pids.max()) < 0:  # no element accessed yet in this role (a fresh output)
            return np.zeros(pids.size, dtype=bool)
        other = (pids >= 0) & (pids != linear_pid)
        if self.order is not None and self.order.active and other.any():
            other &= ~self.order.ordered(s, role, elems, pids)
        return other

    def _stamp(self, s: Shadow, role: str, elems: np.ndarray) -> None:
        if self.order is not None:
            self.order.stamp(s, role, elems)

    def describe(self, addrs: np.ndarray) -> str:
        """'name'[index] of the first of these byte addresses that lies in a tensor argument (for messages)."""
        flat = np.asarray(addrs).reshape(-1)
        for s in self.shadows:
            inside = flat[(flat >= s.ptr) & (flat < s.ptr + s.nbytes)]
            if inside.size:
                view = s.view_of((int(inside[0]) - s.ptr) // s.elsize)
                element = (int(inside[0]) - s.ptr) // s.elsize - view.tensor.storage_offset()
                more = f" (and {inside.size - 1} more)" if inside.size > 1 else ""
                return f"'{view.name}' element {element}{more}"
        return "memory outside the launch's tensors"

    def findings(self) -> list[Finding]:
        return [i.finding() for i in self.issues.values()]
