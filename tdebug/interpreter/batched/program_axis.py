"""The batched engine's values: while a batch of programs runs, a TensorHandle may carry a leading program axis.

A handle marked batched holds `(P,) + shape` where `shape` is what the serial interpreter would hold for one
program (a scalar is `(1,)` there, so `(P, 1)` here); an unmarked handle is the same in every program. The
builder's ops are wrapped once, outermost (layer "program_axis"), and sort into three kinds:
- element-wise ops run once for the whole batch: batched operands are given the same rank first, so numpy's
  broadcasting lines the program axis up with the program axis;
- shape ops (splat, broadcast, reshape, expand_dims, trans, cat, gather, reductions, scans) shift their axes
  past the program axis;
- loads, stores and atomics run once for the whole batch (WHOLE_BATCH_OPS): every operand broadcast to the
  batch's shape, and every listener below sees the lanes of all programs with a program per lane
  (lane_programs()); under a listener that sees one program at a time (PER_LANE off: tdebug viz's traces) they,
  like asserts that fail, run once per program with the builder's grid_idx set to it (op-major order).
A per-program value used as a Python bool or index (an `if`, a loop bound, `min()` of tensors) is returned
when every program of the batch agrees, and raises Divergent otherwise: grid_loop splits the batch by value.
An op this module cannot batch raises Unported: grid_loop runs the launch on the serial engine instead.
"""

from __future__ import annotations

import contextlib
import copy
import itertools
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..frames import EngineSignal
from ..hooks import provenance
from ..semantics import compat
from ..versions import bind, patcher
from .launch import current_batch, current_launch

patch = patcher("program_axis")

MARK = "_tdebug_batched"
HANDLE_KEYS = frozenset({"data", "dtype", "attr", MARK})  # a TensorHandle's own attributes: any other is beside it


class Divergent(EngineSignal):
    """Programs of a batch disagree on a value the kernel uses as a Python bool or index."""

    def __init__(self, values: np.ndarray) -> None:
        super().__init__("programs of a batch diverge")
        self.values = values


class Unported(EngineSignal):
    """An op the batched engine does not run: the launch runs on the serial engine."""

    def __init__(self, what: str) -> None:
        super().__init__(what)
        self.what = what


class LanesRefused(EngineSignal):
    """A loop's iterations ran as lanes (loop_lanes.py) and met what only an iteration at a time runs right (a
    dependence between iterations through memory, an atomic, a value used as a Python bool or index that differs
    between iterations): the batch runs again from its start with that loop iterating as written."""

    def __init__(self, key: tuple, why: str) -> None:
        super().__init__(why)
        self.key, self.why = key, why


_BATCH_NUMBERS = itertools.count()


