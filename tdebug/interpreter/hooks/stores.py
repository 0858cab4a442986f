"""Store recording under the interpreter: which program stored each element of each tensor, at which line.

Every store of a launch (masked, unmasked, block-pointer and descriptor stores all end in
create_masked_store; atomics in create_atomic_rmw) is recorded with the program id, the kernel's
source line, the element offsets into the storage written and each lane's place in its block. At a
program's first store, its integer scalars (pid_m, pid_n, row, ...) are kept too, so a set of programs
can be named in the kernel's own terms. tdebug.runtime.store_maps replays the records into an output's
logical shape. Recording costs one stack walk and one copy of the active addresses per store.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from ..batched import program_axis
from ..batched.batch_memory import Rows, resolved_rows
from ..batched.launch import current_batch
from ..batched.launch_replay import NOTHING
from ..batched.program_axis import Batch, current_program, is_batched, lane_programs
from ..frames import current_pid, user_frame
from ..versions import bind, patcher
from . import memory_events

patch = patcher("stores")

MAX_LANES = 1 << 25  # lanes kept over all recorded launches; the oldest launches are dropped beyond it, and a
# launch that alone stores more keeps none (`LaunchStores.dropped`): its records would cost 9+ bytes a lane


@dataclass
class ArgView:
    """A tensor argument as the caller passed it and as the kernel saw it (the host copy may lie elsewhere,
    e.g. relocated between guard bands): same shape, each with its own storage offset and strides."""

    name: str
    shape: tuple[int, ...]
    device_offset: int
    device_strides: tuple[int, ...]
    host_offset: int
    host_strides: tuple[int, ...]


@dataclass
class StorageInfo:
    """A storage that a launch got as a tensor argument (the interpreter's host copy of it)."""

    host_ptr: int
    device_ptr: int  # the caller's storage (the same one for a CPU tensor)
    nbytes: int
    views: list[ArgView]  # the kernel parameters pointing into it


@dataclass
class StoreRecord:
    pid: tuple[int, int, int]
    file: str
    line: int
    storage: int  # host_ptr of the storage written
    elsize: int
    offsets: np.ndarray  # element offsets into the storage, one per active lane
    lanes: np.ndarray  # flat index of each of those lanes in the stored block
    block: tuple[int, ...]
    hit: int  # how many times this program had reached this file:line in a store, this one included
    atomic: bool = False


@dataclass
class ProgramStore:
    """One store op of one program under the serial engine, kept as its addresses and mask (the op's own arrays):
    read as StoreRecords (program_records) only when a launch's records are, which most launches' never are."""

    pid: tuple[int, int, int]
    file: str
    line: int
    ranges: list[tuple[int, int]]  # the launch's storages
    elsize: int
    addresses: np.ndarray
    mask: np.ndarray | None
    hit: int
    atomic: bool
    lanes: int  # active lanes

    def records(self) -> list[StoreRecord]:
        return program_records(self.pid, self.file, self.line, self.ranges, self.addresses, self.mask, self.elsize,
                               self.hit, self.atomic)


@dataclass
class BatchStores:
    """One store op of a batch under the batched engine: the addresses and mask of all its programs, kept as
    they are; LaunchStores.records reads them as the serial engine's records (program_records per program)."""

    batch: Batch  # its programs (records of one batch are expanded together, program by program)
    file: str
    line: int
    ranges: list[tuple[int, int]]  # the launch's storages
    elsize: int
    addresses: np.ndarray | Affine  # (P,) + block, or the same as an Affine
    mask: np.ndarray | None  # (P,) + block, or None: every lane
    hit: int  # the same for every program of a batch: they all ran the store op as often
    atomic: bool
    lanes: int  # active lanes, all programs

    def of_program(self, i: int) -> list[StoreRecord]:
        a = self.addresses
        addresses = a.of_program(i) if isinstance(a, (Affine, Moved)) else a[i]
        return program_records(self.batch.pid(i), self.file, self.line, self.ranges, addresses,
                               None if self.mask is None else self.mask[i], self.elsize, self.hit, self.atomic)


@dataclass
class Affine:
    """A batched store's addresses when every program's block is the first program's moved as a whole (a tile or
    row at each program's own place, the common case): each program's first address and the block's offsets
    from it, instead of an address per lane of every program (8 bytes a lane, kept while the records are)."""

    firsts: np.ndarray  # (P,)
    pattern: np.ndarray  # the block's shape: each lane's address minus the block's first, the same in every program

    def of_program(self, i: int) -> np.ndarray:
        return self.firsts[i] + self.pattern  # the dtype's wrap-around arithmetic: the very addresses

    @staticmethod
    def of(addresses: np.ndarray, checked: bool = False) -> Affine | None:
        """addresses (P,) + block as an Affine, when they are one (checked on every lane, masked or not;
        `checked`: the checks found every lane of them a program's dense run already, batch_memory.Rows)."""
        if not _compactable(addresses) or addresses.dtype not in (np.uint64, np.int64):
            return None
        flat = addresses.reshape(addresses.shape[0], -1)
        firsts = flat[:, 0].copy()
        pattern = flat[0] - flat[0, 0]
        if checked:
            return Affine(firsts, pattern.reshape(addresses.shape[1:]))
        rows = max(1, _AFFINE_CHUNK // flat.shape[1])  # programs per pass: its temporaries stay in cache
        for i in range(0, flat.shape[0], rows):
            if not (flat[i:i + rows] - firsts[i:i + rows, None] == pattern).all():
                return None
        return Affine(firsts, pattern.reshape(addresses.shape[1:]))


@dataclass
class Moved:
    """A replayed store's addresses (launch_replay.py): the recorded launch's, `delta` bytes further (its tensor
    lies elsewhere now), moved per program only when the records are read."""

    addresses: np.ndarray | Affine
    delta: int

    def of_program(self, i: int) -> np.ndarray:
        a = self.addresses
        return _moved(a.of_program(i) if isinstance(a, Affine) else a[i], self.delta)


_AFFINE_CHUNK = 1 << 18  # lanes checked per pass by Affine.of
_COMPACT_FROM = 1 << 14  # lanes of a batched store below which its arrays are kept as they are (the check costs more)


def _compactable(a: np.ndarray) -> bool:
    """A batched store's array (P,) + block worth a compact form: big enough, of two programs or more, and not
    one row broadcast over the programs already."""
    return a.size >= _COMPACT_FROM and a.ndim >= 2 and a.shape[0] >= 2 and a.strides[0] != 0


def program_records(pid: tuple[int, int, int], file: str, line: int, ranges: list[tuple[int, int]],
                    addresses: np.ndarray, mask: np.ndarray | None, elsize: int, hit: int,
                    atomic: bool) -> list[StoreRecord]:
    """One program's store: a record per storage it reached, its active lanes' element offsets there."""
    shape = tuple(np.shape(addresses))
    addr = np.asarray(addresses).reshape(-1).astype(np.uint64, copy=False).view(np.int64)
    if mask is not None:
        lanes = np.flatnonzero(np.broadcast_to(np.asarray(mask, dtype=bool), shape))
        addr = addr[lanes]
    else:
        lanes = np.arange(addr.size)
    records = []
    for start, end in ranges if lanes.size else ():
        inside = (addr >= start) & (addr < end)
        if inside.any():
            records.append(StoreRecord(pid, file, line, start, elsize, (addr[inside] - start) // elsize,
                                       lanes[inside].astype(np.int64), shape, hit, atomic))
    return records


@dataclass
class LaunchStores:
    index: int  # 1-based, in launch order
    kernel: str
    grid: tuple[int, int, int] = (1, 1, 1)
    storages: dict[int, StorageInfo] = field(default_factory=dict)
    raw: list[StoreRecord | ProgramStore | BatchStores] = field(default_factory=list)  # in the order the stores ran
    # The kernel's integer scalars at each program's first store: one program's, or (batched engine) one value
    # per program of a batch for the programs `indices` of `pids`.
    raw_scalars: list[tuple] = field(default_factory=list)
    _records: list[StoreRecord] | None = field(default=None, repr=False)
    _scalars: dict | None = field(default=None, repr=False)
    # More than MAX_LANES lanes stored: the records were let go and no more are kept (no localisation into it)
    dropped: bool = False
    kept_lanes: int = 0  # its lanes when it ended (StoreRecorder's count of what all launches keep)

    @property
    def records(self) -> list[StoreRecord]:
        """One record per program and store op, in the serial engine's order (program by program)."""
        if self._records is None:
            out: list[StoreRecord] = []
            i = 0
            while i < len(self.raw):
                r = self.raw[i]
                if isinstance(r, StoreRecord):
                    out.append(r)
                    i += 1
                    continue
                if isinstance(r, ProgramStore):
                    out.extend(r.records())
                    i += 1
                    continue
                j = i
                while j < len(self.raw) and isinstance(self.raw[j], BatchStores) and self.raw[j].batch is r.batch:
                    j += 1
                group = self.raw[i:j]
                for p in range(r.batch.size):
                    for g in group:
                        out.extend(g.of_program(p))
                i = j
            self._records = out
        return self._records

    @records.setter
    def records(self, records: list[StoreRecord]) -> None:
        self.raw = list(records)
        self._records = None

    @property
    def scalars(self) -> dict[tuple[int, int, int], dict[str, int]]:
        """Per program: the kernel's integer scalars at its first store with an active lane."""
        if self._scalars is None:
            out: dict[tuple[int, int, int], dict[str, int]] = {}
            for entry in self.raw_scalars:
                if len(entry) == 2:
                    out[entry[0]] = entry[1]
                    continue
                pids, indices, every = entry
                for i in indices.tolist():
                    pid = (int(pids[0, i]), int(pids[1, i]), int(pids[2, i]))
                    out[pid] = program_values(every, i)
            self._scalars = out
        return self._scalars

    @scalars.setter
    def scalars(self, scalars: dict) -> None:
        self.raw_scalars = list(scalars.items())
        self._scalars = None

    def changed(self) -> None:
        self._records = self._scalars = None

    @property
    def lanes(self) -> int:
        return _lanes(self.raw)


def _lanes(raw: list) -> int:
    return sum(r.offsets.size if isinstance(r, StoreRecord) else r.lanes for r in raw)


class StoreRecorder:
    def __init__(self, max_lanes: int = MAX_LANES) -> None:
        self.launches: list[LaunchStores] = []
        self.max_lanes = max_lanes
        self.count = 0
        self.installed = False
        self._current: LaunchStores | None = None
        self._ranges: list[tuple[int, int]] = []  # [start, end) of the current launch's storages
        self._hits: dict[tuple, object] = {}
        self._scalar_pids: set[tuple[int, int, int]] = set()  # programs (serial engine) whose scalars are kept
        self._frame_scalars: tuple = (None, {})  # (op, _integer_scalars) for the op a batch runs per program
        self._kept = 0  # lanes the current launch's records hold
        self._marked: tuple[int, int] | None = None  # records before the store a recorded launch runs (replay_step)
        self._total = 0  # lanes the ended launches' records held when they ended

    def clear(self) -> None:
        """Forget every launch (a new case begins): launches are numbered from 1 again."""
        self.launches = []
        self.count = 0
        self._total = 0

    def begin_launch(self, kernel: str, named: list[tuple[str, object, object]]) -> None:
        """named: (parameter, the caller's argument, the interpreter's host copy) per argument."""
        self.count += 1
        launch = LaunchStores(self.count, kernel)
        tensor = _tensor_class()
        for name, dev, hst in named:
            kind = type(hst)
            if kind is int or kind is float or kind is bool or hst is None:
                continue
            if kind is not tensor:
                dev, hst = getattr(dev, "base", dev), getattr(hst, "base", hst)  # TensorWrapper, TensorDescriptor
                if not (hasattr(hst, "untyped_storage") and hasattr(dev, "untyped_storage")):
                    continue
            storage = hst.untyped_storage()
            ptr = storage.data_ptr()
            offset, strides = hst.storage_offset(), tuple(hst.stride())
            if dev is hst:  # (a CPU tensor is its own host copy)
                view = ArgView(name, tuple(dev.shape), offset, strides, offset, strides)
            else:
                view = ArgView(name, tuple(dev.shape), dev.storage_offset(), tuple(dev.stride()), offset, strides)
            if ptr in launch.storages:
                launch.storages[ptr].views.append(view)
            elif storage.nbytes():
                device_ptr = ptr if dev is hst else dev.untyped_storage().data_ptr()
                launch.storages[ptr] = StorageInfo(ptr, device_ptr, storage.nbytes(), [view])
        self._ranges = sorted((s.host_ptr, s.host_ptr + s.nbytes) for s in launch.storages.values())
        self._hits = {}
        self._scalar_pids = set()
        self._kept = 0
        self._current = launch
        self.launches.append(launch)

    # -- the batched engine's checkpoints (grid_loop.Listener) -------------------------------------------------
    def checkpoint(self) -> tuple | None:
        launch = self._current
        if launch is None:
            return None
        return launch, len(launch.raw), dict(self._hits), len(launch.raw_scalars), set(self._scalar_pids)

    def rollback(self, token: tuple | None) -> None:
        if token is None:
            return
        launch, count, hits, scalars, scalar_pids = token
        del launch.raw[count:]
        self._kept = launch.lanes
        self._scalar_pids = scalar_pids
        del launch.raw_scalars[scalars:]
        self._hits = hits
        launch.changed()

    def commit(self, token: tuple | None) -> None:
        pass

    def set_grid(self, grid: tuple[int, ...]) -> None:
        if self._current is not None:
            self._current.grid = tuple(int(g) for g in grid)

    # -- a launch (grid_loop's listener hooks) ------------------------------------------------------------------
    def on_host_args(self, launch, args_hst: list, kwargs_hst: dict) -> None:
        executor = launch.executor
        named = list(zip(list(executor.arg_names), launch.args_dev, args_hst))
        named += [(key, launch.kwargs[key], kwargs_hst[key]) for key in kwargs_hst]
        self.begin_launch(executor.fn.__name__, named)

    def on_launch_end(self, launch, error: BaseException | None) -> None:
        self.end_launch()

    def end_launch(self) -> None:
        """Keep the launches' records within max_lanes, dropping the oldest (counted once each: a process may
        run thousands of launches)."""
        launch, self._current = self._current, None
        if launch is not None:
            launch.kept_lanes = launch.lanes
            self._total += launch.kept_lanes
        while len(self.launches) > 1 and self._total > self.max_lanes:
            self._total -= self.launches.pop(0).kept_lanes

    def before(self, access: memory_events.Access) -> None:
        """A store or atomic_rmw about to run (memory_events): its lanes under the mask the checks left it."""
        ptrs, mask = access.ptrs, access.mask
        launch = self._current
        if launch is not None and access.launch is not None and access.launch.recording is not None:
            self._marked = (len(launch.raw), len(launch.raw_scalars))  # (what replay_step reads back)
        self.store(ptrs.data, None if mask is None else mask.data, _element_size(ptrs),
                   atomic=access.op == "create_atomic_rmw", rows=resolved_rows(access.resolution, ptrs.data))

    # -- a replayed launch (launch_replay.py) -------------------------------------------------------------------
    def replay_step(self, access: memory_events.Access, recording):
        """The record of a recorded store again at a replay: the same lanes, hit count and scalars, the addresses
        moved to where this launch's tensor is. None (no replay) when its scalars come from memory's values."""
        launch, marked, self._marked = self._current, self._marked, None
        if launch is None or not self._ranges or marked is None:
            return NOTHING if launch is None or not self._ranges else None
        added, scalars = launch.raw[marked[0]:], launch.raw_scalars[marked[1]:]
        if not added and not scalars:
            return NOTHING  # no lane active
        if launch.dropped or len(added) != 1 or not isinstance(added[0], BatchStores) or len(scalars) > 1:
            return None
        if scalars and not _scalars_of_key(recording):
            return None
        record, r = added[0], access.resolution
        index, old = recording.storage_index(r.storage), r.storage
        have = self._hits.get((record.batch.serial, "scalars"))
        for entry in scalars:
            for value in entry[2].values():
                if isinstance(value, np.ndarray):
                    value.flags.writeable = False  # shared by every replay's records

        def step(replay) -> None:
            launch = self._current
            if launch is None or launch.dropped or not self._ranges:
                return
            batch = replay.batch
            self._hits[(batch.serial, record.file, record.line)] = record.hit
            launch.changed()
            launch.raw.append(BatchStores(batch, record.file, record.line, self._ranges, record.elsize,
                                          Moved(record.addresses, replay.ptr(index) - old), record.mask, record.hit,
                                          record.atomic, record.lanes))
            for _, indices, every in scalars:
                launch.raw_scalars.append((batch.pids, indices, every))
                self._hits[(batch.serial, "scalars")] = have
            self._count(launch, record.lanes)

        return step

    def unreplayable(self, token) -> str | None:
        return None  # (what it records at a replay: replay_step)

    def store(self, addresses: np.ndarray, mask: np.ndarray | None, elsize: int, atomic: bool = False,
              rows: Rows | None = None) -> None:
        """Record a store's lanes (`rows`: the checks proved its layout, batch_memory.Rows; None: not known)."""
        launch = self._current
        if launch is None or not self._ranges or launch.dropped:
            return
        before = len(launch.raw)
        self._store(launch, addresses, mask, elsize, atomic, rows)
        self._count(launch, _lanes(launch.raw[before:]))

    def _count(self, launch: LaunchStores, lanes: int) -> None:
        """`lanes` more kept by the running launch: past max_lanes its records go (a 1 GB tensor written in place)."""
        self._kept += lanes
        if self._kept > self.max_lanes:
            launch.dropped = True
            launch.raw.clear()
            launch.raw_scalars.clear()
            launch.changed()

    def _store(self, launch: LaunchStores, addresses: np.ndarray, mask: np.ndarray | None, elsize: int,
               atomic: bool, rows: Rows | None) -> None:
        frame = kernel_frame()
        file, line = (frame.f_code.co_filename, frame.f_lineno) if frame is not None else ("", 0)
        batch = lane_programs()
        if batch is None:
            scalars = (lambda: self._scalars_of(frame)) if frame is not None else None
            self._store_program(launch, current_pid(), scalars, file, line, addresses, mask, elsize, atomic)
            return
        # The batched engine: the lanes of every program of a batch, a program per row, recorded in one go.
        every = _integer_scalars(frame) if frame is not None else None
        self._store_batch(launch, batch, every, file, line, np.asarray(addresses), mask, elsize, atomic, rows)

    def _scalars_of(self, frame) -> dict[str, int]:
        """scalar_locals(frame), the frame's scalars read once per op when the batched engine runs an op (an
        atomic) program by program: every program of the batch then picks its own value."""
        program = current_program()
        batch = current_batch()
        if program is None or batch is None:
            return scalar_locals(frame)
        key = (batch.serial, batch.effects, batch.size, id(frame), frame.f_lineno)
        if self._frame_scalars[0] != key:
            self._frame_scalars = (key, _integer_scalars(frame))
        return program_values(self._frame_scalars[1], program[0])

    def _store_program(self, launch: LaunchStores, pid: tuple[int, int, int], scalars, file: str, line: int,
                       addresses: np.ndarray, mask: np.ndarray | None, elsize: int, atomic: bool) -> None:
        key = (pid, file, line)
        hit = self._hits[key] = self._hits.get(key, 0) + 1  # counted with every lane masked off too
        addresses = np.asarray(addresses)
        if mask is not None:
            mask = np.asarray(mask)
            lanes = int(np.count_nonzero(mask)) * (addresses.size // max(mask.size, 1))
            if not lanes:
                return
        else:
            lanes = addresses.size
        launch.changed()
        launch.raw.append(ProgramStore(pid, file, line, self._ranges, elsize, addresses, mask, hit, atomic, lanes))
        if pid not in self._scalar_pids and scalars is not None:
            self._scalar_pids.add(pid)
            launch.raw_scalars.append((pid, scalars()))

    def _store_batch(self, launch: LaunchStores, batch, every: dict | None, file: str, line: int,
                     addresses: np.ndarray, mask: np.ndarray | None, elsize: int, atomic: bool,
                     rows: Rows | None) -> None:
        """What _store_program records for each program of the batch, for all of them at once: the arrays are
        kept (the batched engine's own copies) and read per program only when the records are."""
        if batch.lanes is not None:  # a loop's iterations as lanes (loop_lanes): a store op of each iteration
            trips, outer = batch.lanes.trips, batch.lanes.batch
            for t in range(trips):
                rows = np.arange(outer.size) * trips + t
                have = self._hits.get((outer.serial, "scalars"))
                if have is not None and have.all():
                    every = None  # every program's scalars are recorded: no iteration adds to them
                self._store_batch(launch, outer, None if every is None else _of_lanes(every, rows), file, line,
                                  _iteration(addresses, outer.size, trips, t),
                                  None if mask is None else _iteration(np.asarray(mask), outer.size, trips, t),
                                  elsize, atomic, None)
            return
        key = (batch.serial, file, line)
        hit = self._hits[key] = self._hits.get(key, 0) + 1
        programs = batch.size
        # rows: the checks proved its layout (and its mask the same in every program)
        if mask is not None:
            mask = _shared_rows(np.broadcast_to(np.asarray(mask, dtype=bool), addresses.shape), rows is not None)
            if mask.ndim and mask.strides[0] == 0:  # one row for every program: counted once
                per_program = int(np.count_nonzero(mask[0]))
                lanes, active = per_program * programs, np.full(programs, per_program > 0)
            else:
                lanes = int(np.count_nonzero(mask))
                active = mask.reshape(programs, -1).any(axis=1)
        else:
            lanes = addresses.size
            active = np.ones(programs, dtype=bool)
        if not lanes:
            return
        launch.changed()
        launch.raw.append(BatchStores(batch, file, line, self._ranges, elsize,
                                      Affine.of(addresses, checked=rows is not None and rows.every_lane)
                                      or addresses, mask, hit, atomic, lanes))
        if every is None:
            return
        if batch.whole is not None:  # a part of the batch (a predicated loop): the scalars are the whole's
            part_active, active = active, np.zeros(batch.whole.size, dtype=bool)
            active[batch.rows] = part_active
            batch = batch.whole
        if batch.root is not None:  # a compacted iteration: the scalars are its programs', put in their rows
            part_active, active = active, np.zeros(batch.root.size, dtype=bool)
            active[batch.root_rows] = part_active
            every = {k: _widened(v, batch.root_rows, batch.root.size) for k, v in every.items()}
            batch = batch.root
        have_key = (batch.serial, "scalars")
        have = self._hits.get(have_key)
        new = active if have is None else active & ~have
        if new.any():
            self._hits[have_key] = active if have is None else have | active
            every = {k: v if np.ndim(v) == 0 else v.copy() if isinstance(v, np.ndarray) else np.array(v)
                     for k, v in every.items()}
            launch.raw_scalars.append((batch.pids, np.flatnonzero(new), every))


def _iteration(lanes: np.ndarray, programs: int, trips: int, t: int) -> np.ndarray:
    """Iteration t's rows of a loop's lanes (program p's in row p * trips + t): one per program, a view."""
    lanes = np.broadcast_to(lanes, (programs * trips,) + lanes.shape[1:]) if lanes.shape[0] != programs * trips \
        else lanes
    return lanes.reshape((programs, trips) + lanes.shape[1:])[:, t]


def _of_lanes(every: dict, rows: np.ndarray) -> dict:
    """The integer scalars (_integer_scalars) of the lanes `rows`, one per program."""
    out = {}
    for k, v in every.items():
        if isinstance(v, program_axis.LoopValues):
            out[k] = v.of_rows(rows)
        else:
            out[k] = v if np.ndim(v) == 0 else np.asarray(v)[rows]
    return out


def _widened(value, rows: np.ndarray, size: int):
    """A compacted iteration's value of an integer scalar (_integer_scalars) in its programs' rows of the whole."""
    if isinstance(value, program_axis.LoopValues):
        return value.placed(rows, size)
    if np.ndim(value) == 0:
        return value
    out = np.zeros(size, dtype=np.asarray(value).dtype)
    out[rows] = value
    return out


def _shared_rows(mask: np.ndarray, same: bool = False) -> np.ndarray:
    """A batched store's mask (P,) + block as the first program's row repeated when every program's is the same
    (a loop's tail mask; `same`: known to be): the records then keep one row, not a byte per lane of every program."""
    if not _compactable(mask) or not (same or (mask == mask[:1]).all()):
        return mask
    return np.broadcast_to(mask[:1].copy(), mask.shape)  # a copy: the whole mask is let go


def kernel_frame():
    """The kernel's frame at this store: the innermost user frame, past triton-viz's wrappers (tdebug viz)."""
    frame = user_frame()
    while frame is not None and f"{os.sep}triton_viz{os.sep}" in frame.f_code.co_filename:
        frame = user_frame(frame.f_back)
    return frame


def scalar_locals(frame, program: tuple[int, int] | None = None) -> dict[str, int]:
    """The kernel's integer scalars at this point of a program: pid_m, pid_n, row, ... (not blocks).
    program: (index, batch size) under the batched engine, whose values hold every program of a batch."""
    program = program or current_program()
    return program_values(_integer_scalars(frame), program[0] if program else 0)


def program_values(every: dict[str, object], i: int) -> dict[str, int]:
    """Program i's value of each scalar in `every` (_integer_scalars: an int, one value per program, or a
    predicated loop's variable, left out where that program has none)."""
    values: dict[str, int] = {}
    for name, v in every.items():
        if isinstance(v, program_axis.LoopValues):
            if v.bound[i]:
                values[name] = int(v.values[i])
        else:
            values[name] = int(v if np.ndim(v) == 0 else v[i])
    return values


def _scalar_handle(value):
    """The handle of a kernel local that is an integer scalar tensor (not a block, a pointer, a bf16's bits), or
    None."""
    handle = getattr(value, "handle", None)
    data = getattr(handle, "data", None)
    if not isinstance(data, np.ndarray) or data.dtype.kind not in "iu":  # (np.issubdtype(, np.integer))
        return None
    kind = getattr(value, "type", None)
    if not callable(getattr(kind, "is_block", None)) or kind.is_block() or kind.is_ptr():
        return None
    if not kind.scalar.is_int():  # bf16 / fp8 values are held as integer bit patterns: not integer scalars
        return None
    return handle


def _scalars_of_key(recording) -> bool:
    """Are the kernel's integer scalars at this store the key's values (launch_replay.py), none from memory?"""
    frame = kernel_frame()
    return frame is not None and not any(
        handle is not None and recording.is_data(handle)
        for name, value in frame.f_locals.items() if not name.startswith("_")
        for handle in (_scalar_handle(value),))


def _tensor_class():
    import torch

    return torch.Tensor


def _moved(addresses: np.ndarray, delta: int) -> np.ndarray:
    """Addresses `delta` bytes further (their dtype's wrap-around arithmetic)."""
    return (addresses.view(np.uint64) + np.uint64(delta % (1 << 64))).view(addresses.dtype)


def _integer_scalars(frame) -> dict[str, object]:
    """The frame's integer scalars: an int, or (batched engine) an array with one value per program."""
    found: dict[str, object] = {}
    for name, value in frame.f_locals.items():
        if isinstance(value, bool) or name.startswith("_"):
            continue
        if isinstance(value, (int, np.integer)):
            found[name] = int(value)
            continue
        handle = _scalar_handle(value)
        if handle is None:
            continue
        data = handle.data
        if is_batched(handle):
            found[name] = data.reshape(data.shape[0], -1)[:, 0]
        elif data.size == 1:
            found[name] = int(data.reshape(-1)[0])
    batch = current_batch()
    if batch is not None:  # after a predicated loop: its variable's value per program
        batch = batch.whole or batch
        for (code, name), values in batch.loop_scalars.items():
            if code is frame.f_code and name in found:
                found[name] = values
        for (code, name), (value, bound) in batch.loop_bound.items():  # bound inside a loop, not in every program
            if code is frame.f_code and isinstance(found.get(name), np.ndarray) \
                    and found[name].shape == bound.shape and frame.f_locals.get(name) is value:
                found[name] = program_axis.LoopValues(found[name], bound)
    return found


RECORDER = StoreRecorder()


def _element_size(pointer) -> int:
    return max(1, pointer.get_element_ty().primitive_bitwidth // 8)


def install(recorder: StoreRecorder = RECORDER) -> StoreRecorder:
    """Record every launch's stores from now on (TRITON_INTERPRET=1, before any kernel runs)."""
    if recorder.installed:
        return recorder
    from triton.runtime import interpreter

    def grid_dim(original):
        def set_grid_dim(*args, **kwargs):
            recorder.set_grid(args if len(args) == 3 and not kwargs else  # (grid_loop's call: nx, ny, nz)
                              tuple(bind(original, args, kwargs).arguments.values()))
            return original(*args, **kwargs)
        return set_grid_dim

    builder = interpreter.interpreter_builder
    memory_events.listen("stores", recorder, ("create_masked_store", "create_atomic_rmw"))  # and each launch
    patch(builder, "set_grid_dim", grid_dim)
    recorder.installed = True
    return recorder
