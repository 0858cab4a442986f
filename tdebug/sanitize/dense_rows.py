"""The sanitizer's checker on dense rows: a batched access whose every program reads or writes one run of
elements (a row per program) is checked and recorded on strided views of the shadow tables, not lane by lane."""

from __future__ import annotations

import numpy as np

from .. import settings
from ..catalogue.poison import ALLOCATIONS
from ..interpreter.batched.batch_memory import RowGroups, Rows, program_layout
from .shadow import NONE, Shadow

_RUN_CHECK_LANES = 1 << 18  # lanes per pass of _evenly_spaced_runs (temporaries that stay in cache)
# Lanes per run of programs (_row_runs), on average, at least: each run costs Python work at every step of the
# check and of the memory op, more than the lane by lane path's numpy spends on fewer lanes (a 4096 x 1024 batch
# in runs of ~4 rows: 1.6x slower that way; Liger's cross entropy, runs of ~7 rows of 32000: 1.4x faster). 1 (the
# setting): every access that fits, however short (the engine fuzzer's kernels reach these paths that way).
_RUN_LANES = settings.get("TDEBUG_DENSE_RUN_LANES")


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


def _row_shaped(kind: str, ptrs: np.ndarray, count: int, least: int) -> bool:
    """A load or store of at least `least` programs whose pointers are a C-ordered integer array with a row per
    program: what Rows can describe."""
    return kind != "atomic" and count >= least and ptrs.ndim >= 2 and ptrs.dtype in (np.uint64, np.int64) \
        and ptrs.flags.c_contiguous


def _runs(records: list[Rows]) -> tuple[np.ndarray, np.ndarray]:
    """The first element and one past the last of every program's run in these Rows."""
    starts = np.concatenate([r.first + r.step * np.arange(r.programs, dtype=np.int64) for r in records])
    return starts, starts + np.repeat(np.array([r.n for r in records], dtype=np.int64),
                                      [r.programs for r in records])


def _overlap(records: list[Rows]) -> bool:
    """Do two runs of these Rows share an element?"""
    starts, ends = _runs(records)
    order = np.argsort(starts, kind="stable")
    return bool((ends[order][:-1] > starts[order][1:]).any())


def _covers(records: tuple[Rows, ...], elements: int) -> bool:
    """Do these Rows' runs together cover every element 0..elements-1?"""
    starts, ends = _runs(list(records))
    order = np.argsort(starts, kind="stable")
    starts, reach = starts[order], np.maximum.accumulate(ends[order])
    return int(starts[0]) <= 0 and int(reach[-1]) >= elements and bool((starts[1:] <= reach[:-1]).all())


def own_rows(table: np.ndarray, programs: np.ndarray) -> bool:
    """Every element of a (programs, run) view of a program table untouched or the row's own program's."""
    return bool(((table == programs[:, None]) | (table < 0)).all())