@dataclass
class Batch:
    """The programs of one batch, in the serial engine's order: pids[:, i] is program i's (x, y, z)."""

    pids: np.ndarray
    index: int | None = None  # the program a memory op is being run for (None: batched ops)
    effects: int = 0  # stores and atomics run so far
    atomics: int = 0  # atomic ops run so far
    # (kind, keys) per atomic op run so far: the addresses each program touched (atomic_order.py; on the batch
    # grid_loop runs, its compacted parts' too)
    atomic_log: list = field(default_factory=list)
    memory: Any = None  # batch_memory.MemoryUndo: what the batch's stores overwrote
    serial: int = field(default_factory=lambda: next(_BATCH_NUMBERS))  # unique in the process (a key for listeners)
    # Predicated loops (predicated_loops.py): per loop now iterating, which programs are still in it; the
    # programs out of some loop compute values nobody keeps, and make no memory access, assert or choice.
    predicates: list = field(default_factory=list)
    active: np.ndarray | None = None  # the programs in every loop now iterating (None: all of them)
    predicated: bool = False  # some iteration of this batch ran with programs out of their loop
    trip_counts: np.ndarray | None = None  # the last predicated loop's trip count per program (a split's groups)
    branching: int = 0  # predicated `if`s now open (predicated_ifs.py)
    # A memory op inside a predicated loop runs for a part of the batch: `whole` is the batch, `rows` the
    # part's programs in it (kernel locals hold values for every program of `whole`).
    whole: Batch | None = None
    rows: np.ndarray | None = None
    # A compacted iteration of a predicated loop (predicated_loops.compact) runs on a batch of the programs in the
    # loop, kernel locals cut to theirs: `root` is the batch grid_loop runs, `root_rows` the programs' rows in it.
    root: Batch | None = None
    root_rows: np.ndarray | None = None
    # (code, name) -> each program's value of a predicated loop's variable after the loop
    loop_scalars: dict[tuple, LoopValues] = field(default_factory=dict)
    # (code, name) -> (value, bound): an integer scalar first bound inside a predicated loop, and which programs
    # bound it (those that made no iteration did not): valid while the frame holds that very value
    loop_bound: dict[tuple, tuple] = field(default_factory=dict)
    # A loop's iterations as lanes (loop_lanes.py): on the batch of lanes, its state (a row per program and
    # iteration); on the batch it widens, the state the loop body's begin() is to pick up.
    lanes: Any = None
    pending_lanes: Any = None
    open_lanes: Any = None  # on the batch a chunk of lanes widens, while it runs: an error then refuses the lanes

    @property
    def size(self) -> int:
        return int(self.pids.shape[1])

    def pid(self, i: int) -> tuple[int, int, int]:
        return int(self.pids[0, i]), int(self.pids[1, i]), int(self.pids[2, i])

    def part(self, rows: np.ndarray) -> Batch:
        """The batch of the programs in `rows` only (a compacted iteration, a ragged chunk's tail): it shares this
        batch's effects, memory undo and serial; `root` and `root_rows` name the batch grid_loop runs and their
        rows in it; the loop variables' values cut to them."""
        root = self.root or self
        part = Batch(self.pids[:, rows], effects=self.effects, atomics=self.atomics, memory=self.memory,
                     serial=self.serial, root=root, root_rows=rows if self.root is None else self.root_rows[rows])
        part.loop_scalars = {key: v.of_rows(rows) for key, v in self.loop_scalars.items()}
        return part

    def linear_pids(self, gx: int, gy: int) -> np.ndarray:
        """Each program's linear id in a grid whose x and y sizes are gx and gy (x fastest, as Triton counts)."""
        return self.pids[0] + gx * (self.pids[1] + gy * self.pids[2])

    def before_effect(self) -> None:
        self.effects += 1

    def push_predicate(self, active: np.ndarray) -> None:
        self.predicates.append(active)
        self._combine()

    def pop_predicate(self) -> None:
        self.predicates.pop()
        self._combine()

    def _combine(self) -> None:
        active = None
        for p in self.predicates:
            active = p if active is None else active & p
        self.active = None if active is None or active.all() else active
        if self.active is not None:
            self.predicated = True


@dataclass(frozen=True)
class LoopValues:
    """Each program's value of a predicated loop's variable after the loop; `bound` False where a program made no
    iteration and the name had no value before the loop."""

    values: np.ndarray
    bound: np.ndarray

    def of_rows(self, rows: np.ndarray) -> LoopValues:
        """The values of the programs `rows` (a compacted iteration's part)."""
        return LoopValues(self.values[rows], self.bound[rows])

    def placed(self, rows: np.ndarray, size: int, under: LoopValues | None = None) -> LoopValues:
        """These values in the rows `rows` of `size` programs, the other programs' from `under` (without it:
        unbound)."""
        values = under.values.copy() if under is not None else np.zeros(size, dtype=self.values.dtype)
        bound = under.bound.copy() if under is not None else np.zeros(size, dtype=bool)
        values[rows], bound[rows] = self.values, self.bound
        return LoopValues(values, bound)


# Per kernel (its Python function): elements of the largest block a memory op of its batches touched, per program;
# sizes that kernel's batches and loop lanes. A kernel's own: one with large blocks leaves others' batches as they are.
LARGEST: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def largest() -> int:
    """The running kernel's largest block (elements per program) seen so far; before its first memory op, the
    largest any kernel of the process touched, as a first guess (0 outside a launch, or before any memory op).
    Without the guess a loop's first iteration ran as written (blocks of unknown size) and the rest as lanes:
    Liger's rms_norm backward, launched after its forward, took 0.35 -> 0.73 s that way (median of 10)."""
    launch = current_launch()
    if launch is None:
        return 0
    own = LARGEST.get(launch.kernel)
    return own if own is not None else max(LARGEST.values(), default=0)


