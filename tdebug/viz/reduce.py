"""Reduce traced loads and stores (addresses and masks per lane) to per-element maps of each tensor.

Pure numpy: no Triton here, so it is tested directly. Each access is attributed to one tensor argument
(the one whose storage, with its guard bands, holds most of the lanes), then every lane gets a logical
index into that tensor:
- when the lanes form a regular block whose steps are the tensor's strides (the usual `base +
  offs_m[:, None] * stride_m + offs_n[None, :] * stride_n`), each lane keeps the row and column the
  kernel meant, even past the edge: a missing column mask shows up as columns right of the tensor,
  not as elements of the next row;
- otherwise (gathers, a kernel that ignores a stride) the address is split greedily by the strides, so
  an element in the gap of a sliced view lands right of the last column.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .model import MAX_SLICES, Geometry, TensorMap, unwritten

BIG = np.iinfo(np.int32).max


@dataclass
class ArgTensor:
    """One tensor argument of a launch, as the traced kernel saw it."""

    name: str
    shape: tuple[int, ...]
    strides: tuple[int, ...]  # in elements
    elsize: int
    dtype: str
    base: int  # address of element 0
    region_start: int  # storage plus guard bands: lanes here belong to this tensor's storage
    region_end: int

    @property
    def numel(self) -> int:
        return math.prod(self.shape) if self.shape else 1

    def span(self) -> tuple[int, int]:
        """[first, last] byte addresses of the view's elements."""
        lo = hi = 0
        for d, s in zip(self.shape, self.strides):
            if d > 1:
                if s >= 0:
                    hi += (d - 1) * s
                else:
                    lo += (d - 1) * s
        return self.base + lo * self.elsize, self.base + hi * self.elsize + self.elsize - 1


def greedy_coords(e: np.ndarray, strides: tuple[int, ...], shape: tuple[int, ...]) -> list[np.ndarray]:
    """Split element offsets by the strides, largest first; the first dimension absorbs any overflow."""
    coords = [np.zeros_like(e) for _ in shape]
    dims = sorted((d for d in range(len(shape)) if shape[d] > 1 and strides[d] > 0), key=lambda d: -strides[d])
    if not dims:
        if shape:
            coords[0] = e.copy()
        return coords if shape else [e.copy()]
    rem = e.copy()
    for d in dims:
        coords[d] = np.floor_divide(rem, strides[d])
        rem = rem - coords[d] * strides[d]
    return coords


def block_coords(e: np.ndarray, strides: tuple[int, ...], shape: tuple[int, ...]) -> list[np.ndarray] | None:
    """Logical coordinates of a regular block of lanes, or None when the block is not one."""
    if e.ndim == 0 or e.size < 2 or not shape:
        return None
    e0 = e.reshape(-1)[0]
    steps = []
    for axis in range(e.ndim):
        if e.shape[axis] < 2:
            steps.append(0)
            continue
        index = [0] * e.ndim
        index[axis] = 1
        steps.append(int(e[tuple(index)] - e0))
    predicted = np.full(e.shape, e0, dtype=np.int64)
    for axis, step in enumerate(steps):
        if step:
            shape_a = [1] * e.ndim
            shape_a[axis] = e.shape[axis]
            predicted = predicted + np.arange(e.shape[axis], dtype=np.int64).reshape(shape_a) * step
    if not np.array_equal(predicted, e):
        return None
    origin = greedy_coords(np.array(e0, dtype=np.int64), strides, shape)
    coords = [np.broadcast_to(o, e.shape).astype(np.int64) for o in origin]
    used: set[int] = set()
    for axis, step in enumerate(steps):
        if not step:
            continue
        dims = [d for d in range(len(shape)) if shape[d] > 1 and strides[d] == step and d not in used]
        if not dims:
            return None
        d = dims[0]
        used.add(d)
        shape_a = [1] * e.ndim
        shape_a[axis] = e.shape[axis]
        coords[d] = coords[d] + np.arange(e.shape[axis], dtype=np.int64).reshape(shape_a)
    return coords


def logical_coords(e: np.ndarray, strides: tuple[int, ...], shape: tuple[int, ...]) -> list[np.ndarray]:
    coords = block_coords(e, strides, shape)
    if coords is None:
        coords = greedy_coords(e, strides, shape)
    return [np.asarray(c, dtype=np.int64).reshape(-1) for c in coords]