class DenseRows:
    """LaunchChecker's dense-rows path (a part of that class, kept here: its state is the checker's)."""

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
            grouped = self._row_groups(kind, ptrs, mask, origin) or self._row_runs(kind, ptrs, mask, origin) \
                or self._ragged_tail(kind, ptrs, mask, origin)
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
        if not _row_shaped(kind, ptrs, count, 4):
            return None
        firsts = ptrs.reshape(count, -1)[:, 0].view(np.int64)
        steps = np.diff(firsts)
        breaks = np.flatnonzero(steps != steps[0])
        size = int(breaks[0]) + 1 if breaks.size else count
        if size < 2 or size == count or count % size:
            return None
        return self._groups(kind, ptrs, mask, origin, list(range(0, count, size)))

    def _row_runs(self, kind: str, ptrs: np.ndarray, mask: np.ndarray | None,
                  origin: int | None) -> tuple[Shadow, RowGroups] | None:
        """The access as Rows in each run of consecutive programs whose rows are evenly spaced, the runs of unequal
        length (one program too): the programs a predicated `if` left after an early return (Liger's cross entropy:
        the rows whose target is ignore_index gone), one storage, no element in two runs; else None."""
        count = self._programs.size
        if ptrs.size < _RUN_LANES or not _row_shaped(kind, ptrs, count, 2):  # (the test below, for one run)
            return None
        every = ptrs.reshape(count, -1)
        steps = np.diff(every[:, 0].view(np.int64))
        step = int(steps.min())
        if step <= 0:
            return None
        breaks = (np.flatnonzero(steps != step) + 1).tolist()
        if ptrs.size < (len(breaks) + 1) * _RUN_LANES:  # short runs: the lane by lane path
            return None
        return self._groups(kind, ptrs, mask, origin, [0] + breaks)

    def _ragged_tail(self, kind: str, ptrs: np.ndarray, mask: np.ndarray | None,
                     origin: int | None) -> tuple[Shadow, RowGroups] | None:
        """The access as Rows in two groups, every program but the last under one mask and the last under its own:
        an element-wise kernel over n elements not a multiple of its block (`offs < n` cuts the last program's row
        short), whose whole batch would otherwise go lane by lane; else None (and for short accesses, which the
        lane by lane path does faster)."""
        count = self._programs.size
        if mask is None or ptrs.size < 2 * _RUN_LANES or not _row_shaped(kind, ptrs, count, 2):
            return None
        rows = np.broadcast_to(mask, ptrs.shape).reshape(count, -1)
        if not (rows[1:-1] == rows[0]).all():
            return None
        return self._groups(kind, ptrs, mask, origin, [0, count - 1])

    def _groups(self, kind: str, ptrs: np.ndarray, mask: np.ndarray | None, origin: int | None,
                begins: list[int]) -> tuple[Shadow, RowGroups] | None:
        """The access as Rows in each group of consecutive programs from `begins` on (_row_groups, _row_runs): one
        storage, and for a store no element in two groups' runs (the lane by lane path tells who races); else None."""
        count = self._programs.size
        every = ptrs.reshape(count, -1)
        shared_mask = None if mask is None else np.broadcast_to(mask, ptrs.shape).reshape(count, -1)
        groups, storage = [], None
        for begin, end in zip(begins, begins[1:] + [count]):
            found = self._rows(kind, every[begin:end], None if shared_mask is None else shared_mask[begin:end],
                               origin, end - begin)
            if found is None or (storage is not None and found[0] is not storage):
                return None
            storage = found[0]
            groups.append(found[1])
        if kind == "store" and _overlap(groups):
            return None
        return storage, RowGroups(tuple(groups), tuple(begins))

    def _rows(self, kind: str, ptrs: np.ndarray, mask: np.ndarray | None, origin: int | None,
              count: int) -> tuple[Shadow, Rows] | None:
        """The access (`count` programs, a row of ptrs each) as Rows of one storage, when it is one (checked on
        every active lane), else None."""
        if not _row_shaped(kind, ptrs, count, 1):
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
        step = int(addrs[1, 0]) - a0 if count > 1 else n * es  # (one program: any step of at least its run)
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
            if "uninit" in checks and s.maybe_cold and not all(rows.view(self._init_of(s)).all() for _, rows in parts):
                return False
            if race:
                if s.stored:
                    return self._rows_read_stored(s, parts)
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
            self._settle_stores_under(s, parts)
            for i, (programs, rows) in enumerate(parts):
                if s.writer is not None:
                    before = rows.view(s.writer)
                    unwritten[i] = int(before.max()) < 0
                    if not unwritten[i] and not own_rows(before, programs):
                        return False
                if s.reader is not None:
                    read = rows.view(s.reader)
                    if int(read.max()) >= 0:
                        if not own_rows(read, programs):
                            return False
                        if s.multi_reader is not None and (rows.view(s.multi_reader) & (read >= 0)).any():
                            return False
        self._stored(s)
        for (programs, rows), fresh in zip(parts, unwritten):
            if race:
                if fresh:  # on elements no program wrote, none kept aside either: kept aside too
                    self._keep(s, "stores_pending", (rows, programs))
                else:
                    self._write_rows(s, "writer", rows, programs[:, None])
            self._rows_written(s, rows)
        return True

    def _rows_written(self, s: Shadow, rows: Rows) -> None:
        """A dense-rows store's elements hold data now: init (while it matters), and its written marks kept aside
        until the launch's end (settle_marks)."""
        if s.maybe_cold and s.init is not None:  # (not made yet: the marks kept aside record the write)
            self._write_rows(s, "init", rows, True, grows=True)
        if s.marks is not None:
            self._keep(s, "marks_pending", rows)

    def _rows_read_stored(self, s: Shadow, parts: list[tuple[np.ndarray, Rows]]) -> bool:
        """A Rows load of a storage this launch stores to: when no element it reads was written by another program
        (a read/write race: False, nothing changed, the lane by lane path reports it), its reads are kept aside as
        before any store (Shadow.pending; the next store or lane by lane access writes them into the reader table,
        in order)."""
        self._settle_stores_under(s, parts)
        if s.writer is not None:
            for programs, rows in parts:
                before = rows.view(s.writer)
                if int(before.max()) >= 0 and not own_rows(before, programs):
                    return False
        for programs, rows in parts:
            self._defer_rows(s, rows, programs)
        return True

    def _keep(self, s: Shadow, name: str, record) -> None:
        """Add a record to the shadow's tuple `name` (stores_pending, marks_pending), undoable while a batch runs."""
        if self.undo is not None:
            self.undo.append((s, name, getattr(s, name)))
        setattr(s, name, getattr(s, name) + (record,))

    def _settle_stores(self, s: Shadow) -> None:
        """Write the dense-row stores kept aside into the writer table (before anything reads it)."""
        if not s.stores_pending:
            return
        if self.undo is not None:
            self.undo.append((s, "stores_pending", s.stores_pending))
        records, s.stores_pending = s.stores_pending, ()
        for rows, programs in records:
            self._write_rows(s, "writer", rows, programs[:, None], NONE)

    def _settle_stores_under(self, s: Shadow, parts: list[tuple[np.ndarray, Rows]]) -> None:
        """_settle_stores when a store kept aside shares an element with these parts' runs (their writer-table
        views must then show it); else the stores stay aside."""
        if s.stores_pending and _overlap([r for r, _ in s.stores_pending] + [r for _, r in parts]):
            self._settle_stores(s)

    def _writers(self, s: Shadow, elems: np.ndarray) -> np.ndarray | None:
        """Per element, the program whose store the writer table holds or a dense-row store kept aside made (they
        reach no element the table holds), without writing those into the table; None: no store reached s yet."""
        if not s.stores_pending:
            return None if s.writer is None else s.writer[elems]
        out = s.writer[elems] if s.writer is not None else np.full(elems.size, NONE, dtype=self.pid_dtype)
        kept = [rows for rows, _ in s.stores_pending]
        starts, ends = _runs(kept)
        programs = np.concatenate([programs for _, programs in s.stores_pending])
        order = np.argsort(starts, kind="stable")
        starts, ends, programs = starts[order], ends[order], programs[order]
        run = np.searchsorted(starts, elems, side="right") - 1
        inside = run >= 0
        inside[inside] = elems[inside] < ends[run[inside]]
        out[inside] = programs[run[inside]]
        return out

    def settle_marks(self) -> None:
        """At the launch's end: the written marks of the dense-row stores kept aside, set; and where the launch's
        stores (those, or those before) left every element of their storage written, the allocation recorded as
        written whole (its marks let go: later launches and the unwritten check need not read them)."""
        for s in self.shadows_made():
            records, s.marks_pending = s.marks_pending, ()
            if s.marks is None or not s.stored:
                continue
            whole = s.nbytes == s.elements * s.elsize
            if whole and records and _covers(records, s.elements):
                self._written_whole(s)
                continue
            for rows in records:
                rows.view(s.marks)[...] = s.marked
            if whole and (s.covered or bool((s.marks == s.marked).all())):
                self._written_whole(s)

    @staticmethod
    def _written_whole(s: Shadow) -> None:
        ALLOCATIONS.written_whole(s.views[0].home_ptr)
        s.marks = s.written = None

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