def _note_block(size: int) -> None:
    launch = current_launch()
    if launch is not None and size > LARGEST.get(launch.kernel, 0):
        LARGEST[launch.kernel] = size


WHOLE = -1  # Batch.index while a memory op runs once for every program of the batch, a program per lane
# Atomics too: Triton applies an op's lanes in order, so the batch's lanes, program by program, apply in the
# serial engine's order (atomic_order.py: when a batch may run an atomic_cas, or more than one atomic per program).
WHOLE_BATCH_OPS = ("create_load", "create_store", "create_masked_load", "create_masked_store", "create_atomic_rmw",
                   "create_atomic_cas")
PER_LANE = True  # False while a listener is installed that sees one program at a time (tdebug viz's traces)


def set_per_lane(flag: bool) -> None:
    """Whether memory ops may run for every program of a batch at once (off: a listener sees one at a time)."""
    global PER_LANE
    PER_LANE = flag


def current_program() -> tuple[int, int] | None:
    """(index in the batch, batch size) of the program a memory op is being run for, or None outside a batch:
    a listener reading kernel locals (stores.scalar_locals) picks that program's value of a batched one."""
    b = current_batch()
    if b is None or b.index is None or b.index == WHOLE:
        return None
    if b.whole is not None:  # a part of the batch (a predicated loop): kernel locals hold the whole batch's
        return int(b.rows[b.index]), b.whole.size
    return b.index, b.size


def lane_programs() -> Batch | None:
    """The batch whose programs' lanes the memory op now running holds, a program per lane along its first axis
    (None: the op is one program's). Listeners then check and record every program's lanes in one call."""
    b = current_batch()
    return b if b is not None and b.index == WHOLE else None


def batched_op(handles) -> bool:
    """Is a batched op running on these operands (their results carry the program axis)?"""
    b = current_batch()
    return b is not None and b.index is None and _any_batched(handles)


def is_batched(h) -> bool:
    return getattr(h, MARK, False)


def mark(h):
    if isinstance(h, tuple):
        for x in h:
            mark(x)
    elif h is not None and hasattr(h, "data"):
        setattr(h, MARK, True)
    return h


def _any_batched(values) -> bool:
    for v in values:
        if getattr(v, MARK, False):
            return True
        if isinstance(v, (list, tuple)) and any(getattr(x, MARK, False) for x in v):
            return True
    return False


def serial_rank(h) -> int:
    return h.data.ndim - 1 if getattr(h, MARK, False) else np.ndim(h.data)


def _lift(h, rank: int):
    """A batched handle with its per-program part raised to `rank` dims (unit dims in front of it)."""
    have = h.data.ndim - 1
    if have >= rank:
        return h
    out = copy.copy(h)
    out.data = h.data.reshape(h.data.shape[:1] + (1,) * (rank - have) + h.data.shape[1:])
    return out


def _aligned(values: list) -> list:
    handles = [v for v in values if hasattr(v, "data") and isinstance(getattr(v, "data", None), np.ndarray)]
    rank = max((serial_rank(h) for h in handles), default=0)
    out = []
    for v in values:
        if getattr(v, MARK, False):
            v = _lift(v, rank)
        elif isinstance(v, list):
            v = _aligned(v)
        out.append(v)
    return out


SIDE_ARRAY_NONE: dict[str, Any] = {}  # side array name -> its value on a lane it says nothing about (its owner sets)


def declare_side_array(key: str, none: Any) -> None:
    """A listener's side array `key` (an attribute it keeps on handles) holds `none` on a lane it says nothing about."""
    SIDE_ARRAY_NONE[key] = none


def _side_arrays(h):
    """A handle's per-lane side data (the nan check's origins): arrays that follow the lanes of its data."""
    return [(k, v) for k, v in vars(h).items()
            if k not in HANDLE_KEYS and isinstance(v, np.ndarray)]


