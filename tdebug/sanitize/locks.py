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

Flags (decoupled look-back: a program stores its partial result, then a flag word, with plain or `.cg` stores;
later programs spin on `tl.load(flag, volatile=True)` until it is set, then read the result): in a launch whose
kernel loads with volatile=True, every store or atomic op ends an epoch of its program (tick), a volatile load
acquires from the program that wrote each element it read, as of that store (its clock then: the snapshots a
program keeps at its own acquires), and an access stamped before that store in the writer's order is ordered
before the reader. A flag stored before the data it guards still races. A program that reads the same flag
words SPIN_LIMIT times with nothing stored in between spins forever on the serial engine, where every earlier
program has run: FlagNeverSet (a hang on a GPU), not a race.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..interpreter.frames import KernelError
from ..interpreter.hooks import memory_events

SPIN_LIMIT = 1000  # failed acquires in a row on a lock no running program can release: a deadlock
# Flags: programs' clocks kept at their acquires (for the readers of what they published after) only in launches
# of at most this many programs (each snapshot a clock of every program); beyond, a reader follows each writer's
# own accesses only, not what that writer had acquired.
HISTORY_PROGRAMS = 4096


class LockNeverReleased(KernelError, RuntimeError):
    """A program spins on a lock that a finished program (or itself) still holds: it never ends."""


class FlagNeverSet(KernelError, RuntimeError):
    """A program spins on a volatile load of a flag no program that ran before it set: it never ends."""


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
        self.flags = False  # the kernel loads with volatile=True: stores publish, volatile loads acquire
        self.history: dict[int, list[tuple[int, np.ndarray]]] = {}  # program -> (its epoch, its clock) at acquires
        self.polled: tuple[bytes, bytes] | None = None  # the last volatile load's addresses and values
        self.polls = 0  # volatile loads in a row of the same words with the same values, nothing stored

    def use_flags(self) -> None:
        """This launch's kernel loads with volatile=True: order from the start (every program's first epoch)."""
        self.flags = self.active = True

    # -- programs and locks ------------------------------------------------------------------------
    def enter(self, pid: int, programs: int) -> None:
        """The program the interpreter is running now (of `programs`); a new one starts with a fresh clock."""
        if pid != self.pid:
            self.pid, self.programs = pid, programs
            self.spins = 0
            self.polled, self.polls = None, 0
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

    # -- flags: stores publish, volatile loads acquire ----------------------------------------------------
    def tick(self) -> None:
        """A store or atomic of the current program ended: its next accesses are a later epoch."""
        if self.flags and self.pid >= 0:
            self.clock[self.pid] += 1
            self.polled, self.polls = None, 0

    def acquire_from(self, shadow, elems: np.ndarray, writers: np.ndarray, role: str = "writer") -> None:
        """A volatile load read elems, last stored by programs `writers` (-1: none in this launch; role "atomic":
        by an atomic): the current program now follows each writer as of the store it read."""
        if not self.flags or self.pid < 0:
            return
        other = (writers >= 0) & (writers != self.pid)
        if not other.any():
            return
        epochs = self._stamps(shadow, role)[elems[other]]
        pairs = np.unique(np.stack([writers[other].astype(np.int64), epochs.astype(np.int64)]), axis=1)
        joined = False
        for w, e in pairs.T:
            w, e = int(w), int(e)
            if self.clock[w] >= e:
                continue
            for at, clock in reversed(self.history.get(w, ())):
                if at <= e:
                    np.maximum(self.clock, clock, out=self.clock)
                    break
            self.clock[w] = max(int(self.clock[w]), e)
            joined = True
        if joined and self.programs <= HISTORY_PROGRAMS:
            self.history.setdefault(self.pid, []).append((int(self.clock[self.pid]), self.clock.copy()))

    def polled_again(self, addrs: np.ndarray, values: np.ndarray, describe: Callable[[], str]) -> None:
        """A volatile load ran: the same words with the same values as the last one, nothing stored since, over
        and over, is a program spinning on a flag that nothing running will set."""
        if not self.flags:
            return
        seen = (np.ascontiguousarray(addrs).tobytes(), np.ascontiguousarray(values).tobytes())
        if seen != self.polled:
            self.polled, self.polls = seen, 1
            return
        self.polls += 1
        if self.polls >= SPIN_LIMIT:
            raise FlagNeverSet(f"hang: program {self.pid} spins on a volatile load of {describe()} that no program "
                               f"before it set ({self.polls} reads of the same values, nothing stored in between); "
                               "on a GPU it waits forever (a flag never published, or published by a later "
                               "program that may never run)")

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
    """Follows atomic_cas / atomic_rmw results (interpreter.hooks.memory_events, after the op ran)."""

    def __init__(self, current: Callable) -> None:
        self.current = current

    def after(self, access: memory_events.Access, result) -> None:
        checker = self.current()
        locks = checker.order if checker is not None else None
        if locks is None:
            return
        arguments = access.call.arguments
        if access.op == "create_masked_load":
            if locks.flags and arguments.get("is_volatile"):
                addrs = np.asarray(arguments["ptrs"].data)
                locks.polled_again(addrs, np.asarray(result.data), lambda: checker.describe(addrs))
            return
        if access.op == "create_atomic_cas":
            locks.after_cas(np.asarray(arguments["ptr"].data), np.asarray(arguments["cmp"].data),
                            np.asarray(arguments["val"].data), np.asarray(result.data))
        elif locks.held:
            mask = arguments.get("mask")
            locks.after_atomic(np.asarray(arguments["ptr"].data), None if mask is None else np.asarray(mask.data))


def install(current: Callable) -> None:
    """Follow atomic_cas / atomic_rmw results into the running launch's LockOrder (`current()`: the
    launch's checker, or None between launches), outside the sanitizer's own check of these ops."""
    memory_events.listen("locks", _LockListener(current), ("create_atomic_cas", "create_atomic_rmw",
                                                             "create_masked_load"))
