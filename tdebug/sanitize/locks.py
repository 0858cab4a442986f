"""Happens-before through spin locks, for the race check: ThreadSanitizer's rule, restricted to locks.

Kernels that serialise programs with a lock (Triton's layer-norm backward: `while
tl.atomic_cas(lock, 0, 1) == 1: pass` ... `tl.atomic_xchg(lock, 0)`) touch the same elements from
many programs without racing. An acquire is an atomic_cas that found the value it compared with (and
swapped in a different one); the release is the next atomic by the same program on that address.
Each program carries a vector clock: the release publishes the program's clock on the lock, an acquire
joins the lock's clock into the program's, and an access stamped (program p, p's clock t) is ordered
before the current program when t <= its clock of p. Other atomics (counters, flags) order nothing, so
a missing lock, or one lock per program, still races. The serial engine runs programs one after another,
so the current program's clock is the only one alive; finished programs live on in the locks' clocks. The
batched engine runs a batch's memory ops one program at a time once its programs took their locks (each its
own: interpreter/batched/atomic_order.py): the clocks of the batch's other programs wait beside the current
one (enter), and a batch undone takes its locks and stamps back (checkpoint / rollback). Before that, the
lanes of the batch's programs (none holding a lock) are stamped at their first clock value and ordered after
nothing.

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

from ..interpreter.batched import program_axis
from ..interpreter.batched.launch_replay import NOTHING
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
        # The batched engine runs a batch's memory ops one program at a time, op by op: the batch's other
        # programs' clocks wait here (program -> clock, spins) while one runs. `batch`: the batch they are of.
        self.batch: int | None = None
        self.waiting: dict[int, tuple[np.ndarray, int]] = {}
        self.undo: list | None = None  # while a batch runs: the stamps it overwrote (checkpoint / rollback)

    def use_flags(self) -> None:
        """This launch's kernel loads with volatile=True: order from the start (every program's first epoch)."""
        self.flags = self.active = True

    # -- programs and locks ------------------------------------------------------------------------
    def enter(self, pid: int, programs: int, batch: int | None = None) -> None:
        """The program the interpreter is running now (of `programs`); a new one starts with a fresh clock. In a
        batch of the batched engine (`batch`: its number) a program of it seen before picks up its own again."""
        if batch != self.batch:  # another batch, or the serial engine: the programs waiting have ended
            self.batch, self.waiting = batch, {}
        if pid == self.pid:
            return
        if batch is not None and self.pid >= 0:
            self.waiting[self.pid] = (self.clock, self.spins)
        self.pid, self.programs = pid, programs
        self.polled, self.polls = None, 0
        self.clock, self.spins = self.waiting.pop(pid, (np.zeros(0, dtype=np.int32), 0))
        self._fresh_clock()

    def lanes_of(self, batch: int) -> None:
        """The lanes of every program of batch `batch` are about to be checked at once: the programs waiting (and
        the one running) are of that batch, or none is."""
        if batch != self.batch:
            self.batch, self.waiting = batch, {}
            self.pid, self.clock, self.spins = -1, np.zeros(0, dtype=np.int32), 0

    def _fresh_clock(self) -> None:
        """Once a lock was taken, a program without a clock of its own starts its first epoch."""
        if self.active and self.clock.size != self.programs:
            self.clock = np.zeros(self.programs, dtype=np.int32)
            self.clock[self.pid] = 1

    # -- undoing a batch (the batched engine runs a batch again, split, or on the serial engine) ------------------
    def checkpoint(self) -> tuple:
        self.undo = []
        return dict(self.lock_clocks), dict(self.held), self.active

    def rollback(self, token: tuple) -> None:
        for stamps, elems, old in reversed(self.undo or []):
            stamps[elems] = old
        self.lock_clocks, self.held, self.active = token
        self.undo = None
        self.pid, self.batch, self.waiting = -1, None, {}
        self.clock, self.spins = np.zeros(0, dtype=np.int32), 0

    def commit(self) -> None:
        self.undo = None

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
        self.active = True
        self._fresh_clock()
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

    def stamp(self, shadow, role: str, elems: np.ndarray, lane_pids: np.ndarray | None = None) -> None:
        """Record the current program's clock on elements it accessed as `role` (writer, reader, atomic); with
        lane_pids (the lanes of a batch: a program per lane, in program order), each lane's program's own; on an
        element of several lanes, the last one's."""
        if self.active:
            stamps = self._stamps(shadow, role)
            if self.undo is not None:
                self.undo.append((stamps, elems, stamps[elems]))
            if lane_pids is None:
                stamps[elems] = self.now()
                return
            now = np.ones(lane_pids.size, dtype=np.int32)  # a program that took no lock: its first epoch
            for p, run, clock in self._lane_runs(lane_pids):
                now[run] = clock[p]
            stamps[elems] = now

    def ordered(self, shadow, role: str, elems: np.ndarray, pids: np.ndarray,
                lane_pids: np.ndarray | None = None) -> np.ndarray:
        """Per element: was the last `role` access (by program pids[i]) ordered before the current program (with
        lane_pids: before each lane's program)?"""
        if not self.active:
            return np.zeros(elems.shape, dtype=bool)
        known = pids >= 0
        seen = np.zeros(elems.shape, dtype=np.int32)
        if lane_pids is None:
            seen[known] = self.clock[pids[known]]
        else:  # a program that took no lock knows no other program's clock (0): ordered after nothing
            for _, run, clock in self._lane_runs(lane_pids):
                mine = pids[run]
                seen[run] = np.where(mine >= 0, clock[np.maximum(mine, 0)], 0)
        return known & (self._stamps(shadow, role)[elems] <= seen)

    def _lane_runs(self, lane_pids: np.ndarray):
        """(program, its lanes as a slice or an index, its clock) for each program of a batch's lanes that holds a
        clock of its own (it took a lock: the one running, or one waiting); lane_pids in program order."""
        clocks = dict(self.waiting)
        if self.pid >= 0:
            clocks[self.pid] = (self.clock, self.spins)
        clocks = {p: c for p, (c, _) in clocks.items() if c.size == self.programs and self.programs}
        if not clocks:
            return
        flat = lane_pids.reshape(-1)
        if flat.size and bool((flat[1:] >= flat[:-1]).all()):  # runs, in program order
            starts = np.concatenate(([0], np.flatnonzero(flat[1:] != flat[:-1]) + 1, [flat.size])).tolist()
            for a, b in zip(starts, starts[1:]):
                p = int(flat[a])
                if p in clocks:
                    yield p, slice(a, b), clocks[p]
            return
        for p in np.unique(flat).tolist():
            if p in clocks:
                yield p, np.flatnonzero(flat == p), clocks[p]

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
        batch = program_axis.lane_programs()
        if access.op == "create_atomic_cas":
            operands = [np.asarray(arguments[k].data) for k in ("ptr", "cmp", "val")] + [np.asarray(result.data)]
            if batch is None:
                locks.after_cas(*operands)
                return
            for program, programs, lanes in _programs_of_lanes(batch, operands):
                locks.enter(program, programs, batch.serial)
                locks.after_cas(*lanes)
        elif locks.held:
            ptr, mask = np.asarray(arguments["ptr"].data), arguments.get("mask")
            mask = None if mask is None else np.asarray(mask.data)
            if batch is None:
                locks.after_atomic(ptr, mask)
                return
            held = set(locks.held.values())
            for program, programs, lanes in _programs_of_lanes(batch, [ptr] + ([] if mask is None else [mask])):
                if program in held:  # (the others hold no lock to release)
                    locks.enter(program, programs, batch.serial)
                    locks.after_atomic(lanes[0], None if mask is None else lanes[1])


    def replay_step(self, access: memory_events.Access, recording):
        """A replayed launch (launch_replay.py) has no atomic and no volatile load: nothing of a lock to follow."""
        if access.kind == "atomic" or access.call.arguments.get("is_volatile"):
            return None
        return NOTHING


def _programs_of_lanes(batch, operands: list[np.ndarray]):
    """(linear program id, the launch's programs, its rows of each operand) per program of a batch's memory op, in
    program order (the operands broadcast to the batch's shape: a row per program)."""
    from triton.runtime.interpreter import interpreter_builder

    gx, gy, gz = interpreter_builder.grid_dim
    shape = np.broadcast_shapes((batch.size,), *(np.shape(o)[:1] for o in operands))
    full = [np.broadcast_to(o, shape + np.shape(o)[1:]) if np.ndim(o) else np.broadcast_to(o, shape)
            for o in operands]
    linear = batch.linear_pids(gx, gy)
    for i in range(batch.size):
        yield int(linear[i]), gx * gy * gz, [o[i] for o in full]


def install(current: Callable) -> None:
    """Follow atomic_cas / atomic_rmw results into the running launch's LockOrder (`current()`: the
    launch's checker, or None between launches), outside the sanitizer's own check of these ops."""
    memory_events.listen("locks", _LockListener(current), ("create_atomic_cas", "create_atomic_rmw",
                                                             "create_masked_load"))