@contextlib.contextmanager
def naming_program(pid: tuple[int, int, int]) -> Iterator[None]:
    """Inside the block Triton's builder names program `pid` (what tl.program_id and a listener read); after
    it, the program it named before."""
    from triton.runtime.interpreter import interpreter_builder as builder

    saved = builder.grid_idx
    builder.grid_idx = pid
    try:
        yield
    finally:
        builder.grid_idx = saved


def slice_program(v, i: int):
    """Program i's part of a value (a batched handle, a list of them, or anything else as it is)."""
    return _programs_of(v, i)


def _programs_of(v, index):
    """The rows `index` of a batched value (a handle with its side arrays, or a list of them; anything else as it
    is): an int gives one program's value, an array of batch rows a smaller (or reordered) batch."""
    if getattr(v, MARK, False):
        out = copy.copy(v)
        out.data = v.data[index]
        for key, value in _side_arrays(v):
            if value.shape[:1] == v.data.shape[:1]:
                setattr(out, key, value[index])
        if not isinstance(index, np.ndarray):
            out.__dict__.pop(MARK, None)
        return out
    if isinstance(v, list):
        return [_programs_of(x, index) for x in v]
    return v


def _stack(outs: list):
    """The per-program results of a memory op as one batched handle (None for stores)."""
    first = outs[0]
    if first is None:
        return None
    from triton.runtime.interpreter import TensorHandle

    return mark(TensorHandle(np.stack([o.data for o in outs]), first.dtype))


# -- the wrappers ----------------------------------------------------------------------------------------------
def _elementwise(original):
    def op(*args, **kwargs):
        batch = current_batch()
        if batch is None or batch.index is not None or not (_any_batched(args) or _any_batched(kwargs.values())):
            return original(*args, **kwargs)
        keys = list(kwargs)
        aligned = _aligned(list(args) + [kwargs[k] for k in keys])
        out = original(*aligned[: len(args)], **dict(zip(keys, aligned[len(args):])))
        return mark(out)

    return op


def _per_program(name: str, effect: bool):
    """Run the op (and every tdebug wrapper below) once per program of the batch, in program order."""
    from . import atomic_order  # (it builds on this module's signals)

    def make(original):
        def op(*args, **kwargs):
            batch = current_batch()
            if batch is None or batch.index is not None:
                return original(*args, **kwargs)
            if batch.lanes is not None:
                # refuses an atomic; notes a load's or store's addresses
                batch.lanes.memory_op(name, bind(original, args, kwargs).arguments)
            if name in ATOMICS:
                atomic_order.admit(batch, name, original, args, kwargs)  # may split the batch, or give it up
                batch.atomics += 1
            if name == "create_assert":  # every lane of every program holds: nothing to say for any program
                condition = args[0] if args else kwargs.get("condition")
                if condition is not None and bool(np.all(_of_active(batch, condition.data, condition))):
                    return None
            if effect:
                batch.before_effect()
            for a in args:
                if getattr(a, MARK, False):
                    _note_block(a.data[0].size)
            if name in WHOLE_BATCH_OPS and PER_LANE:
                views = name not in ATOMICS  # Triton's atomics take each operand lane by lane
                if batch.active is not None:
                    out = _active_programs(batch, original, args, kwargs, views)
                else:
                    out = _whole_batch(batch, original, args, kwargs, views)
                if name == "create_atomic_cas":
                    atomic_order.check_cas(batch, bind(original, args, kwargs).arguments["cmp"], out)
                return out
            from triton.runtime.interpreter import interpreter_builder as builder

            saved = builder.grid_idx
            outs = []
            active = batch.active
            try:
                for i in range(batch.size):
                    if active is not None and not active[i]:
                        outs.append(None)  # a program out of its loop: no access, no assert
                        continue
                    batch.index = i
                    builder.grid_idx = batch.pid(i)
                    outs.append(original(*[slice_program(a, i) for a in args],
                                         **{k: slice_program(v, i) for k, v in kwargs.items()}))
            finally:
                batch.index = None
                builder.grid_idx = saved
            if name == "create_atomic_cas":
                atomic_order.check_cas(batch, bind(original, args, kwargs).arguments["cmp"], outs)
            if active is not None:  # the values of programs out of their loop: any active program's
                stand_in = next((o for o in outs if o is not None), None)
                outs = [stand_in if o is None else o for o in outs]
            return _stack(outs)

        return op

    return make