class Attributor:
    """Which tensor argument an access belongs to."""

    def __init__(self, args: list[ArgTensor]) -> None:
        self.args = args
        self.regions = sorted({(a.region_start, a.region_end) for a in args})
        self.starts = np.array([r[0] for r in self.regions], dtype=np.int64)
        self.ends = np.array([r[1] for r in self.regions], dtype=np.int64)
        self.by_region = {r: [i for i, a in enumerate(args) if (a.region_start, a.region_end) == r]
                          for r in self.regions}

    def region_of(self, addr: np.ndarray) -> np.ndarray:
        """Region index per lane, -1 outside all regions."""
        idx = np.searchsorted(self.starts, addr, side="right") - 1
        ok = (idx >= 0) & (addr < self.ends[np.clip(idx, 0, None)])
        return np.where(ok, idx, -1)

    def attribute(self, addr: np.ndarray) -> int | None:
        """Index into args of the tensor an access (all its lanes, masked or not) belongs to, or None."""
        if not self.regions:
            return None
        region = self.region_of(addr)
        counts = np.bincount(region[region >= 0], minlength=len(self.regions))
        if not counts.sum():
            return None  # memory that belongs to no argument (beyond every guard band): not drawn
        r = int(np.argmax(counts))
        candidates = self.by_region[self.regions[r]]
        if len(candidates) == 1:
            return candidates[0]
        best, best_hits = candidates[0], -1
        for i in candidates:
            lo, hi = self.args[i].span()
            hits = int(((addr >= lo) & (addr <= hi)).sum())
            if hits > best_hits:
                best, best_hits = i, hits
        return best


