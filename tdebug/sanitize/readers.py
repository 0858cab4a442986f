"""The sanitizer's reader table: which program read each element first and whether a second one did, written
only when a store reaches the storage (a batched load's reads wait aside on Shadow.pending until then)."""

from __future__ import annotations

import numpy as np

from ..interpreter.batched.batch_memory import Rows
from .dense_rows import own_rows
from .shadow import NONE, Shadow, ascending

PENDING_LANES = 1 << 23  # a launch's batched reads kept aside lane by lane (12 bytes each), at most


class Readers:
    """LaunchChecker's reader table (a part of that class, kept here: its state is the checker's)."""

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

    def _readers_ordered(self, s: Shadow, elems: np.ndarray, lane_pids: np.ndarray) -> None:
        """Reader shadow after the loads of many programs while spin locks order accesses (locks.LockOrder), as the
        serial engine leaves it after running them in program order: an element's reader is replaced by the first
        program its reader so far is ordered before (or is), which stamps it; it is read by several when another
        program of the access reads it too, or no program of the access comes after its reader. (The programs of
        one batch hold distinct locks: none of them is ordered before another.)"""
        before = s.reader[elems] if s.reader is not None else np.full(elems.size, -1, dtype=self.pid_dtype)
        ok = (before < 0) | (before == lane_pids) | self.order.ordered(s, "reader", elems, before, lane_pids)
        first, last = s.programs_per_element(elems, lane_pids)
        if first is lane_pids:  # no element twice
            chosen = np.flatnonzero(ok)
            several = ~ok
        else:
            taken = np.flatnonzero(ok)
            _, at = np.unique(elems[taken], return_index=True)  # lanes in program order: the first one ordered
            chosen = taken[at]
            several = (first != last) | ~np.isin(elems, elems[chosen])
        if chosen.size:
            self._write(s, "reader", elems[chosen], lane_pids[chosen],
                        None if s.reader is None else before[chosen])
            self.order.stamp(s, "reader", elems[chosen], lane_pids[chosen])
        if several.any():
            self._mark_several(s, elems[several])

    def _defer(self, s: Shadow, elems: np.ndarray, lane_pids: np.ndarray) -> bool:
        """Keep a batched load's reads aside instead of writing them into the reader table now: the table serves
        only a later store to the same storage in this launch (a read/write race), and most loads are of inputs
        the launch never writes. Kept as runs when each program's lanes are a dense ascending run of elements (a
        row block: a few numbers per program give back the very lanes), else as they are while the launch holds
        fewer than PENDING_LANES such lanes; False: write the table now."""
        n = elems.size
        if ascending(elems):
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
                if not own_rows(before, pids):
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