def _whole_batch(batch: Batch, original, args: tuple, kwargs: dict, views: bool = False):
    """A load or store for every program of the batch in one call: each operand with the whole batch's shape.
    views: an operand other than the pointers (a mask, an `other`, a stored value) as a read-only view of the
    batch's shape (a mask broadcast over a tile's columns stays one), not a copy; the pointers, which the checks
    read as rows of programs, C-ordered (create_addptr makes them so: mostly no copy)."""
    from triton.runtime.interpreter import TensorHandle

    values = list(args) + list(kwargs.values())
    handles = [v for v in values if isinstance(v, TensorHandle)]
    rank = max((serial_rank(h) for h in handles), default=0)
    lifted = [_lift(h, rank) if getattr(h, MARK, False) else h for h in handles]
    shape = np.broadcast_shapes((batch.size,) + (1,) * rank, *(h.data.shape for h in lifted))

    pointers = args[0] if args else None

    def full(v):
        if not isinstance(v, TensorHandle):
            return v
        batched = getattr(v, MARK, False)
        pointer = v is pointers
        v = _lift(v, rank) if batched else v
        out = copy.copy(v)
        data = v.data
        if views and not (batched and pointer):
            data = data if data.shape == shape else np.broadcast_to(data, shape)
        elif data.shape != shape or not (data.flags.c_contiguous and data.flags.writeable):
            data = np.require(np.broadcast_to(data, shape), requirements=["C", "W"])
        out.data = data  # already the batch's shape (a tile's pointers, its mask): as it is, no copy
        for key, value in _side_arrays(v):
            setattr(out, key, np.ascontiguousarray(np.broadcast_to(value, shape)))
        return mark(out)

    batch.index = WHOLE
    try:
        with naming_program(batch.pid(0)):
            out = original(*[full(a) for a in args], **{k: full(v) for k, v in kwargs.items()})
    finally:
        batch.index = None
    return mark(out) if out is not None else None


def batch_shaped(h, shape: tuple[int, ...]) -> np.ndarray:
    """A value operand's data as a load or store of the whole batch takes it (_whole_batch with views: the mask,
    `other`, the stored value): `shape` is the op's, (programs,) + one program's block."""
    data = (_lift(h, len(shape) - 1) if getattr(h, MARK, False) else h).data
    return data if data.shape == shape else np.broadcast_to(data, shape)


def _of_active(batch: Batch, data, handle):
    """The rows of a batched value that belong to programs in their loops (all of it when not batched)."""
    if batch.active is None or not getattr(handle, MARK, False):
        return data
    return data[batch.active]


def _active_programs(batch: Batch, original, args: tuple, kwargs: dict, views: bool = False):
    """A load, store or atomic inside a predicated loop: run for the programs still in their loops only (the
    listeners see those programs' lanes and no other), each other program's result a stand-in: the first
    active program's (a value nobody keeps)."""
    idx = np.flatnonzero(batch.active)
    sub = Batch(batch.pids[:, idx], effects=batch.effects, atomics=batch.atomics, memory=batch.memory,
                serial=batch.serial, whole=batch, rows=idx)
    launch = current_launch()
    launch.batch = sub
    try:
        out = _whole_batch(sub, original, [_programs_of(a, idx) for a in args],
                           {k: _programs_of(v, idx) for k, v in kwargs.items()}, views)
    finally:
        launch.batch = batch
        batch.effects, batch.atomics = sub.effects, sub.atomics
    if out is None:
        return None
    rows = np.zeros(batch.size, dtype=np.intp)  # program -> row of `out` (stand-ins: the first active one's)
    rows[idx] = np.arange(idx.size)
    return _programs_of(out, rows)


def _unported(name: str):
    def make(original):
        def op(*args, **kwargs):
            batch = current_batch()
            if batch is not None and batch.index is None:
                raise Unported(name.removeprefix("create_"))
            return original(*args, **kwargs)

        return op

    return make


