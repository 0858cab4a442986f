"""Batched loads and stores done by numpy on elements a listener already resolved: the sanitizer's checker maps every
active lane of a batched memory op to an element of one storage before the op runs, and Triton's interpreter would
walk the same lanes again, one at a time in C++ (the largest single cost of a batched sanitize). The innermost
wrappers of create_masked_load / create_masked_store use that resolution when it is for exactly the op's pointer and
mask arrays (as element indices, or as Rows: every program's lanes one dense run of elements, the runs evenly
spaced, done through strided views with no index array); otherwise (no listener, a lane out of bounds, several
storages, an unaligned or retyped pointer) Triton's own op runs. And the undo of a batch's writes (MemoryUndo): the
old values of the elements a resolved store overwrites, or, before any other store or atomic, a copy of every
storage of the launch. And the addresses those ops read (create_addptr) made with one new array instead of three,
remembering how a batch's tile of them was made (program_layout: a pointer per program plus offsets every program
shares), so a checker need not read every address to learn that each program's lanes are one run."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..versions import bind, patcher
from . import program_axis
from .launch import current_batch, current_launch

patch = patcher("batch_memory")


@dataclass(frozen=True)
class Rows:
    """A batched access whose programs each reach one dense ascending run of `n` elements, program i's run
    starting at element `first + i * step` (step >= n: the runs are disjoint, in program order), its lanes the
    columns [start, stop) of the program's row of the op's `width` lanes (the others masked off in every program)."""

    first: int
    step: int
    n: int
    programs: int
    start: int
    stop: int
    width: int

    @property
    def every_lane(self) -> bool:
        """No lane of the op masked off."""
        return self.start == 0 and self.stop == self.width

    def view(self, table: np.ndarray) -> np.ndarray:
        """The access's elements of a per-element array (memory, a shadow table) as a (programs, n) view of it:
        writes through it land in `table`."""
        item = table.strides[0]
        return np.lib.stride_tricks.as_strided(table[self.first:], shape=(self.programs, self.n),
                                               strides=(self.step * item, item))


@dataclass(frozen=True)
class RowGroups:
    """A batched access whose programs, in groups of consecutive programs, are each Rows: a 2-D grid run outer axis
    first (equal groups, the inner axis across each group's runs), or the runs of evenly spaced rows that a batch's
    programs form after a predicated early return dropped some of them (groups of unequal length)."""

    groups: tuple[Rows, ...]
    begins: tuple[int, ...]  # each group's first program row in the access

    def parts(self):
        """(first program row, last + 1, Rows) per group."""
        return [(begin, begin + rows.programs, rows) for begin, rows in zip(self.begins, self.groups)]


@dataclass
class Resolved:
    """Every active lane of one batched memory op, as elements of one storage."""

    ptrs: np.ndarray  # the op's pointer array: the resolution holds for this very array
    mask: np.ndarray | None  # the op's mask array (None: the op has none)
    memory: Callable[[np.dtype], np.ndarray]  # the storage's bytes as an array of a dtype (no copy)
    elsize: int
    aligned: bool  # every active lane's address is at a whole element of the storage
    elements: np.ndarray | Rows | RowGroups  # per active lane, its element index (int64); or the lanes as Rows
    lanes: np.ndarray | None  # the active lanes' flat indices (None: every lane; Rows: their columns)
    storage: int = 0  # the storage's address (data_ptr)


@dataclass
class Counts:
    rows: int = 0  # loads and stores done through Rows views


COUNTS = Counts()

_SPAN: list = [None, (0, 0)]  # the element indices saved() last measured, and their (lowest, highest)


def forget_span() -> None:
    """Drop saved()'s kept measure (at each new access: no index array outlives its access here)."""
    _SPAN[:] = [None, (0, 0)]


def saved(array: np.ndarray, elements: np.ndarray | slice) -> tuple:
    """What undoes `array[elements] = ...`: (array, index, old values). Where the elements are dense (their span at
    most twice their number, as a row block's are) the index is the slice over their span: one copy of contiguous
    memory instead of a gather. An access's elements are written into several tables (and memory): their span is
    measured once. (A slice of elements: a replayed access's run, launch_replay.py.)"""
    if type(elements) is slice:
        return (array, elements, array[elements].copy())
    if not elements.size:
        return (array, elements, array[elements])
    if elements is _SPAN[0]:
        lo, hi = _SPAN[1]
    else:
        lo, hi = int(elements.min()), int(elements.max())
        _SPAN[:] = [elements, (lo, hi)]
    if lo >= 0 and hi - lo + 1 <= 2 * elements.size:
        return (array, slice(lo, hi + 1), array[lo:hi + 1].copy())
    return (array, elements, array[elements])


class MemoryUndo:
    """What one batch's stores and atomics overwrote in the launch's storages, to put back if it is undone."""

    def __init__(self, storages: list) -> None:
        self.storages = storages  # torch UntypedStorages of the launch's tensor arguments
        self.entries: list[tuple] = []
        self.whole = False  # every storage copied: later writes need nothing more

    def save(self, memory: np.ndarray, elements: np.ndarray) -> None:
        """Before a resolved store writes memory[elements]."""
        if not self.whole:
            self.entries.append(saved(memory, elements))

    def save_view(self, view: np.ndarray) -> None:
        """Before a resolved store writes through `view` (Rows.view of the memory)."""
        if not self.whole:
            self.entries.append((view, Ellipsis, view.copy()))

    def take(self) -> None:
        """Before any other write (Triton's own store, an atomic): a copy of every storage."""
        if not self.whole:
            self.entries.append((None, None, [s.clone() for s in self.storages]))
            self.whole = True

    def restore(self) -> None:
        for memory, elements, old in reversed(self.entries):
            if memory is None:
                for s, c in zip(self.storages, old):
                    s.copy_(c)
            else:
                memory[elements] = old  # elements: an index array, a slice (saved()) or ... (a view's every element)
        self.entries = []
        self.whole = False


def _undo() -> MemoryUndo | None:
    batch = current_batch()
    return None if batch is None else batch.memory


def resolved_rows(resolution: Resolved | None, ptrs: np.ndarray) -> Rows | None:
    """The Rows the checks resolved this very pointer array to (`resolution`: an access's; None: none)."""
    r = resolution
    return r.elements if r is not None and r.ptrs is ptrs and isinstance(r.elements, Rows) else None


def _resolution() -> Resolved | None:
    """The checks' resolution of the memory op running now (memory_events.Access.resolution; None: none)."""
    launch = current_launch()
    access = None if launch is None else launch.access
    return None if access is None else access.resolution


def _take(ptrs, mask, dtype: np.dtype) -> Resolved | None:
    """The running access's resolution, if it holds for these very arrays and dtype; it serves one op only."""
    launch = current_launch()
    access = None if launch is None else launch.access
    if access is None:
        return None
    r, access.resolution = access.resolution, None
    if r is None or program_axis.lane_programs() is None or r.ptrs is not ptrs.data:
        return None
    if (r.mask is None) != (mask is None) or (mask is not None and r.mask is not mask.data):
        return None
    if dtype.itemsize != r.elsize or not r.aligned:
        return None
    return r


def _load(original):
    from triton.runtime.interpreter import _get_np_dtype

    def create_masked_load(*args, **kwargs):
        if _resolution() is None:
            return original(*args, **kwargs)
        a = bind(original, args, kwargs).arguments
        ptrs, mask, other = a["ptrs"], a["mask"], a["other"]
        dtype_tt = ptrs.get_element_ty()
        dtype = np.dtype(_get_np_dtype(dtype_tt))
        r = _take(ptrs, mask, dtype)
        if r is None:
            return original(*args, **kwargs)
        current_launch().access.numpy = True
        return load_resolved(r.elements, r.lanes, r.memory(dtype), ptrs.data.shape, dtype, dtype_tt,
                             None if other is None else other.data)

    return create_masked_load


def load_resolved(elements: np.ndarray | Rows | RowGroups, lanes: np.ndarray | None, memory: np.ndarray,
                  shape: tuple[int, ...], dtype: np.dtype, dtype_tt, other: np.ndarray | None):
    """A batched load's result (a TensorHandle of `shape`) from the elements of `memory` (one storage as an array of
    the load's dtype) that a resolution named (Resolved.elements and .lanes), `other` (its data, None: zeros) in the
    lanes masked off."""
    from triton.runtime.interpreter import TensorHandle

    if isinstance(elements, (Rows, RowGroups)):
        COUNTS.rows += 1
        if isinstance(elements, Rows) and elements.every_lane:
            return TensorHandle(np.array(elements.view(memory)).reshape(shape), dtype_tt)
        out = _masked_off(other, shape, dtype)
        every = out.reshape(shape[0], -1)
        for begin, end, rows in parts_of(elements):
            every[begin:end, rows.start:rows.stop] = rows.view(memory)
        return TensorHandle(out, dtype_tt)
    values = memory[elements]  # (a slice of elements, a replay's run: a view, copied below)
    if lanes is None:
        return TensorHandle(values.reshape(shape).copy() if type(elements) is slice else values.reshape(shape),
                            dtype_tt)
    out = _masked_off(other, shape, dtype)
    out.reshape(-1)[lanes] = values
    return TensorHandle(out, dtype_tt)


def parts_of(elements: Rows | RowGroups) -> list[tuple[int, int, Rows]]:
    """(first program row, last + 1, Rows) per group of an access done through Rows views (Rows: one group)."""
    return elements.parts() if isinstance(elements, RowGroups) else [(0, elements.programs, elements)]


def rows_elements(rows: Rows) -> np.ndarray:
    """The element indices Rows stand for, program by program (what the lane by lane path reads them as)."""
    return (rows.first + rows.step * np.arange(rows.programs, dtype=np.int64)[:, None]
            + np.arange(rows.n, dtype=np.int64)).reshape(-1)


def _masked_off(other: np.ndarray | None, shape: tuple, dtype: np.dtype) -> np.ndarray:
    """A load's result before its active lanes are filled in: `other` in every lane (zeros without one)."""
    # order "C": the lanes are then written through a reshape of it (a view only of a C-ordered array; numpy's
    # default "K" order lays a copy of a broadcast operand out otherwise)
    return np.array(np.broadcast_to(other, shape), dtype=dtype, order="C") if other is not None \
        else np.zeros(shape, dtype)


def _store(original):
    def create_masked_store(*args, **kwargs):
        undo = _undo()
        if _resolution() is None:
            if undo is not None:
                undo.take()
            return original(*args, **kwargs)
        a = bind(original, args, kwargs).arguments
        ptrs, value, mask = a["ptrs"], a["value"], a["mask"]
        values = np.asarray(value.data)
        r = _take(ptrs, mask, values.dtype)
        if r is None or values.shape != ptrs.data.shape:
            if undo is not None:
                undo.take()
            return original(*args, **kwargs)
        current_launch().access.numpy = True
        store_resolved(r.elements, r.lanes, r.memory(values.dtype), values, undo)
        return None

    return create_masked_store


def store_resolved(elements: np.ndarray | Rows | RowGroups, lanes: np.ndarray | None, memory: np.ndarray,
                   values: np.ndarray, undo: MemoryUndo | None) -> None:
    """A batched store of `values` (the op's shape) into the elements of `memory` (one storage as an array of their
    dtype) that a resolution named, what it overwrites saved in `undo` first."""
    if isinstance(elements, (Rows, RowGroups)):
        COUNTS.rows += 1
        every = values.reshape(values.shape[0], -1)
        for begin, end, rows in parts_of(elements):
            view = rows.view(memory)
            if undo is not None:
                undo.save_view(view)
            view[...] = every[begin:end, rows.start:rows.stop]
        return
    flat = values.reshape(-1)
    if undo is not None:
        undo.save(memory, elements)
    # Lanes in the serial engine's program order: on an element stored by several, the last one stays.
    memory[elements] = flat if lanes is None else flat[lanes]


def _addptr(original):
    """Triton's `ptr + element_bytes * offset.astype(uint64)` (three new arrays: a batch's tile of addresses is
    made three times) with one new array: an int64 offset is read as uint64 in place of a converted copy, and
    the product and the sum go into it. Bit for bit Triton's result (uint64 arithmetic wraps alike); any other
    operand (a pointer array not of uint64, an offset that is not an array or has no axis) goes to Triton's own."""
    from triton.runtime.interpreter import TensorHandle

    def create_addptr(ptr, offset):
        base, off = ptr.data, offset.data
        if not isinstance(off, np.ndarray) or not off.ndim or not isinstance(base, np.ndarray) \
                or base.dtype != np.uint64:
            return original(ptr, offset)
        width = np.uint64(max(1, ptr.get_element_ty().primitive_bitwidth // 8))
        # In C order whatever the operands' layout (numpy's default follows theirs: a tile built from a column
        # and a row of offsets may come out column-major), as the loads and stores take them: no copy there.
        if off.dtype.itemsize == 8 and off.dtype.kind in "iu" and width != 1:
            out = np.multiply(off.view(np.uint64), width, order="C")
        else:
            out = off.astype(np.uint64, order="C")
            if width != 1:
                np.multiply(out, width, out=out)
        if np.broadcast_shapes(out.shape, base.shape) == out.shape:
            np.add(out, base, out=out)
        else:
            scaled = out
            out = np.add(base, out, order="C")
            if getattr(ptr, program_axis.MARK, False) and not getattr(offset, program_axis.MARK, False):
                _remember(out, base, scaled)  # a pointer per program + offsets shared by every program
            elif getattr(offset, program_axis.MARK, False) and not getattr(ptr, program_axis.MARK, False):
                _remember(out, scaled, base)
        return TensorHandle(out, ptr.dtype)

    return create_addptr


# A batch's tile of addresses made as per_program[p] + shared[j] (uint64), by the array it is: weakly, so an entry
# goes with its array (and an id reused by a later array is told apart by the reference).
_LAYOUTS: dict[int, tuple[weakref.ref, np.ndarray, np.ndarray]] = {}  # id -> (the array, per program, shared)


def _remember(out: np.ndarray, per_program: np.ndarray, shared: np.ndarray) -> None:
    """Keep out's layout when `per_program` (batched) holds one value per program, broadcast over its lanes, and
    `shared` (not batched) the same lanes for every program."""
    programs = out.shape[0] if out.ndim else 0
    if programs < 2 or per_program.ndim == 0 or per_program.shape[0] != programs or any(
            stride and n != 1 for n, stride in zip(per_program.shape[1:], per_program.strides[1:])):
        return
    if shared.ndim == out.ndim:
        if shared.shape[0] != 1:
            return
        shared = shared[0]  # out is the broadcast of both operands: shared broadcasts to one program's lanes
    key = id(out)

    def gone(ref, key=key):
        if _LAYOUTS.get(key, (None,))[0] is ref:
            del _LAYOUTS[key]

    _LAYOUTS[key] = (weakref.ref(out, gone), per_program[(slice(None),) + (0,) * (per_program.ndim - 1)], shared)


def program_layout(addresses: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(per_program, shared) when `addresses` (programs x lanes, uint64) is the very array create_addptr made as
    per_program[p] + shared[j]; None when it is not known so."""
    found = _LAYOUTS.get(id(addresses))
    if found is None or found[0]() is not addresses:
        return None
    return found[1], np.broadcast_to(found[2], addresses.shape[1:]).reshape(-1)  # made here: most are never asked


def _atomic(original):
    def op(*args, **kwargs):
        undo = _undo()
        if undo is not None:
            undo.take()
        return original(*args, **kwargs)

    return op


def install() -> None:
    """Innermost: right above Triton's own load and store (before every other patch of them)."""
    from triton.runtime import interpreter

    builder = interpreter.interpreter_builder
    patch(builder, "create_masked_load", _load)
    patch(builder, "create_masked_store", _store)
    patch(builder, "create_addptr", _addptr)
    for name in ("create_atomic_rmw", "create_atomic_cas"):
        patch(builder, name, _atomic)