class TensorAccumulator:
    """Per-element maps of one tensor argument, filled access by access."""

    def __init__(self, arg: ArgTensor) -> None:
        self.arg = arg
        self.geometry = g = Geometry.for_shape(arg.shape)
        self.shape = (min(g.n_slices, MAX_SLICES), g.rows + 2 * g.cap_rows, g.cols + 2 * g.cap_cols)
        zeros = lambda: np.zeros(self.shape, dtype=np.int32)
        self.loads, self.stores, self.masked = zeros(), zeros(), zeros()
        self.npids = {"load": zeros(), "store": zeros()}
        self.last = {"load": np.full(self.shape, -1, np.int32), "store": np.full(self.shape, -1, np.int32)}
        self.pid_min = {"load": np.full(self.shape, BIG, np.int32), "store": np.full(self.shape, BIG, np.int32)}
        self.store_pid_max = np.full(self.shape, -1, np.int32)
        self.extent = [BIG, -BIG, BIG, -BIG]  # min/max row, min/max column of all lanes (drawn margins)
        self.oob_ranges: dict[str, list[int]] = {}  # rows / columns / elements (1-D) outside, of active lanes
        self.stats = {"loads": 0, "stores": 0, "masked_loads": 0, "masked_stores": 0, "oob_loads": 0,
                      "oob_stores": 0, "clipped": 0, "unplaced": 0, "hidden_slices": 0, "accesses": 0}

    def _canvas(self, addr: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(slice, row, col, inside, placed) per lane: logical row/col, before clipping to the margins."""
        a, g = self.arg, self.geometry
        e = np.floor_divide(addr - a.base, a.elsize)
        coords = logical_coords(e, a.strides, a.shape)
        if g.kind == "1d":
            i = coords[0]
            n = a.shape[0] if a.shape else 1
            inside = (i >= 0) & (i < n)
            return np.zeros_like(i), np.floor_divide(i, g.cols), np.mod(i, g.cols), inside, np.ones_like(inside)
        row, col = coords[-2], coords[-1]
        inside = (row >= 0) & (row < g.rows) & (col >= 0) & (col < g.cols)
        if g.kind == "2d":
            return np.zeros_like(row), row, col, inside, np.ones_like(inside)
        lead = coords[:-2]
        placed = np.ones_like(inside)
        for c, d in zip(lead, g.lead):
            placed &= (c >= 0) & (c < d)
        s = np.zeros_like(row)
        if placed.any():
            s[placed] = np.ravel_multi_index([c[placed] for c in lead], g.lead)
        return s, row, col, inside & placed, placed

    def add(self, kind: str, pid: int, addr: np.ndarray, mask: np.ndarray) -> None:
        """One load, store or atomic: lane addresses (bytes) and the kernel's mask, as the program issued them.

        An atomic counts as a store (it writes), but several programs updating one element atomically
        is what atomics are for: it is not counted as a second writer.
        """
        g = self.geometry
        atomic = kind == "atomic"
        if atomic:
            self.stats["atomics"] = self.stats.get("atomics", 0) + int(np.asarray(
                mask if mask is not None else np.ones(np.shape(addr), bool)).sum())
            kind = "store"
        addr = np.asarray(addr, dtype=np.int64)
        mask = np.broadcast_to(np.asarray(mask, dtype=bool), addr.shape).reshape(-1) if mask is not None \
            else np.ones(addr.size, dtype=bool)
        s, row, col, inside, placed = self._canvas(addr)
        addr = addr.reshape(-1)
        self.stats["accesses"] += 1
        n_active = int(mask.sum())
        self.stats[f"{kind}s"] += n_active
        self.stats[f"masked_{kind}s"] += int(addr.size - n_active)
        oob = mask & ~inside
        self.stats[f"oob_{kind}s"] += int(oob.sum())
        self.stats["unplaced"] += int((mask & ~placed).sum())
        if oob.any():
            r, c = row[oob], col[oob]
            if g.kind == "1d":
                _grow_range(self.oob_ranges, "elements", r * g.cols + c)
            else:
                _grow_range(self.oob_ranges, "rows", r[(r < 0) | (r >= g.rows)])
                _grow_range(self.oob_ranges, "columns", c[(c < 0) | (c >= g.cols)])
        keep = placed & (s < self.shape[0])
        self.stats["hidden_slices"] += int((mask & placed & ~keep).sum())
        if not keep.any():
            return
        s, row, col, mask = s[keep], row[keep], col[keep], mask[keep]
        _grow(self.extent, row, col)
        y = np.clip(row, -g.cap_rows, g.rows - 1 + g.cap_rows) + g.cap_rows
        x = np.clip(col, -g.cap_cols, g.cols - 1 + g.cap_cols) + g.cap_cols
        self.stats["clipped"] += int((mask & ((y != row + g.cap_rows) | (x != col + g.cap_cols))).sum())
        flat = (s * self.shape[1] + y) * self.shape[2] + x
        if (~mask).any():
            np.add.at(self.masked.reshape(-1), flat[~mask], 1)
        if not mask.any():
            return
        active = flat[mask]
        np.add.at((self.loads if kind == "load" else self.stores).reshape(-1), active, 1)
        cells = np.unique(active)
        if not atomic:
            last = self.last[kind].reshape(-1)
            new = cells[last[cells] != pid]
            self.npids[kind].reshape(-1)[new] += 1
            last[new] = pid
        pmin = self.pid_min[kind].reshape(-1)
        pmin[cells] = np.minimum(pmin[cells], pid)
        if kind == "store":
            pmax = self.store_pid_max.reshape(-1)
            pmax[cells] = np.maximum(pmax[cells], pid)

    def finish(self, is_output: bool, partial: bool = False) -> TensorMap:
        """Crop the margins to what was accessed and compute the summary.

        partial: only some programs were traced (--pid), so unwritten elements mean nothing.
        """
        g = self.geometry
        min_r, max_r, min_c, max_c = self.extent
        if min_r <= max_r:
            g.mt = int(min(g.cap_rows, max(0, -min_r)))
            g.mb = int(min(g.cap_rows, max(0, max_r - (g.rows - 1))))
            g.ml = int(min(g.cap_cols, max(0, -min_c)))
            g.mr = int(min(g.cap_cols, max(0, max_c - (g.cols - 1))))
        ys = slice(g.cap_rows - g.mt, g.cap_rows + g.rows + g.mb)
        xs = slice(g.cap_cols - g.ml, g.cap_cols + g.cols + g.mr)
        crop = lambda arr: np.ascontiguousarray(arr[:, ys, xs])
        pid_or_none = lambda arr: np.where(arr == BIG, -1, arr).astype(np.int32)
        arrays = {
            "loads": crop(self.loads), "stores": crop(self.stores), "masked": crop(self.masked),
            "load_npids": crop(self.npids["load"]), "load_pid": crop(pid_or_none(self.pid_min["load"])),
            "store_npids": crop(self.npids["store"]), "store_pid": crop(pid_or_none(self.pid_min["store"])),
            "store_pid_max": crop(self.store_pid_max),
        }
        arrays["inside"] = self._inside(arrays["loads"].shape)
        is_output = (is_output or self.stats["stores"] > 0) and not partial
        inside = arrays["inside"].astype(bool)
        stats = dict(self.stats)
        stats["unwritten"] = int(unwritten(arrays, is_output).sum())
        stats["multi_written"] = int((inside & (arrays["store_npids"] > 1)).sum())
        stats["untouched"] = int((inside & (arrays["loads"] + arrays["stores"] == 0)).sum())
        stats["shown_slices"] = int(arrays["loads"].shape[0])
        for key, (lo, hi) in self.oob_ranges.items():
            stats[f"oob_{key}"] = [int(lo), int(hi)]
        a = self.arg
        return TensorMap(a.name, a.dtype, tuple(a.shape), tuple(a.strides), g, is_output, stats, arrays)

    def _inside(self, shape: tuple[int, int, int]) -> np.ndarray:
        g = self.geometry
        inside = np.zeros(shape, dtype=np.uint8)
        if g.kind == "1d":
            n = self.arg.shape[0] if self.arg.shape else 1
            i = (np.arange(shape[1])[:, None] - g.mt) * g.cols + np.arange(shape[2])[None, :]
            rows_ok = (np.arange(shape[1]) >= g.mt) & (np.arange(shape[1]) < g.mt + g.rows)
            inside[:] = ((i >= 0) & (i < n) & rows_ok[:, None]).astype(np.uint8)
        else:
            inside[:, g.mt:g.mt + g.rows, g.ml:g.ml + g.cols] = 1
        return inside


def _grow_range(ranges: dict[str, list[int]], key: str, values: np.ndarray) -> None:
    if values.size:
        lo, hi = ranges.get(key, [BIG, -BIG])
        ranges[key] = [min(lo, int(values.min())), max(hi, int(values.max()))]


def _grow(extent: list[int], row: np.ndarray, col: np.ndarray) -> None:
    extent[0] = min(extent[0], int(row.min()))
    extent[1] = max(extent[1], int(row.max()))
    extent[2] = min(extent[2], int(col.min()))
    extent[3] = max(extent[3], int(col.max()))