def _shape_op(name: str):
    """Ops whose arguments name axes or shapes of one program: the program axis goes in front."""

    def make(original):
        from triton.runtime.interpreter import TensorHandle

        def op(*args, **kwargs):
            batch = current_batch()
            if batch is None or batch.index is not None or not _any_batched(args):
                return original(*args, **kwargs)
            out = batched(batch.size, *args, **kwargs)
            provenance.inherit(out, args)
            _move_side_arrays(name, batched, batch.size, args, kwargs, out)
            return out

        def batched(P: int, *args, **kwargs):
            if name == "create_splat":
                ret_ty, arg = args
                shape = tuple(ret_ty.shape)
                d = arg.data.reshape(P, *(1,) * len(shape))
                # A view, as create_broadcast's: one value per program, read where it is (no tile of copies).
                return mark(TensorHandle(np.broadcast_to(d, (P,) + shape), arg.dtype.scalar))
            if name == "create_unsplat":
                (arg,) = args
                return mark(TensorHandle(arg.data.reshape(P, -1)[:, :1].copy(), arg.dtype.scalar))
            if name == "create_broadcast":
                arg, shape = args
                arg = _lift(arg, len(shape))
                return mark(TensorHandle(np.broadcast_to(arg.data, (P,) + tuple(shape)), arg.dtype.scalar))
            if name == "create_expand_dims":
                arg, axis = args
                axis = axis + 1 if axis >= 0 else axis
                return mark(TensorHandle(np.expand_dims(arg.data, axis), arg.dtype.scalar))
            if name == "create_reshape":
                arg, shape = args[0], args[1]
                return mark(TensorHandle(arg.data.reshape((P,) + tuple(shape)), arg.dtype.scalar))
            if name == "create_trans":
                arg, perm = args
                return mark(TensorHandle(np.transpose(arg.data, (0,) + tuple(p + 1 for p in perm)), arg.dtype.scalar))
            if name == "create_cat":
                lhs, rhs = _both_batched(args, P)
                return mark(TensorHandle(np.concatenate([lhs.data, rhs.data], axis=1), lhs.dtype.scalar))
            if name == "create_gather":
                src, indices, axis = args
                src, indices = _both_batched((src, indices), P)
                compat.check_gather(src.data, indices.data, axis + 1)
                return mark(TensorHandle(np.take_along_axis(src.data, indices.data, axis=axis + 1), src.dtype.scalar))
            if name in ("create_join", "create_split"):  # last axis: the program axis stays in front
                return mark(original(*_aligned(list(args))))
            if name in ("create_histogram",):
                outs = [original(*[slice_program(a, i) for a in args]) for i in range(P)]
                return _stack(outs)
            raise Unported(name.removeprefix("create_"))

        return op

    return make


_VALUE_ARGS = {"create_splat": (1,), "create_cat": (0, 1)}  # the operands whose lanes the result holds (else the first)


def _move_side_arrays(name: str, run, P: int, args: tuple, kwargs: dict, out) -> None:
    """A batched shape op done here in numpy (not by the builder below, where the nan check would see it): the value
    operands' side arrays (the nan check's origins per lane) moved as their lanes are, by the same op."""
    if out is None or not hasattr(out, "data"):
        return
    positions = _VALUE_ARGS.get(name, (0,))
    values = [args[i] for i in positions if i < len(args) and getattr(args[i], MARK, False)]
    keys = {key for v in values for key, side in _side_arrays(v) if side.shape == v.data.shape}
    for key in keys:
        if key not in SIDE_ARRAY_NONE:
            continue
        dtype = next(getattr(v, key).dtype for v in values if isinstance(getattr(v, key, None), np.ndarray))

        def side(a, key=key, dtype=dtype):
            h = copy.copy(a)
            own = getattr(a, key, None)
            ok = isinstance(own, np.ndarray) and own.shape == a.data.shape
            h.data = own if ok else np.full(a.data.shape, SIDE_ARRAY_NONE[key], dtype)
            return h

        moved = run(P, *[side(a) if i in positions and getattr(a, MARK, False) else a for i, a in enumerate(args)],
                    **kwargs)
        setattr(out, key, np.asarray(moved.data))


