"""The interpreter's store records replayed into an output: per element, the program that stored it last,
the store's file:line, the lane of its block, and whether another program (or launch) stored it before."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..interpreter.hooks.stores import RECORDER, ArgView, LaunchStores, StorageInfo, StoreRecorder


@dataclass
class WriterMaps:
    """Per element of an output (its logical shape): who stored it last, in the recorded launches."""

    launch: LaunchStores  # the last launch that stored into the output
    arg: str  # the kernel parameter the output was passed as
    writer: np.ndarray  # linear program id in its launch; -1: no recorded store
    site: np.ndarray  # index into sites; -1: none
    lane: np.ndarray  # flat lane index in the stored block
    hit: np.ndarray  # the record's hit count (see StoreRecord.hit)
    sites: list[tuple[str, int, tuple[int, ...]]]  # (file, line, block shape)
    pids: dict[int, tuple[int, int, int]]  # linear -> (x, y, z), for the last launch
    scalars: dict[int, dict[str, int]]  # linear -> the kernel's integer scalars at its first store
    earlier_hits: dict[tuple, int]  # (file, line, pid) -> store hits in launches before the last one
    storing: set[int]  # every program of the last launch that stored into the output
    overwritten: np.ndarray  # bool: stored by two or more programs (or launches); the last store is kept
    atomics: list[tuple[int, np.ndarray]]  # (program, flat elements) of each atomic update in the last launch
    launch_of: np.ndarray  # the index of the launch that stored each element last; 0: none


def linear_pid(pid: tuple[int, int, int], grid: tuple[int, int, int]) -> int:
    return pid[0] + grid[0] * (pid[1] + grid[1] * pid[2])


def pid_text(pid: tuple[int, int, int], grid: tuple[int, int, int]) -> str:
    """'3' on a 1-D grid, '1,0' on a 2-D one: as --pid takes it."""
    dims = 3 if grid[2] > 1 else 2 if grid[1] > 1 else 1
    return ",".join(str(p) for p in pid[:dims])


def _storage_positions(shape: tuple[int, ...], offset: int, strides: tuple[int, ...], size: int) -> np.ndarray:
    """For each of `size` storage elements, the flat logical index of the view (shape, offset, strides) there,
    or -1."""
    offsets = np.full(shape, offset, dtype=np.int64)
    for d, (n, s) in enumerate(zip(shape, strides)):
        view = [1] * len(shape)
        view[d] = n
        offsets = offsets + (np.arange(n, dtype=np.int64) * s).reshape(view)
    positions = np.full(max(size, int(offsets.max()) + 1), -1, dtype=np.int64)
    positions[offsets.reshape(-1)] = np.arange(offsets.size)
    return positions


def _host_view(out, info: StorageInfo) -> ArgView:
    """The argument that is `out` (same shape, offset and strides in the caller's storage); else out itself."""
    shape, offset, strides = tuple(out.shape), out.storage_offset(), tuple(out.stride())
    for view in info.views:
        if (view.shape, view.device_offset, view.device_strides) == (shape, offset, strides):
            return view
    same = next((v for v in info.views if v.device_offset == offset and v.shape == shape), None)
    return same or ArgView(info.views[0].name, shape, offset, strides, offset, strides)


def dropped_launch(out, recorder: StoreRecorder = RECORDER) -> LaunchStores | None:
    """The last recorded launch that got out's storage and stored too many lanes to keep its records, if any:
    then who stored what is not known, and nothing may be said from the records."""
    ptr = out.untyped_storage().data_ptr()
    return next((launch for launch in reversed(recorder.launches) if launch.dropped
                 and any(info.device_ptr == ptr for info in launch.storages.values())), None)


def writer_maps(out, recorder: StoreRecorder = RECORDER) -> WriterMaps | None:
    """Replay the recorded stores into out; None when no recorded launch stored into its storage, or a launch
    that got it stored too many lanes to keep (dropped_launch)."""
    if dropped_launch(out, recorder) is not None:
        return None
    ptr, elsize = out.untyped_storage().data_ptr(), out.element_size()
    touched = [(launch, info) for launch in recorder.launches for info in launch.storages.values()
               if info.device_ptr == ptr and any(r.storage == info.host_ptr for r in launch.records)]
    if not touched or out.numel() == 0:
        return None
    n = out.numel()
    writer = np.full(n, -1, dtype=np.int64)
    site = np.full(n, -1, dtype=np.int32)
    lane = np.zeros(n, dtype=np.int64)
    hit = np.zeros(n, dtype=np.int64)
    first = np.full(n, -1, dtype=np.int64)  # first storing (launch, program), to find overwritten elements
    overwritten = np.zeros(n, dtype=bool)
    atomics: list[tuple[int, np.ndarray]] = []
    launch_of = np.zeros(n, dtype=np.int64)
    sites: dict[tuple, int] = {}
    last, info = touched[-1]
    earlier: dict[tuple, int] = {}
    for launch in recorder.launches:
        if launch is last:
            break
        for r in launch.records:
            key = (r.file, r.line, r.pid)
            earlier[key] = max(earlier.get(key, 0), r.hit)
    for launch, storage in touched:
        view = _host_view(out, storage)
        positions = _storage_positions(view.shape, view.host_offset, view.host_strides, storage.nbytes // elsize)
        for r in launch.records:
            if r.storage != storage.host_ptr or r.elsize != elsize:
                continue
            ok = (r.offsets >= 0) & (r.offsets < positions.size)
            flat = positions[r.offsets[ok]]
            hit_lanes = flat >= 0
            if not hit_lanes.any():
                continue
            flat = flat[hit_lanes]
            if r.atomic:  # every program's update counts: none overwrites another
                if launch is last:
                    atomics.append((linear_pid(r.pid, launch.grid), flat))
            else:
                who = launch.index * (1 << 32) + linear_pid(r.pid, launch.grid)
                first[flat] = np.where(first[flat] < 0, who, first[flat])
                overwritten[flat] |= first[flat] != who
            writer[flat] = linear_pid(r.pid, launch.grid)
            launch_of[flat] = launch.index
            site[flat] = sites.setdefault((r.file, r.line, r.block), len(sites))
            lane[flat] = r.lanes[ok][hit_lanes]
            hit[flat] = r.hit
    shape = tuple(out.shape)
    pids = {linear_pid(p, last.grid): p for p in last.scalars} | {
        linear_pid(r.pid, last.grid): r.pid for r in last.records}
    scalars = {linear_pid(p, last.grid): v for p, v in last.scalars.items()}
    storing = {linear_pid(r.pid, last.grid) for r in last.records if r.storage == info.host_ptr}
    return WriterMaps(last, _host_view(out, info).name, writer.reshape(shape), site.reshape(shape), lane.reshape(shape),
                      hit.reshape(shape), list(sites), pids, scalars, earlier, storing, overwritten.reshape(shape),
                      atomics, launch_of.reshape(shape))
