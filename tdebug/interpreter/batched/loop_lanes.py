"""A loop's iterations as lanes of one batch: a `for` whose iterations depend on each other only through
accumulators runs its body once per chunk of iterations, every value with a row per (program, iteration).

predicated_loops' rewrite marks such loops (lane_accumulators: every name the body carries from one iteration to
the next is bound by one `acc += term` / `acc = acc + term` or a recurrence `acc = acc * scale + term`, and there
is no loop inside) and turns each accumulator's update into accumulate(). When the programs of a batch agree on
the loop's trip count, lane_loop() hands the chunks out: for each, a batch of P x T lanes (program p's iteration t
in row p * T + t, every lane naming its program), the values the body reads widened to it (predicated_loops'
compaction with rows repeated), and the loop variable a LaneCounter (each lane's iteration). Each op of the body
then runs once for the chunk; accumulate() folds the chunk's terms into the accumulator in iteration order, one op
per iteration on the batch of programs (the same ops, roundings, checks and lines as the serial engine's
`acc += term`, or its product and sum); at the chunk's end each name the body bound takes its last iteration's
value. Programs that disagree on the trip count (a varlen batch) run one ragged chunk: program p's iterations in
rows offsets[p] onwards, the fold's iterations past a program's last on a part of the batch of the others.

Exactness is checked, not assumed. The loop variable, an int in the serial engine (loop_counters.LoopCounter),
keeps Python's arithmetic with ints and Python scalars' type rules against tensors, and refuses any other use
(LaneCounter; the semantic's binary-op check). Every load and store of a chunk is noted: a store that another
iteration's load or another store op reaches (same address, another iteration) would see another order than
the serial engine's. An atomic, lanes that disagree on a Python bool or index, an error: each raises
program_axis.LanesRefused, and grid_loop runs the batch again from its start, after undoing it, with that loop
iterating as written (from then on, in the process).
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from ... import settings
from ..semantics.loop_counters import LoopCounter
from ..versions import bind, patcher
from . import lane_folds, predicated_loops, program_axis
from .launch import current_launch
from .program_axis import MARK, LanesRefused, mark

patch = patcher("predicated_loops")

MAX_TRIPS = 1 << 14  # iterations in a chunk, at most
WIDTH = 4  # a chunk's lanes hold up to this many times a batch's elements (TDEBUG_BATCH_ELEMENTS)
# Lanes pay where an op's elements are few (its cost is Triton's front end and tdebug's wrappers): a batch whose
# programs' blocks together hold more than this share of TDEBUG_BATCH_ELEMENTS iterates as written (its ops are
# numpy over whole tiles already, and a batch's dense rows keep their strided fast path, batch_memory.Rows).
WORTH = 1 / 16
LOADS = {"create_load": False, "create_masked_load": False, "create_store": True, "create_masked_store": True}


def lanes(batch, begins: np.ndarray, trip_counts: np.ndarray, step: int, accumulators: tuple[str, ...], key: tuple,
          target: str):
    """The loop's iterable (predicated_loops.LANES): chunks of its iterations as lanes (every program of the batch
    making its own trip count of them, from its own start), or None where the loop iterates as written (fewer than
    two iterations, refused before, a batch that is itself a part of one). Programs that disagree on the trip
    count (a varlen batch's sequences) run as lanes in one chunk, ragged (program p's iterations in rows
    offsets[p] ... offsets[p] + trips[p] - 1), where each program makes at least one and the chunk holds them all."""
    from .grid_loop import BATCH_ELEMENTS, REFUSED_LANES

    if key in REFUSED_LANES or not program_axis.PER_LANE or batch.root is not None \
            or batch.lanes is not None or batch.whole is not None:
        return None
    block = program_axis.largest()
    if int(trip_counts.max(initial=0)) < 2:
        return None
    if (trip_counts == trip_counts[0]).all():
        if batch.size * block > WORTH * BATCH_ELEMENTS:
            return None  # not worth lanes (the blocks' size known from an earlier op or launch)
        return _chunks(batch, begins, int(trip_counts[0]), step, accumulators, key, target)
    # Ragged lanes pay where the iterations past the shortest program's end would run predicated on programs whose
    # blocks are small together; they need every program in the loop, and the lanes' blocks within a chunk's size.
    low = int(trip_counts.min())
    tail = int(np.count_nonzero(trip_counts > low))
    if low < 1 or not block or tail * block > WORTH * BATCH_ELEMENTS or int(trip_counts.max()) > MAX_TRIPS \
            or int(trip_counts.sum()) * block > WIDTH * BATCH_ELEMENTS:
        return None
    return _ragged(batch, begins, trip_counts, step, accumulators, key, target)


def _ragged(batch, begins: np.ndarray, trips: np.ndarray, step: int, accumulators: tuple[str, ...], key: tuple,
            target: str):
    """The one chunk of a loop whose programs make different numbers of iterations: program p's iteration t in
    lane offsets[p] + t."""
    from .grid_loop import STATS

    last = begins + (trips - 1) * step
    batch.pending_lanes = Lanes(batch, trips, accumulators, key, target, last)
    STATS.lane_chunk(int(trips.max()))
    rows = np.repeat(np.arange(batch.size), trips)
    within = np.arange(rows.size, dtype=np.int64) - np.repeat(np.cumsum(trips) - trips, trips)
    yield lane_counter(begins[rows] + within * step, key)
    batch.pending_lanes = None
    batch.loop_scalars[(key[0], target)] = program_axis.LoopValues(last, np.ones(batch.size, dtype=bool))


def _chunks(batch, begins: np.ndarray, trips: int, step: int, accumulators: tuple[str, ...], key: tuple,
            target: str):
    from .grid_loop import BATCH_ELEMENTS, STATS

    done = 0
    uniform = bool((begins == begins[0]).all())
    while done < trips:
        elements = batch.size * program_axis.largest()
        # Blocks of unknown size (no memory op yet: the first iteration tells) or too many elements for lanes to
        # pay: one iteration as written (a LoopCounter), or as lanes of one where each program has its own counter
        size = 1 if not elements or elements > WORTH * BATCH_ELEMENTS else WIDTH * BATCH_ELEMENTS // elements
        size = max(1, min(trips - done, MAX_TRIPS, size))
        if size == 1 and uniform:
            yield int(begins[0] + done * step)
            done += 1
            continue
        last = begins + (done + size - 1) * step  # each program's value of the variable after the chunk
        batch.pending_lanes = Lanes(batch, np.full(batch.size, size, dtype=np.int64), accumulators, key, target,
                                    last)
        STATS.lane_chunk(size)
        # program p's iteration done + t in lane p * size + t
        values = begins[:, None] + (done + np.arange(size, dtype=np.int64))[None, :] * step
        yield lane_counter(values.reshape(-1), key)
        batch.pending_lanes = None
        done += size
    # After the loop each program's variable holds its last iteration's value (what store records name it by).
    batch.loop_scalars[(key[0], target)] = program_axis.LoopValues(begins + (trips - 1) * step,
                                                                    np.ones(batch.size, dtype=bool))


class Lanes:
    """One chunk of a loop's iterations as lanes: the batch it widens, how many iterations each program makes in
    it (`counts`; `trips` the one count of all where they agree, else None: a ragged chunk), the loop's
    accumulators, the lanes' batch once the body began, and the loads and stores it made."""

    def __init__(self, batch, counts: np.ndarray, accumulators: tuple[str, ...], key: tuple, target: str,
                 last: np.ndarray) -> None:
        self.batch, self.counts, self.accumulators, self.key = batch, counts, accumulators, key
        self.trips = int(counts[0]) if (counts == counts[0]).all() else None
        self.offsets = np.cumsum(counts) - counts  # program p's first lane
        self.target, self.last = target, last
        self.before: dict = {}
        self.part = None
        self.accesses: list[tuple[bool, int, np.ndarray, np.ndarray | None, int]] = []

    def refuse(self, why: str) -> None:
        raise LanesRefused(self.key, why)

    # -- the chunk's start and end (predicated_loops.compact and end call these) ---------------------------------
    def widen(self, frame_locals: dict, reads: tuple[str, ...], scalars: tuple[str, ...]) -> dict:
        """The lanes' batch current, and every per-program value the body reads (and every per-program integer
        scalar of the frame: what store records read) widened to it, by name for the rewrite to rebind."""
        batch = self.batch
        rows = np.repeat(np.arange(batch.size), self.counts)
        wide = {}
        for name in dict.fromkeys(reads + scalars):
            if name in self.accumulators or name not in frame_locals:
                continue
            value = frame_locals[name]
            kind = predicated_loops._cuttable(value)
            if kind is None:
                if name in reads:
                    self.refuse(f"`{name}` holds what lanes cannot carry")
                continue
            if kind and np.shape(value.handle.data)[0] == batch.size:
                wide[name] = predicated_loops._cut(value, rows)
        part = program_axis.Batch(batch.pids[:, rows], effects=batch.effects, atomics=batch.atomics,
                                  memory=batch.memory, serial=batch.serial)
        part.loop_scalars = {k: v.of_rows(rows) for k, v in batch.loop_scalars.items()}
        part.lanes = self
        self.part = part
        batch.open_lanes = self
        current_launch().batch = part
        return wide

    def narrow(self, frame_locals: dict, names: tuple[str, ...], own: tuple[str, ...], reads: tuple[str, ...],
               scalars: tuple[str, ...]) -> dict:
        """The batch of programs current again; each name the body bound takes its last iteration's value (an
        accumulator holds its folded total already), the names it only read their values from before."""
        import triton.language as tl

        batch, part = self.batch, self.part
        current_launch().batch = batch
        batch.effects, batch.atomics = part.effects, part.atomics
        self._check_memory()
        last = self.offsets + self.counts - 1
        out = {}
        for name in names:
            if name not in frame_locals:
                if name in self.before:
                    self.refuse(f"`{name}` was unbound by the iteration")
                continue
            value = frame_locals[name]
            if name in self.accumulators:
                out[name] = value
                continue
            if isinstance(value, tl.tensor) and getattr(value.handle, MARK, False) \
                    and np.shape(value.handle.data)[0] == part.size:
                if name in own and value.type.is_block():
                    continue  # used in the body only: the next chunk binds it again before reading it
                if type(value) is _counter_class():
                    self.refuse(f"`{name}` holds the loop's counter after the loop")
                value = predicated_loops._cut(value, last)
            out[name] = value
        out.update({name: self.before[name] for name in reads + scalars if name not in names and name in self.before})
        out[self.target] = _after(self.last)
        batch.open_lanes = None
        return out

    # -- the body's accumulators -------------------------------------------------------------------------------
    def fold(self, total: Any, term: Any, op) -> Any:
        """`total op term` once per iteration of the chunk, in order, on the batch of programs: the term's rows of
        each iteration in turn."""
        counter = _counter_class()
        if type(term) is counter or type(total) is counter:
            self.refuse("an accumulator sums the loop's counter")
        wide = self._wide(term)
        if wide and self.trips is not None:
            whole = lane_folds.fold(total, term, op, self.batch.size, self.trips)
            if whole is not None:  # fp32 with nothing to find: numpy over the chunk, the same bits
                from .grid_loop import STATS

                STATS.lane_fold()
                return whole
        return self._iterations(total, lambda total, rows: op(total, self._row(term, wide, rows)))

    def fold_scaled(self, product: predicated_loops.Scaled, term: Any) -> Any:
        """A recurrence's `total = total * scale + term` once per iteration of the chunk, in order, on the batch
        of programs: the product and the sum as the serial engine's ops, each iteration's scale and term rows."""
        counter = _counter_class()
        total, scale = product.total, product.scale
        if counter in (type(total), type(term), type(scale)):
            self.refuse("a recurrence of the loop's counter")
        wide_scale, wide_term = self._wide(scale), self._wide(term)

        def step(total: Any, rows: np.ndarray) -> Any:
            total = product.product(total, self._row(scale, wide_scale, rows))
            return total + self._row(term, wide_term, rows)

        return self._iterations(total, step)

    def _wide(self, value: Any) -> bool:
        """Whether `value` holds a row per lane (an iteration's value), not one per program or one for all."""
        return bool(getattr(getattr(value, "handle", None), MARK, False)) \
            and np.shape(value.handle.data)[0] == self.part.size

    @staticmethod
    def _row(value: Any, wide: bool, rows: np.ndarray) -> Any:
        return predicated_loops._cut(value, rows) if wide else value

    def _iterations(self, total: Any, step) -> Any:
        """step(total, rows) for each iteration of the chunk in order, `rows` the lanes of that iteration of the
        programs still in the loop, on the batch of programs (once some have made all their iterations, on a part
        of the batch of the others: their rows of the total put back after)."""
        batch, part = self.batch, self.part
        launch = current_launch()
        launch.batch = batch
        try:
            counts = self.counts
            done = int(counts.min())
            for t in range(done):
                total = step(total, self.offsets + t)
            while done < int(counts.max()):
                on = np.flatnonzero(counts > done)
                until = int(counts[on].min())
                total = self._on_part(total, on, done, until, step)
                done = until
        finally:
            launch.batch = part
        return total

    def _on_part(self, total: Any, on: np.ndarray, begin: int, end: int, step) -> Any:
        """Iterations [begin, end) on the programs `on` only (a part of the batch, as predicated_loops' compacted
        iterations), their rows of the total put back in it after."""
        batch = self.batch
        handle = getattr(total, "handle", None)
        if not (getattr(handle, MARK, False) and np.shape(handle.data)[0] == batch.size):
            self.refuse("an accumulator of a ragged chunk that is not per program")
        piece = batch.part(on)
        launch = current_launch()
        launch.batch = piece
        try:
            mine = predicated_loops._cut(total, on)
            for t in range(begin, end):
                mine = step(mine, self.offsets[on] + t)
        finally:
            launch.batch = batch
            batch.effects, batch.atomics = piece.effects, piece.atomics
        merged = predicated_loops.merge_rows(batch.size, on, total, mine)
        if merged is None:
            self.refuse("an accumulator of a ragged chunk whose rows cannot be put back")
        return merged

    # -- memory ------------------------------------------------------------------------------------------------
    def memory_op(self, name: str, arguments: dict) -> None:
        """A memory op of the lanes (program_axis; its arguments by name): an atomic refuses them, a load's or
        store's addresses noted."""
        if name == "create_assert":
            return
        if name not in LOADS:
            self.refuse(f"{name} in the loop")
        store = LOADS[name]
        if store and self.trips is None:
            self.refuse("a store in a ragged chunk")  # (store records and _check_memory take whole chunks)
        ptrs = arguments["ptrs"] if "ptrs" in arguments else arguments["ptr"]
        mask = arguments.get("mask")
        try:
            size = max(1, ptrs.dtype.element_ty.primitive_bitwidth // 8)
        except AttributeError:
            self.refuse("a memory op whose pointer type lanes cannot read")
        self.accesses.append((store, len(self.accesses), _lanes_of(ptrs, self.part.size),
                              None if mask is None else _lanes_of(mask, self.part.size), size))

    def _check_memory(self) -> None:
        """Refuse the lanes when an address stored by some iteration is loaded by another, or stored by another
        iteration through another op: the serial engine's order and the lanes' would differ."""
        stores = [a for a in self.accesses if a[0]]
        if not stores or self.trips == 1:
            return
        iteration = np.arange(self.part.size, dtype=np.int64) % self.trips
        bounds = [_bounds(a) for a in self.accesses]  # the lowest and highest address reached (None: no lane on)
        flat: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # every address reached, where two accesses may meet
        for s in stores:
            if bounds[s[1]] is None:
                continue
            s_low, s_high = bounds[s[1]]
            for other in self.accesses:
                if other[1] == s[1]:
                    continue  # one store op: its lanes are written in iteration order
                if bounds[other[1]] is None or bounds[other[1]][0] > s_high + 8 or bounds[other[1]][1] + 8 < s_low:
                    continue
                for a in (s, other):
                    if a[1] not in flat:
                        flat[a[1]] = _active(a, iteration)
                s_addr, s_iter = flat[s[1]]
                o_addr, o_iter = flat[other[1]]
                if other[4] != s[4]:
                    self.refuse("accesses of two element sizes meet in the loop")
                common = np.intersect1d(s_addr, o_addr)
                if common.size == 0:
                    continue
                both = np.concatenate([s_addr, o_addr])
                its = np.concatenate([s_iter, o_iter])
                met = np.isin(both, common)
                pairs = np.unique(both[met].astype(np.int64) * self.trips + its[met])
                if np.unique(pairs // self.trips).size != pairs.size:
                    self.refuse("an address one iteration stores, another reaches")


def _after(values: np.ndarray):
    """The loop variable after a chunk, as the predicated loop has it: the int every program agrees on (a
    LoopCounter, as the serial engine's), else a per-program int scalar tensor."""
    if (values == values[0]).all():
        return LoopCounter(int(values[0]))
    dtype = np.int32 if predicated_loops._fits_int32(values) else np.int64
    return predicated_loops._program_scalars(values, dtype)


def _lanes_of(handle, size: int) -> np.ndarray:
    data = np.asarray(handle.data)
    if getattr(handle, MARK, False) and data.shape[:1] == (size,):
        return data
    return np.broadcast_to(data, (size,) + data.shape)


def _bounds(access) -> tuple[int, int] | None:
    """The lowest and the highest address an access reached (its mask's lanes), None where it reached none."""
    _, _, ptrs, mask, _ = access
    if mask is None:
        return (int(ptrs.min()), int(ptrs.max())) if ptrs.size else None
    on = np.broadcast_to(mask.astype(bool, copy=False), ptrs.shape)
    if not on.any():
        return None
    limits = np.iinfo(ptrs.dtype)
    return int(ptrs.min(where=on, initial=limits.max)), int(ptrs.max(where=on, initial=limits.min))


def _active(access, iteration: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The addresses an access reached (its mask's lanes) and the iteration of each."""
    _, _, ptrs, mask, _ = access
    its = np.broadcast_to(iteration.reshape((-1,) + (1,) * (ptrs.ndim - 1)), ptrs.shape)
    if mask is None:
        return ptrs.reshape(-1).astype(np.int64), its.reshape(-1)
    on = np.broadcast_to(mask.astype(bool), ptrs.shape)
    return ptrs[on].astype(np.int64), its[on]


# -- the loop variable ---------------------------------------------------------------------------------------------
_COUNTER: list[type] = []
_INT32 = (-(2**31), 2**31)


def _counter_class() -> type:
    """LaneCounter, made once triton.language is imported (it subclasses tl.tensor)."""
    if not _COUNTER:
        import triton.language as tl

        class LaneCounter(tl.tensor):
            """A loop's counter with one value per lane: an int32 (int64 past its range) scalar tensor, as
            loop_counters' LoopCounter answers, whose arithmetic with ints stays a counter with Python's values;
            beside a tensor it is that int32 / int64 tensor, as the LoopCounter is there; any other use refuses
            the lanes."""

            def lane_values(self) -> np.ndarray:
                return np.asarray(self.handle.data).reshape(-1).astype(np.int64)

        def arithmetic(name: str, fn, reflected: bool):
            def op(self, other):
                value = other.value if isinstance(other, tl.constexpr) else other
                if type(value) is LaneCounter or isinstance(value, (int, np.integer)):
                    mine = self.lane_values()
                    theirs = value.lane_values() if type(value) is LaneCounter else int(value)
                    a, b = (theirs, mine) if reflected else (mine, theirs)
                    return lane_counter(_exact(fn, a, b, self.key), self.key)
                if isinstance(value, tl.tensor):
                    return getattr(tl.tensor, name)(self, other)
                raise LanesRefused(self.key, f"the loop's counter {name} {type(value).__name__}")

            op.__name__ = name
            return op

        for name, fn in (("add", np.add), ("sub", np.subtract), ("mul", np.multiply), ("floordiv", np.floor_divide),
                         ("mod", np.mod)):
            setattr(LaneCounter, f"__{name}__", arithmetic(f"__{name}__", fn, False))
            setattr(LaneCounter, f"__r{name}__", arithmetic(f"__r{name}__", fn, True))

        def refusing(name: str):
            def op(self, *others):
                if all(isinstance(o, tl.tensor) and type(o) is not LaneCounter for o in others):
                    return getattr(tl.tensor, name)(self, *others)
                raise LanesRefused(self.key, f"the loop's counter in {name}")

            op.__name__ = name
            return op

        for name in ("__truediv__", "__rtruediv__", "__lshift__", "__rlshift__", "__rshift__", "__rrshift__",
                     "__and__", "__rand__", "__or__", "__ror__", "__xor__", "__rxor__", "__lt__", "__le__", "__gt__",
                     "__ge__", "__eq__", "__ne__", "__pow__", "__rpow__", "__invert__"):
            setattr(LaneCounter, name, refusing(name))
        LaneCounter.__neg__ = lambda self: lane_counter(-self.lane_values(), self.key)
        LaneCounter.__pos__ = lambda self: self
        LaneCounter.__hash__ = object.__hash__
        _COUNTER.append(LaneCounter)
    return _COUNTER[0]


def lane_counter(values: np.ndarray, key: tuple):
    """The loop's counter of a chunk's lanes: int32 where every value fits it, int64 where none does."""
    import triton.language as tl
    from triton.runtime.interpreter import TensorHandle

    fits = (values >= _INT32[0]) & (values < _INT32[1])
    if fits.all():
        ty, dtype = tl.int32, np.int32
    elif not fits.any():
        ty, dtype = tl.int64, np.int64
    else:
        raise LanesRefused(key, "the loop's counter is an int32 in some iterations, an int64 in others")
    out = _counter_class()(mark(TensorHandle(values.astype(dtype).reshape(-1, 1), ty)), ty)
    out.key = key
    return out


def _exact(fn, a, b, key: tuple) -> np.ndarray:
    """fn(a, b) in int64, refused where Python's ints would leave its range (or divide by zero)."""
    def largest(v) -> int:
        return abs(v) if isinstance(v, int) else int(np.max(np.abs(v)))

    big = max(largest(a), largest(b))
    if big >= 2**62:
        raise LanesRefused(key, "the loop's counter past int64")
    if fn is np.multiply:
        safe = max(1, largest(a)) * max(1, largest(b)) < 2**62
    elif fn in (np.floor_divide, np.mod):
        safe = bool(np.all(np.asarray(b) != 0))  # big < 2**62: checked above
    else:
        safe = big < 2**61
    if not safe:
        raise LanesRefused(key, "the loop's counter past int64, or divided by zero")
    return fn(np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64))


def _check_pairing(counter, other) -> None:
    """Refuse a binary op of the counter beside a value whose type lanes cannot tell (beside a tensor the serial
    engine's counter is an int32 / int64 tensor too: loop_counters)."""
    if type(other) is type(counter) or isinstance(other, numbers.Number):
        return
    if getattr(getattr(other, "type", None), "scalar", None) is None:
        raise LanesRefused(counter.key, "the loop's counter beside a value lanes cannot type")


def _binary_checked(original):
    def binary_op_type_checking_impl(*args, **kwargs):
        counter = _COUNTER[0] if _COUNTER else None
        if counter is not None and (any(type(a) is counter for a in args)
                                    or any(type(v) is counter for v in kwargs.values())):
            call = bind(original, args, kwargs).arguments  # only then: every binary op passes here
            lhs, rhs = call["lhs"], call["rhs"]
            if type(lhs) is counter:
                _check_pairing(lhs, rhs)
            if type(rhs) is counter:
                _check_pairing(rhs, lhs)
        return original(*args, **kwargs)

    return binary_op_type_checking_impl


def install() -> None:
    """Loops marked by predicated_loops' rewrite run their iterations as lanes (TDEBUG_LOOP_LANES on)."""
    from triton.language.semantic import TritonSemantic

    if not settings.get("TDEBUG_LOOP_LANES"):
        return
    predicated_loops.run_lanes_with(lanes)
    patch(TritonSemantic, "binary_op_type_checking_impl", _binary_checked)