def _both_batched(handles, P: int):
    from triton.runtime.interpreter import TensorHandle

    out = []
    rank = max(serial_rank(h) for h in handles)
    for h in handles:
        if getattr(h, MARK, False):
            out.append(_lift(h, rank))
        else:
            out.append(mark(TensorHandle(np.broadcast_to(h.data, (P,) + h.data.shape), h.dtype)))
    return out


def _program_id(original):
    from triton.runtime.interpreter import TensorHandle

    def create_get_program_id(*args, **kwargs):
        batch = current_batch()
        if batch is None or batch.index is not None:
            return original(*args, **kwargs)
        axis = args[0] if args else kwargs["axis"]
        return mark(TensorHandle(batch.pids[axis].astype(np.int32).reshape(-1, 1), _int32()))

    return create_get_program_id


def _int32():
    import triton.language as tl

    return tl.int32


# -- reductions and scans: the axis moves past the program axis ------------------------------------------------
def _reduction(original):
    def apply_impl(self, input):
        global _REDUCING
        batch = current_batch()
        if batch is None or batch.index is not None or not any(getattr(t.handle, MARK, False) for t in input):
            return original(self, input)
        P = batch.size
        rank = max(serial_rank(t.handle) for t in input)
        shifted = copy.copy(self)
        flat = self.axis is None
        inputs = []
        for t in input:
            h = t.handle
            data = h.data if getattr(h, MARK, False) else np.broadcast_to(h.data, (P,) + h.data.shape)
            if getattr(h, MARK, False):
                data = _lift(h, rank).data
            if flat:
                data = data.reshape(P, -1)
            t2 = copy.copy(t)
            h2 = copy.copy(h)
            h2.data = np.ascontiguousarray(data) if flat else data
            mark(h2)
            t2.handle = h2
            inputs.append(t2)
        shifted.axis = 1 if flat else (self.axis + 1 if self.axis >= 0 else self.axis)
        _REDUCING += 1
        try:
            out = original(shifted, tuple(inputs))
        finally:
            _REDUCING -= 1
        outs = out if isinstance(out, (list, tuple)) else [out]
        for t in outs:  # a wrapper below may have rebuilt a result's handle (bf16: rounded back from fp32)
            if hasattr(t, "handle"):
                mark(t.handle)
        if flat and getattr(self, "keep_dims", False):  # every axis kept, each of size 1
            for t in outs:
                _keep_all(t, P, rank)
        return out

    return apply_impl


_REDUCING = 0  # > 0 while a reduction or scan runs on the program axis


def _to_tensor(original):
    """A reduction's or scan's result built with the program axis in front: typed as one program's part."""

    def to_tensor(self, ret, dtype):
        if not _REDUCING or not isinstance(ret, np.ndarray) or ret.ndim == 0:
            return original(self, ret, dtype)
        import triton.language as tl
        from triton.runtime.interpreter import TensorHandle, _get_np_dtype

        from ..hooks.overflow import wrapped_total

        if wrapped_total(ret, dtype) is not None and not dtype.is_int_unsigned():
            raise Unported("an integer reduction that wraps (its true values are followed per program)")
        data = ret.astype(_get_np_dtype(dtype))
        if data.ndim == 1:
            return tl.core.tensor(mark(TensorHandle(data.reshape(-1, 1), dtype.scalar)), dtype)
        return tl.core.tensor(mark(TensorHandle(data, dtype.scalar)), tl.block_type(dtype, list(data.shape[1:])))

    return to_tensor


def _keep_all(t, P: int, rank: int) -> None:
    """A whole-block reduction with keep_dims: one element in every one of the block's dims, per program."""
    import triton.language as tl

    h = t.handle
    h.data = np.asarray(h.data).reshape((P,) + (1,) * rank)
    t.type = tl.block_type(t.dtype.scalar if hasattr(t.dtype, "scalar") else t.dtype, [1] * rank)
    mark(h)


