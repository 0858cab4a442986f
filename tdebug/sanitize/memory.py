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

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import torch

from ..catalogue.poison import poison_mask
from ..report import Finding
from .locks import LockOrder
from .written import marks_by_element

MAX_EXAMPLES = 4


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
            m = torch.zeros(n, dtype=torch.bool)
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


@dataclass
class Shadow:
    """Per-storage shadow state for one launch, in elements of `elsize` bytes."""

    ptr: int
    nbytes: int
    elsize: int
    views: list[ArgView]
    init: np.ndarray
    writer: np.ndarray
    reader: np.ndarray
    multi_reader: np.ndarray
    atomic_by: np.ndarray
    member_any: np.ndarray | None  # None: some view covers the whole storage
    stored: bool = False
    written: np.ndarray | None = None  # the allocation's marks across launches, a row per element (written.py)

    @classmethod
    def create(cls, views: list[ArgView]) -> Shadow:
        first = views[0]
        n = first.storage_bytes // first.elsize
        written = marks_by_element(first.home_ptr, first.elsize) if first.was_empty else None
        if first.was_empty:
            # Unwritten: no kernel or torch op marked it, and it still holds the poison (written.py).
            flat = torch.empty(0, dtype=first.tensor.dtype).set_(first.tensor.untyped_storage())
            init = ~poison_mask(flat).numpy()
            if written is not None and not init.all():
                init[: written.shape[0]] |= written.all(axis=1)
        else:
            init = np.ones(n, dtype=bool)
        if any(v.full_cover for v in views):
            member_any = None
        else:
            member_any = np.zeros(n, dtype=bool)
            for v in views:
                member_any |= v.member()
        return cls(first.storage_ptr, first.storage_bytes, first.elsize, views, init,
                   np.full(n, -1, dtype=np.int32), np.full(n, -1, dtype=np.int32), np.zeros(n, dtype=bool),
                   np.full(n, -1, dtype=np.int32), member_any, written=written)

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

    def add(self, count: int, pid: tuple[int, ...], examples: list) -> None:
        self.count += count
        if pid not in self.pids and len(self.pids) < MAX_EXAMPLES:
            self.pids.append(pid)
        for e in examples:
            if len(self.indices) >= MAX_EXAMPLES:
                break
            if e not in self.indices:
                self.indices.append(e)

    def finding(self) -> Finding:
        t = self.tensor
        return Finding(
            check=self.check, message=self.message, kernel=self.kernel, file=self.file, line=self.line,
            pids=self.pids, tensor=t.name if t else "",
            tensor_shape=tuple(t.tensor.shape) if t else (), tensor_strides=tuple(t.tensor.stride()) if t else (),
            indices=self.indices, masked=self.masked, count=self.count)


class Reach(Protocol):
    """Memory a launch reaches beyond its arguments (live.PointerReach: pointers built from integers)."""

    def views_for(self, addrs: np.ndarray) -> list[list[ArgView]]: ...

    def stale(self, addr: int) -> tuple[str, ArgView | None] | None: ...


