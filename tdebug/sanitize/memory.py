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

Here: LaunchChecker, the check of each access. Its shadow state is shadow.py's, its findings issues.py's; two
of its parts live beside it: the dense-rows path (dense_rows.py) and the reader table (readers.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import numpy as np

from ..interpreter.batched.batch_memory import RowGroups, Rows, forget_span, parts_of, rows_elements, saved
from ..interpreter.frames import ReplayAbort
from ..report import Finding
from .dense_rows import DenseRows
from .issues import MAX_EXAMPLES, Issue
from .locks import LockOrder
from .readers import Readers
from .shadow import ArgView, Shadow

_NONE = np.empty(0, dtype=np.intp)  # no lane left unresolved (shared: never written)
_NONE.flags.writeable = False


def _lanes_of(linear_pid, sel: np.ndarray):
    """The programs of the lanes `sel` (a batched access), or the one program of the access."""
    return linear_pid[sel] if isinstance(linear_pid, np.ndarray) else linear_pid


class Reach(Protocol):
    """Memory a launch reaches beyond its arguments (live.PointerReach: pointers built from integers)."""

    def views_for(self, addrs: np.ndarray) -> list[list[ArgView]]: ...

    def stale(self, addr: int) -> tuple[str, ArgView | None] | None: ...


class LaunchChecker(DenseRows, Readers):
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
        # Per storage its views; its shadow made at the first access that needs it (`shadows`: all of them, made
        # now; a replayed launch, launch_replay.py, makes only those of the storages it stores to or may read cold)
        self._storage_views = by_storage
        self._shadows: list[Shadow] | None = None
        self._made_shadows: dict[tuple[int, int], Shadow] = {}
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

    @property
    def shadows(self) -> list[Shadow]:
        """Every storage's shadow, by address (made now where not yet)."""
        if self._shadows is None:
            made = self._made_shadows
            self._shadows = sorted((made.get(key) or Shadow.create(views)
                                    for key, views in self._storage_views.items()), key=lambda s: s.ptr)
        return self._shadows

    @shadows.setter
    def shadows(self, shadows: list[Shadow]) -> None:
        self._shadows = shadows

    def shadows_made(self) -> list[Shadow]:
        """The shadows made so far: every storage's, or (a replayed launch's) those its accesses asked for. A storage
        with none made had no access that wrote it, nor one that could read it uninitialised."""
        return self._shadows if self._shadows is not None else list(self._made_shadows.values())

    def beyond_arguments(self) -> bool:
        """Does the launch reach storages that are none of its arguments' (pointers built from integers)?"""
        return self._shadows is not None and len(self._shadows) > len(self._storage_views)

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
            offs = (sub if sub.dtype == np.uint64 else sub.view(np.uint64) if sub.dtype == np.int64
                    else sub.astype(np.uint64)) - np.uint64(s.ptr)
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
        if kind != "load" or self.volatile:
            self._settle_stores(s)
        if kind == "load":
            if "uninit" in checks and s.maybe_cold:
                self._report("uninit", "load of tensor '{}' memory that nothing has written (allocated with "
                             "torch.empty)", s, elems, ~self._init_of(s)[elems], linear_pid, pid, where)
            if race:
                if self.volatile and self.order is not None and not lanes:
                    if s.writer is not None:
                        self.order.acquire_from(s, elems, s.writer[elems])
                    if s.atomic_by is not None:  # a flag published with an atomic (atomic_xchg, atomic_add)
                        self.order.acquire_from(s, elems, s.atomic_by[elems], "atomic")
                writers = self._writers(s, elems)  # (the dense-row stores kept aside too, left aside)
                if writers is not None:
                    other = self._unordered(s, "writer", elems, writers, linear_pid)
                    self._report("race", "load of tensor '{}' elements that another program stores to in the "
                                 "same launch (read/write race)", s, elems, other, linear_pid, pid, where)
                if lanes:  # kept aside until a store reaches the storage (Readers._settle writes them in order)
                    if self.order is not None and self.order.active:  # (locks order reads: written now)
                        self._settle(s)
                        self._readers_ordered(s, elems, linear_pid)
                    elif not self._defer(s, elems, linear_pid):
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
                self._stamp(s, "reader", mine, linear_pid)
            return
        # store or atomic
        self._stored(s)
        if kind != "store" and "uninit" in checks and s.maybe_cold:
            # An atomic reads the old value before it writes: on torch.empty memory it adds to garbage.
            cold = ~self._init_of(s)[elems]
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
            self._stamp(s, role, elems, linear_pid)
        self._written(s, elems)

    def _stored(self, s: Shadow) -> None:
        """s is stored to in this launch (undoable)."""
        if self.undo is not None and not s.stored:
            self.undo.append((s, "stored", None))
        s.stored = True

    def _written(self, s: Shadow, elems: np.ndarray) -> None:
        """The elements hold data now: init (while it matters) and the allocation's written marks."""
        if s.maybe_cold and s.init is not None:  # (not made yet: the marks below record the write for it)
            self._write(s, "init", elems, True)
        if s.marks is not None:
            self._write(s, "marks", elems, s.marked)
        elif s.written is not None:
            self._write(s, "written", elems, True)

    # -- a replayed launch (launch_replay.py): its accesses are the recorded launch's, found in bounds and free of
    # races then (those follow from the key alone); what depends on memory is done again ----------------------------
    def shadow_for(self, ptr: int, elsize: int) -> Shadow:
        """The shadow of the storage at `ptr` seen in elements of `elsize` bytes (made now if not yet)."""
        if self._shadows is not None:
            for s in self._shadows:
                if s.ptr == ptr and s.elsize == elsize:
                    return s
            raise LookupError(f"no shadow of the storage at 0x{ptr:x}")
        found = self._made_shadows.get((ptr, elsize))
        if found is None:
            found = self._made_shadows[(ptr, elsize)] = Shadow.create(self._storage_views[(ptr, elsize)])
        return found

    def may_be_cold(self, ptr: int, elsize: int) -> bool:
        """Might the storage hold memory nothing wrote (its shadow's maybe_cold; asked without making the shadow: a
        storage no torch.empty allocated, or one written whole, cannot)?"""
        if self._shadows is not None or (ptr, elsize) in self._made_shadows:
            return self.shadow_for(ptr, elsize).maybe_cold
        from ..catalogue.poison import ALLOCATIONS

        first = self._storage_views[(ptr, elsize)][0]
        return first.was_empty and not ALLOCATIONS.fully_written(first.home_ptr)

    def replay_load(self, s: Shadow, elements: np.ndarray | slice | Rows | RowGroups) -> None:
        """A replayed load of these elements (a slice: a run of them): an uninitialised one stops the replay (the
        ordinary run reports it)."""
        if "uninit" not in self.checks or not s.maybe_cold:
            return
        init = self._init_of(s)
        held = bool(init[elements].all()) if isinstance(elements, (np.ndarray, slice)) else \
            all(rows.view(init).all() for _, _, rows in parts_of(elements))
        if not held:
            raise ReplayAbort("a load of memory nothing wrote")

    def replay_store(self, s: Shadow, elements: np.ndarray | slice | Rows | RowGroups) -> None:
        """A replayed store to these elements (a slice: a run of them): s stored to, the elements written (as the
        access's own path marks them: the lane by lane one, or dense rows kept aside until the launch's end)."""
        self._stored(s)
        if type(elements) is slice and elements.start == 0 and elements.stop == s.elements:
            if not s.covered:
                if self.undo is not None:
                    self.undo.append((s, "covered", False))
                s.covered = True  # (settle_marks: every element written, no need to read the marks again)
            if s.marks is not None and s.nbytes == s.elements * s.elsize:
                # Every byte written: settle_marks records the allocation written whole (its marks let go), and
                # holding_data reads a covered storage as written; the marks need no write (nor its undo) now.
                if s.maybe_cold and s.init is not None:
                    self._write(s, "init", elements, True)
                return
        if isinstance(elements, (np.ndarray, slice)):
            self._written(s, elements)
        elif s.marks is None and s.written is not None:  # (the dense-rows path leaves such a storage lane by lane)
            self._written(s, np.concatenate([rows_elements(rows) for _, _, rows in parts_of(elements)]))
        else:
            for _, _, rows in parts_of(elements):
                self._rows_written(s, rows)

    def _init_of(self, s: Shadow) -> np.ndarray:
        """s.init (per element: holds data), made now if Shadow.create left it for its first read: from the
        storage's memory and its marks, those of the dense-row stores kept aside too; dropped again if this batch
        is undone. A storage found holding data everywhere is no longer maybe_cold."""
        if s.init is None:
            init = s.holding_data()
            for rows in s.marks_pending:
                rows.view(init)[...] = True
            if self.undo is not None:
                self.undo.append((s, "init", None))
                self._made.add((id(s), "init"))
                self.undo.append((s, "maybe_cold", True))
            s.init = init
            s.maybe_cold = not init.all()
        return s.init

    # -- undoing a batch (the batched engine splits a batch whose programs diverge, and runs it again) ---------
    def _write(self, s: Shadow, name: str, elems: np.ndarray, value, before=None) -> None:
        """s.<name>[elems] = value, undoable while a batch runs: the elements' old values are kept (`before`:
        they were read already), or the table is dropped if this batch made it. (A slice of elements: a replayed
        access's run, launch_replay.py.)"""
        if (elems.stop <= elems.start) if type(elems) is slice else not elems.size:
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
        order = None if self.order is None else self.order.checkpoint()
        shadows = None if self._shadows is None else list(self._shadows)
        return ({key: issue.copy() for key, issue in self.issues.items()}, shadows, dict(self._made_shadows),
                self._pending_lanes, order)

    def rollback(self, token: tuple) -> None:
        for target, what, old in reversed(self.undo or []):
            if isinstance(target, Shadow):
                setattr(target, what, False if what == "stored" else old)
            else:
                target[what] = old
        self.issues, shadows, self._made_shadows, self._pending_lanes, order = token
        if shadows is not None:
            self._shadows = shadows
        elif self._shadows is not None:  # made since the checkpoint: those of the launch's own storages kept
            self._shadows = [s for s in self._shadows if (s.ptr, s.elsize) in self._storage_views]
        if self.order is not None:
            self.order.rollback(order)
        self.undo = None

    def commit(self, token: tuple) -> None:
        self.undo = None
        if self.order is not None:
            self.order.commit()

    # -- order through locks (locks.py): an access ordered before this program's is no race -------------
    def _unordered(self, s: Shadow, role: str, elems: np.ndarray, pids: np.ndarray, linear_pid: int) -> np.ndarray:
        """Per element: its last `role` access was by another program and is not ordered before this one."""
        if not pids.size or int(pids.max()) < 0:  # no element accessed yet in this role (a fresh output)
            return np.zeros(pids.size, dtype=bool)
        other = (pids >= 0) & (pids != linear_pid)
        if self.order is not None and self.order.active and other.any():
            lanes = linear_pid if isinstance(linear_pid, np.ndarray) else None  # a program per lane (batched)
            other &= ~self.order.ordered(s, role, elems, pids, lanes)
        return other

    def _stamp(self, s: Shadow, role: str, elems: np.ndarray, linear_pid: int | np.ndarray) -> None:
        if self.order is not None:
            self.order.stamp(s, role, elems, linear_pid if isinstance(linear_pid, np.ndarray) else None)

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