# -- Python control flow on per-program values -----------------------------------------------------------------
def decides(handle) -> None:
    """The engine reads this batched value to choose what runs (an `if`, a loop's bounds, a value used as a Python
    bool or index): a launch being recorded for replays (launch_replay.py) must not choose by memory's values."""
    launch = current_launch()
    if launch is not None and launch.recording is not None:
        launch.recording.decides(handle)


def uniform(tensor):
    """The one value every program of the batch has for a per-program scalar, or None when the tensor is not
    batched (or is a block); raises Divergent when the programs disagree."""
    h = tensor.handle
    batch = current_batch()
    if batch is None or not getattr(h, MARK, False):
        return None
    decides(h)
    data = h.data
    if data[0].size != 1:
        return None
    values = data.reshape(data.shape[0])
    deciding = _of_active(batch, values, h)  # programs out of a loop: any path
    first = deciding[0]
    if (deciding == first).all() or (deciding != deciding).all():
        return first
    if batch.lanes is not None:  # the iterations of a loop disagree: they run one at a time
        raise LanesRefused(batch.lanes.key, "iterations of a loop diverge")
    if batch.root is not None:  # a compacted iteration: split the batch grid_loop runs by its loop's trips
        raise Divergent(batch.root.trip_counts.copy())
    raise Divergent(values.copy())


def _lang_tensor(original):
    """tl.tensor's __index__ and __bool__ as the interpreter sets them per launch, batch-aware."""

    def _patch_lang_tensor(tensor, scope):
        out = original(tensor, scope)
        index, get_bool = tensor.__index__, tensor.__bool__

        def __index__(self):
            v = uniform(self)
            return int(v) if v is not None else index(self)

        def __bool__(self):
            if current_batch() is not None and getattr(self.handle, MARK, False):
                v = uniform(self)
                return bool(v) if v is not None else True  # a block is true, as the interpreter has it
            return get_bool(self)

        scope.set_attr(tensor, "__index__", __index__)
        scope.set_attr(tensor, "__bool__", __bool__)
        return out

    return _patch_lang_tensor


# -- installing ------------------------------------------------------------------------------------------------
PER_PROGRAM = {"create_load": False, "create_store": True, "create_masked_load": False,
               "create_masked_store": True, "create_atomic_rmw": True, "create_atomic_cas": True,
               "create_assert": False}
ATOMICS = ("create_atomic_rmw", "create_atomic_cas")
SHAPE_OPS = ("create_splat", "create_unsplat", "create_broadcast", "create_expand_dims", "create_reshape",
             "create_trans", "create_cat", "create_gather", "create_join", "create_split", "create_histogram")
UNPORTED = ("create_print", "create_make_block_ptr", "create_advance",
            "create_tensor_pointer_load", "create_tensor_pointer_store", "create_make_tensor_descriptor",
            "create_descriptor_load", "create_descriptor_store", "create_descriptor_gather",
            "create_descriptor_scatter", "create_inline_asm")
NOT_VALUES = ("create_get_num_programs", "create_make_range", "create_barrier")

_INSTALLED = False


def install() -> None:
    """Wrap the builder's ops for batches: once, at the first batched launch (the outermost layer)."""
    global _INSTALLED
    if _INSTALLED:
        return
    from triton.runtime import interpreter

    builder = interpreter.interpreter_builder
    for name in sorted(n for n in dir(builder) if n.startswith("create_")):
        if name in NOT_VALUES or not callable(getattr(builder, name)):
            continue
        if name == "create_get_program_id":
            patch(builder, name, _program_id)
        elif name in PER_PROGRAM:
            patch(builder, name, _per_program(name, PER_PROGRAM[name]))
        elif name in SHAPE_OPS:
            patch(builder, name, _shape_op(name))
        elif name in UNPORTED:
            patch(builder, name, _unported(name))
        else:
            patch(builder, name, lambda original: _elementwise(original))
    patch(interpreter.ReduceOps, "apply_impl", _reduction)
    patch(interpreter.ScanOps, "apply_impl", _reduction)
    patch(interpreter.ReduceScanOpInterface, "to_tensor", _to_tensor)
    patch(interpreter, "_patch_lang_tensor", _lang_tensor)  # over patches._squeeze_index: ours decides
    _INSTALLED = True