class LaunchChecker:
    """Checks the accesses of one kernel launch."""

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

    # -- reporting ---------------------------------------------------------------------------------
    def _issue(self, check: str, message: str, where: tuple[str, int], view: ArgView | None,
               masked: bool | None) -> Issue:
        key = (check, where, view.name if view else "", message)
        issue = self.issues.get(key)
        if issue is None:
            issue = self.issues[key] = Issue(check, message, self.kernel, where[0], where[1], view, masked)
        return issue

    def _nearest(self, addr: int) -> tuple[Shadow, int]:
        """The storage nearest to an address outside all of them, and the signed byte distance."""
        best, best_d = self.shadows[0], None
        for s in self.shadows:
            d = addr - s.ptr if addr < s.ptr else addr - (s.ptr + s.nbytes)
            if best_d is None or abs(d) < abs(best_d):
                best, best_d = s, d
        return best, int(best_d if best_d is not None else 0)

    # -- the check ---------------------------------------------------------------------------------
    def access(self, kind: str, ptrs: np.ndarray, mask: np.ndarray | None, pid: tuple[int, int, int],
               linear_pid: int, where: tuple[str, int], how: str = "") -> np.ndarray | None:
        """Check one memory op; returns a mask of lanes safe to perform (None: all requested lanes).
        `how` names the access in bounds findings when "load"/"store" says too little."""
        flat_ptrs = ptrs.reshape(-1)
        has_mask = mask is not None
        how = how or kind
        active = np.broadcast_to(mask, ptrs.shape).reshape(-1) if has_mask else np.ones(flat_ptrs.shape, bool)
        lanes = np.nonzero(active)[0]
        if lanes.size == 0:
            return None
        addrs = flat_ptrs[lanes]
        bad = np.zeros(lanes.size, dtype=bool)
        access = (kind, how, pid, linear_pid, where, has_mask)
        unresolved = self._in_storages(self.shadows, access, addrs, np.arange(lanes.size), bad)
        if unresolved.size and self.reach is not None:
            reached = [Shadow.create(views) for views in self.reach.views_for(addrs[unresolved])]
            if reached:
                self.shadows = sorted(self.shadows + reached, key=lambda s: s.ptr)
                unresolved = self._in_storages(reached, access, addrs, unresolved, bad)
        if unresolved.size:
            bad[unresolved] = True
            if "bounds" in self.checks:
                self._outside_all(addrs[unresolved], how, pid, where, has_mask)
        if not bad.any():
            return None
        safe = active.copy()
        safe[lanes[bad]] = False
        return safe.reshape(ptrs.shape)

    def _in_storages(self, shadows: list[Shadow], access: tuple, addrs: np.ndarray, todo: np.ndarray,
                     bad: np.ndarray) -> np.ndarray:
        """Check the lanes `todo` (indices into addrs) that fall in these storages; returns the others."""
        kind, how, pid, linear_pid, where, has_mask = access
        unresolved = np.ones(todo.size, dtype=bool)
        sub = addrs[todo]
        for s in shadows:
            inside = (sub >= s.ptr) & (sub < s.ptr + s.nbytes)
            if not inside.any():
                continue
            unresolved &= ~inside
            sel = todo[np.nonzero(inside)[0]]
            offs = addrs[sel] - s.ptr
            elems = (offs // s.elsize).astype(np.int64)
            if s.member_any is not None:
                outside_view = ~s.member_any[elems]
                if outside_view.any() and "bounds" in self.checks:
                    ex = elems[outside_view]
                    view = s.view_of(int(ex[0]))
                    issue = self._issue("bounds", f"{how} outside the elements of tensor '{view.name}' "
                                        "(inside its storage, between or past the view's rows)", where, view, has_mask)
                    start = view.tensor.storage_offset()
                    issue.add(int(outside_view.sum()), pid,
                              [f"element offset {int(e) - start} from '{view.name}'[0]" for e in ex[:MAX_EXAMPLES]])
                if outside_view.any():
                    bad[sel[outside_view]] = True
                    keep = ~outside_view
                    sel, elems = sel[keep], elems[keep]
            if elems.size:
                self._shadow_update(kind, s, elems, pid, linear_pid, where)
        return todo[unresolved]

    def _outside_all(self, out: np.ndarray, how: str, pid: tuple[int, int, int], where: tuple[str, int],
                     has_mask: bool) -> None:
        """A bounds finding for addresses outside every storage the launch may touch."""
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
        s, dist = self._nearest(int(out[0]))
        view = s.views[0]
        side = "past the end of" if dist >= 0 else "before the start of"
        issue = self._issue("bounds", f"{how} outside every tensor of the launch: {side} '{view.name}'",
                            where, view, has_mask)
        examples = []
        for a in out[:MAX_EXAMPLES]:
            s2, _ = self._nearest(int(a))
            v2 = s2.views[0]
            element = (int(a) - s2.ptr) // s2.elsize - v2.tensor.storage_offset()
            examples.append(f"'{v2.name}' element {element} (of {v2.tensor.numel()})")
        issue.add(int(out.size), pid, examples)

    def _shadow_update(self, kind: str, s: Shadow, elems: np.ndarray, pid: tuple[int, int, int],
                       linear_pid: int, where: tuple[str, int]) -> None:
        checks = self.checks
        if kind == "load":
            if "uninit" in checks:
                cold = ~s.init[elems]
                if cold.any():
                    ex = elems[cold]
                    view = s.view_of(int(ex[0]))
                    issue = self._issue("uninit", f"load of tensor '{view.name}' memory that nothing has written "
                                        "(allocated with torch.empty)", where, view, None)
                    issue.add(int(cold.sum()), pid, [view.logical_index(int(e)) for e in ex[:MAX_EXAMPLES]])
            if "race" in checks:
                w = s.writer[elems]
                other = self._unordered(s, "writer", elems, w, linear_pid)
                if other.any():
                    ex = elems[other]
                    view = s.view_of(int(ex[0]))
                    issue = self._issue("race", f"load of tensor '{view.name}' elements that another program "
                                        "stores to in the same launch (read/write race)", where, view, None)
                    issue.add(int(other.sum()), pid, [view.logical_index(int(e)) for e in ex[:MAX_EXAMPLES]])
                # The reader kept is the last one ordered after the ones before (the first one, without locks).
                concurrent = self._unordered(s, "reader", elems, s.reader[elems], linear_pid)
                mine = elems[~concurrent]
                s.reader[mine] = linear_pid
                s.multi_reader[elems[concurrent]] = True
                self._stamp(s, "reader", mine)
            return
        # store or atomic
        s.stored = True
        if kind != "store" and "uninit" in checks:
            # An atomic reads the old value before it writes: on torch.empty memory it adds to garbage.
            cold = ~s.init[elems]
            if cold.any():
                ex = elems[cold]
                view = s.view_of(int(ex[0]))
                issue = self._issue("uninit", f"atomic read-modify-write of tensor '{view.name}' memory that "
                                    "nothing has written (allocated with torch.empty): it combines with garbage",
                                    where, view, None)
                issue.add(int(cold.sum()), pid, [view.logical_index(int(e)) for e in ex[:MAX_EXAMPLES]])
        if "race" in checks:
            if kind == "store":
                w = s.writer[elems]
                a = s.atomic_by[elems]
                r = s.reader[elems]
                ww = (self._unordered(s, "writer", elems, w, linear_pid)
                      | self._unordered(s, "atomic", elems, a, linear_pid))
                wr = self._unordered(s, "reader", elems, r, linear_pid) | (s.multi_reader[elems] & (r >= 0))
                for mask, what in ((ww, "stores to tensor '{}' elements that another program also writes "
                                         "in the same launch, without atomics (write/write race; on a 2-D "
                                         "tile, often a missing column mask spilling into the next row)"),
                                   (wr & ~ww, "stores to tensor '{}' elements that another program reads "
                                              "in the same launch (read/write race)")):
                    if mask.any():
                        ex = elems[mask]
                        view = s.view_of(int(ex[0]))
                        issue = self._issue("race", what.format(view.name), where, view, None)
                        issue.add(int(mask.sum()), pid, [view.logical_index(int(e)) for e in ex[:MAX_EXAMPLES]])
            else:
                w = s.writer[elems]
                mixed = self._unordered(s, "writer", elems, w, linear_pid)
                if mixed.any():
                    ex = elems[mixed]
                    view = s.view_of(int(ex[0]))
                    issue = self._issue("race", f"atomic on tensor '{view.name}' elements that another program "
                                        "writes with a plain store in the same launch", where, view, None)
                    issue.add(int(mixed.sum()), pid, [view.logical_index(int(e)) for e in ex[:MAX_EXAMPLES]])
        if kind == "store":
            s.writer[elems] = linear_pid
            self._stamp(s, "writer", elems)
        else:
            s.atomic_by[elems] = linear_pid
            self._stamp(s, "atomic", elems)
        s.init[elems] = True
        if s.written is not None:
            s.written[elems] = True

    # -- order through locks (locks.py): an access ordered before this program's is no race -------------
    def _unordered(self, s: Shadow, role: str, elems: np.ndarray, pids: np.ndarray, linear_pid: int) -> np.ndarray:
        """Per element: its last `role` access was by another program and is not ordered before this one."""
        other = (pids >= 0) & (pids != linear_pid)
        if self.order is not None and self.order.active and other.any():
            other &= ~self.order.ordered(s, role, elems, pids)
        return other

    def _stamp(self, s: Shadow, role: str, elems: np.ndarray) -> None:
        if self.order is not None:
            self.order.stamp(s, role, elems)

    def findings(self) -> list[Finding]:
        return [i.finding() for i in self.issues.values()]
