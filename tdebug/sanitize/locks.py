"""Happens-before through spin locks, for the race check: ThreadSanitizer's rule, restricted to locks.

Kernels that serialise programs with a lock (Triton's layer-norm backward: `while
tl.atomic_cas(lock, 0, 1) == 1: pass` ... `tl.atomic_xchg(lock, 0)`) touch the same elements from
many programs without racing. An acquire is an atomic_cas that found the value it compared with (and
swapped in a different one); the release is the next atomic by the same program on that address.
Each program carries a vector clock: the release publishes the program's clock on the lock, an acquire
joins the lock's clock into the program's, and an access stamped (program p, p's clock t) is ordered
before the current program when t <= its clock of p. Other atomics (counters, flags) order nothing, so
a missing lock, or one lock per program, still races. The interpreter runs programs one after another,
so the current program's clock is the only one alive; finished programs live on in the locks' clocks.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..interpreter import memory_events
from ..interpreter.frames import KernelError

SPIN_LIMIT = 1000  # failed acquires in a row on a lock no running program can release: a deadlock


class LockNeverReleased(KernelError, RuntimeError):
    """A program spins on a lock that a finished program (or itself) still holds: it never ends."""


class LockOrder:
    """One launch's locks and the current program's vector clock."""

    def __init__(self) -> None:
        self.programs = 0
        self.active = False  # no lock acquired yet: nothing is ordered, as without this class
        self.pid = -1
        self.clock = np.zeros(0, dtype=np.int32)  # the current program's vector clock
        self.lock_clocks: dict[int, np.ndarray] = {}
        self.held: dict[int, int] = {}  # lock address -> program holding it
        self.stamps: dict[tuple[int, str], np.ndarray] = {}  # (id(shadow), role) -> clock per element
        self.spins = 0

    # -- programs and locks ------------------------------------------------------------------------
    def enter(self, pid: int, programs: int) -> None:
        """The program the interpreter is running now (of `programs`); a new one starts with a fresh clock."""
        if pid != self.pid:
            self.pid, self.programs = pid, programs
            self.spins = 0
            if self.active:
                self.clock = np.zeros(self.programs, dtype=np.int32)
                self.clock[pid] = 1

    def after_cas(self, addrs: np.ndarray, cmp: np.ndarray, val: np.ndarray, old: np.ndarray) -> None:
        """An atomic_cas ran: lanes that found `cmp` and stored another value took a lock."""
        addrs, old = addrs.reshape(-1), old.reshape(-1)
        cmp = np.broadcast_to(cmp, old.shape).reshape(-1)
        val = np.broadcast_to(val, old.shape).reshape(-1)
        swapped = (old == cmp) & (val != cmp)
        for addr in np.unique(addrs[~swapped]):
            self._failed(int(addr))
        for addr in np.unique(addrs[swapped]):
            if self.held.get(int(addr)) == self.pid:
                self.release(int(addr))  # atomic_cas(lock, 1, 0): an unlock
            else:
                self.acquire(int(addr))

    def after_atomic(self, addrs: np.ndarray, mask: np.ndarray | None) -> None:
        """An atomic_rmw ran (atomic_xchg, atomic_add, ...): on a lock this program holds, a release."""
        if not self.held:
            return
        flat = addrs.reshape(-1)
        if mask is not None:
            flat = flat[np.broadcast_to(mask, addrs.shape).reshape(-1)]
        for addr in np.unique(flat):
            if self.held.get(int(addr)) == self.pid:
                self.release(int(addr))

    def acquire(self, addr: int) -> None:
        if not self.active:
            self.active = True
            self.clock = np.zeros(self.programs, dtype=np.int32)
            self.clock[self.pid] = 1
        self.spins = 0
        self.held[addr] = self.pid
        published = self.lock_clocks.get(addr)
        if published is not None:
            np.maximum(self.clock, published, out=self.clock)

    def release(self, addr: int) -> None:
        del self.held[addr]
        published = self.lock_clocks.get(addr)
        self.lock_clocks[addr] = self.clock.copy() if published is None else np.maximum(published, self.clock)
        self.clock[self.pid] += 1

    def _failed(self, addr: int) -> None:
        holder = self.held.get(addr)
        if holder is None:
            return
        self.spins += 1
        if self.spins >= SPIN_LIMIT:
            whom = "itself" if holder == self.pid else f"program {holder}, which ended without releasing it"
            raise LockNeverReleased(f"spin lock never released: program {self.pid} spins on a lock held by {whom}; "
                                    "on a GPU it would spin forever (a missing tl.atomic_xchg(lock, 0)?)")

    # -- epochs of shadow elements ---------------------------------------------------------------------
    def now(self) -> int:
        return int(self.clock[self.pid]) if self.active else 1

    def stamp(self, shadow, role: str, elems: np.ndarray) -> None:
        """Record the current program's clock on elements it accessed as `role` (writer, reader, atomic)."""
        if self.active:
            self._stamps(shadow, role)[elems] = self.now()

    def ordered(self, shadow, role: str, elems: np.ndarray, pids: np.ndarray) -> np.ndarray:
        """Per element: was the last `role` access (by program pids[i]) ordered before the current program?"""
        if not self.active:
            return np.zeros(elems.shape, dtype=bool)
        known = pids >= 0
        seen = np.zeros(elems.shape, dtype=np.int32)
        seen[known] = self.clock[pids[known]]
        return known & (self._stamps(shadow, role)[elems] <= seen)

    def _stamps(self, shadow, role: str) -> np.ndarray:
        key = (id(shadow), role)
        stamps = self.stamps.get(key)
        if stamps is None:
            # Every access before the first acquire happened at its program's first clock value.
            stamps = self.stamps[key] = np.ones(shadow.elements, dtype=np.int32)
        return stamps


class _LockListener:
    """Follows atomic_cas / atomic_rmw results (interpreter.memory_events, after the op ran)."""

    def __init__(self, current: Callable) -> None:
        self.current = current

    def after(self, access: memory_events.Access, result) -> None:
        checker = self.current()
        locks = checker.order if checker is not None else None
        if locks is None:
            return
        arguments = access.call.arguments
        if access.op == "create_atomic_cas":
            locks.after_cas(np.asarray(arguments["ptr"].data), np.asarray(arguments["cmp"].data),
                            np.asarray(arguments["val"].data), np.asarray(result.data))
        elif locks.held:
            mask = arguments.get("mask")
            locks.after_atomic(np.asarray(arguments["ptr"].data), None if mask is None else np.asarray(mask.data))


def install(current: Callable) -> None:
    """Follow atomic_cas / atomic_rmw results into the running launch's LockOrder (`current()`: the
    launch's checker, or None between launches), outside the sanitizer's own check of these ops."""
    memory_events.listen("locks", _LockListener(current), ("create_atomic_cas", "create_atomic_rmw"))
