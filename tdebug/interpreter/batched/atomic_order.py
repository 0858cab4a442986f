"""Which atomics a batch runs for all its programs at once, and when it splits or hands over to the serial engine.

The batched engine runs a kernel's ops in op-major order (every program's first atomic, then every program's
second); the serial engine in program-major order. The two agree on memory and on every value an atomic returns
when the programs of a batch touch disjoint addresses with their atomics, or when each program makes a single
atomic op (Triton applies an op's lanes in order, program by program: the serial order). So:
- a batch's first atomic_rmw runs whatever addresses it touches (a shared counter, split-K partial sums);
- an atomic_cas, and any atomic after the batch's first, runs when no address is touched by two programs among
  the batch's atomics so far; otherwise the batch splits into runs of consecutive programs that touch disjoint
  addresses (Divergent: grid_loop runs the runs one after the other, in the serial order) - the groups of a
  spin lock per group, as Triton's layer-norm backward takes them - or, where every run would be one program
  (one lock, or a ticket counter, for all), hands the launch to the serial engine;
- a program repeating an atomic of the same kind on an address it already touched in this batch (a spin on a
  flag, a loop adding into one place) and an atomic_cas that found another value than the one it compared with
  (a lock taken: only a program outside the batch, or none, can free it) hand the launch to the serial engine
  (Unported), which spins, counts spins and finds a lock never released as it always did.
The sanitizer follows happens-before through the locks per program, the lanes of a batch each with its program's
clock (sanitize/locks.py).
"""

from __future__ import annotations

import numpy as np

from ..versions import bind
from .program_axis import MARK, Batch, Divergent, Unported


class AtomicConflict(Divergent):
    """Programs of a batch touch one address with their atomics: `values` numbers the runs of consecutive programs
    that touch none in common (a lock's groups); grid_loop takes no larger batches than the first run after."""


ROW_BITS = 13  # a batch row in a key's low bits (grid_loop.MAX_BATCH = 4096 rows fit)


def admit(batch: Batch, name: str, original, args: tuple, kwargs: dict) -> None:
    """Before an atomic (create_atomic_rmw / create_atomic_cas) runs for the programs of `batch`: record the
    addresses it touches per program; raise Divergent or Unported where op-major order would not be the serial
    engine's."""
    root = batch.root or batch
    arguments = bind(original, args, kwargs).arguments
    kind = f"rmw{arguments['rmwOp']}" if name == "create_atomic_rmw" else "cas"
    log = root.atomic_log
    keys = _Keys(batch, arguments["ptr"], arguments.get("mask"))
    if name == "create_atomic_rmw" and not log:  # (its addresses read only if another atomic follows)
        log.append((kind, keys))
        return
    for earlier_kind, earlier in log:
        if earlier_kind == kind and np.intersect1d(earlier.keys(), keys.keys(), assume_unique=True).size:
            raise Unported("an atomic repeated by a program on one address (a spin on a flag, a loop adding "
                           "into one place)")
    log.append((kind, keys))
    every = np.unique(np.concatenate([k.keys() for _, k in log]))
    addrs = every >> np.uint64(ROW_BITS)
    if not addrs.size or np.unique(addrs).size == addrs.size:
        return  # no address touched by two programs
    if root.branching:  # an atomic in each branch of an `if`: the programs that agree on it together
        raise Divergent(root.trip_counts.copy())
    runs = _segments(every, root.size)
    if runs[-1] == root.size - 1:  # every program its own run (one counter, one lock): the serial engine
        raise Unported("atomics of every program on one address (more than one per program)")
    raise AtomicConflict(runs)


def check_cas(batch: Batch, cmp, result) -> None:
    """After an atomic_cas ran for the programs of a batch (result: the batch's, or a list of each program's with
    None where it did not run): a lane that found another value than `cmp` hands the launch to the serial engine."""
    if isinstance(result, list):
        pairs = [(out.data, cmp.data[i] if getattr(cmp, MARK, False) else cmp.data)
                 for i, out in enumerate(result) if out is not None]
        found = all(np.array_equal(np.broadcast_to(want, np.shape(old)), old) for old, want in pairs)
    else:
        old = np.asarray(result.data)
        want = np.asarray(cmp.data)
        want = np.broadcast_to(want if getattr(cmp, MARK, False) else want[None], old.shape)
        if batch.active is not None:  # the programs in their loops only (the others hold stand-ins)
            old, want = old[batch.active], want[batch.active]
        found = bool((old == want).all())
    if not found:
        raise Unported("an atomic_cas that found its lock taken (a spin)")


class _Keys:
    """The addresses an atomic op touches per program of a batch, read when first asked for (a batch's only atomic,
    a tile of split-K partial sums, never is): the operands are the op's own, which nothing changes after."""

    def __init__(self, batch: Batch, ptr, mask) -> None:
        active = None if batch.active is None else batch.active.copy()  # (a loop's predicate changes in place)
        self.args: tuple | None = (batch, ptr, mask, active)
        self._keys: np.ndarray | None = None

    def keys(self) -> np.ndarray:
        if self._keys is None:
            batch, ptr, mask, active = self.args
            self._keys, self.args = _keys(batch, ptr, mask, active), None
        return self._keys


def _keys(batch: Batch, ptr, mask, active: np.ndarray | None) -> np.ndarray:
    """address << ROW_BITS | root row, for every lane the atomic runs for (unique)."""
    data = np.asarray(ptr.data)
    shape = (batch.size,) + (data.shape[1:] if getattr(ptr, MARK, False) else data.shape)
    addrs = np.broadcast_to(data if getattr(ptr, MARK, False) else data[None], shape)
    on = np.ones(shape, dtype=bool)
    if mask is not None:
        m = np.asarray(mask.data)
        on &= np.broadcast_to(m if getattr(mask, MARK, False) else m[None], shape).astype(bool)
    if active is not None:
        on &= active.reshape((-1,) + (1,) * (len(shape) - 1))
    # (a compacted iteration: its programs' rows in the batch grid_loop runs)
    rows = np.arange(batch.size) if batch.root is None else batch.root_rows
    rows = np.broadcast_to(np.asarray(rows, dtype=np.uint64).reshape((-1,) + (1,) * (len(shape) - 1)), shape)
    return np.unique((addrs[on].astype(np.uint64) << np.uint64(ROW_BITS)) | rows[on])


def _segments(keys: np.ndarray, programs: int) -> np.ndarray:
    """Per program of the batch, the number of its run: runs of consecutive programs no two of which touch
    one address (a program that touches none joins the run it falls in)."""
    rows = (keys & np.uint64((1 << ROW_BITS) - 1)).astype(np.int64)
    addrs = keys >> np.uint64(ROW_BITS)
    order = np.argsort(rows, kind="stable")
    rows, addrs = rows[order], addrs[order]
    starts = np.searchsorted(rows, np.arange(programs + 1))
    values = np.zeros(programs, dtype=np.int64)
    run, seen = 0, set()
    for r in range(programs):
        mine = addrs[starts[r]:starts[r + 1]].tolist()
        if any(a in seen for a in mine):
            run, seen = run + 1, set()
        seen.update(mine)
        values[r] = run
    return values
