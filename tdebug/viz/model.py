"""What a traced launch reduces to: per tensor argument, per-element maps on a canvas with margins.

A tensor is drawn over its logical shape: 2-D as is, 1-D wrapped into rows of `wrap` elements, higher
ranks as one 2-D slice (the last two dimensions) per index of the leading ones. Around each slice is
a margin (rows above/below, columns left/right) where accesses that fall outside the tensor are drawn.
Canvas cell (s, y, x) is logical (lead index s, row y - mt, column x - ml).

The child process (tdebug.viz.trace_child) writes one LaunchMap per kernel launch as an .npz plus a .json;
the parent (tdebug viz) reads them back and draws PNGs and the HTML page.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from . import palette

ARRAYS = ("loads", "stores", "masked", "load_npids", "load_pid", "store_npids", "store_pid", "store_pid_max",
          "inside")
MAX_SLICES = 64  # slices of a >2-D tensor drawn (the first ones); the rest are counted, not drawn


@dataclass
class Geometry:
    """How a tensor's logical index space maps onto 2-D canvas slices."""

    kind: str  # "1d", "2d", "nd"
    rows: int  # logical rows of one slice (1-D: rows of the wrapped vector)
    cols: int  # logical columns of one slice (1-D: the wrap width)
    lead: tuple[int, ...] = ()  # leading dimensions (nd only)
    numel: int = 0
    cap_rows: int = 0  # the most margin rows each side
    cap_cols: int = 0
    mt: int = 0  # margins actually used (<= caps)
    mb: int = 0
    ml: int = 0
    mr: int = 0

    @classmethod
    def for_shape(cls, shape: tuple[int, ...]) -> Geometry:
        numel = math.prod(shape) if shape else 1
        if len(shape) <= 1:
            n = shape[0] if shape else 1
            wrap = wrap_width(n)
            rows = max(1, -(-n // wrap))
            return cls("1d", rows, wrap, (), numel, margin_cap(rows), 0)
        rows, cols = shape[-2], shape[-1]
        kind = "2d" if len(shape) == 2 else "nd"
        return cls(kind, rows, cols, tuple(shape[:-2]), numel, margin_cap(rows), margin_cap(cols))

    @property
    def n_slices(self) -> int:
        return math.prod(self.lead) if self.lead else 1

    @property
    def shown_slices(self) -> int:
        return min(self.n_slices, MAX_SLICES)

    @property
    def height(self) -> int:
        return self.rows + self.mt + self.mb

    @property
    def width(self) -> int:
        return self.cols + self.ml + self.mr

    def slice_index(self, s: int) -> tuple[int, ...]:
        return tuple(int(i) for i in np.unravel_index(s, self.lead)) if self.lead else ()


def wrap_width(n: int) -> int:
    """Row width for a 1-D tensor: a power of two near sqrt(n), between 8 and 1024."""
    if n <= 8:
        return max(1, n)
    return int(min(1024, max(8, 2 ** math.ceil(math.log2(math.sqrt(n))))))


def margin_cap(extent: int) -> int:
    """The widest margin drawn on one side of a dimension of `extent` cells."""
    return max(8, -(-extent // 4))


@dataclass
class TensorMap:
    name: str
    dtype: str
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    geometry: Geometry
    is_output: bool = False
    stats: dict = field(default_factory=dict)
    arrays: dict[str, np.ndarray] = field(default_factory=dict)  # name -> (shown slices, height, width)

    def label(self) -> str:
        shape = "x".join(map(str, self.shape)) or "scalar"
        return f"{self.name}: {shape} {self.dtype}"

    def categories(self) -> np.ndarray:
        return categories(self.arrays, self.is_output)

    @property
    def oob_lanes(self) -> int:
        return int(self.stats.get("oob_loads", 0) + self.stats.get("oob_stores", 0))

    def problems(self) -> list[str]:
        """One phrase per problem the picture shows; [] when it shows none."""
        st, out = self.stats, []
        for kind in ("load", "store"):
            n = st.get(f"oob_{kind}s", 0)
            if n:
                out.append(f"{n:,} out-of-bounds {kind} lane{'s' if n != 1 else ''}{self._where()}")
        if st.get("unwritten"):
            out.append(f"{st['unwritten']:,} of {self.geometry.numel:,} elements never written")
        if st.get("multi_written"):
            out.append(f"{st['multi_written']:,} elements written by more than one program")
        return out

    def _where(self) -> str:
        st, g = self.stats, self.geometry
        parts = []
        if "oob_elements" in st:
            lo, hi = st["oob_elements"]
            parts.append(f"elements {_span(lo, hi)}, valid 0..{g.numel - 1}")
        for key, size in (("rows", g.rows), ("columns", g.cols)):
            if f"oob_{key}" in st:
                lo, hi = st[f"oob_{key}"]
                name = key if lo != hi else key[:-1]
                parts.append(f"{name} {_span(lo, hi)}, valid 0..{size - 1}")
        if st.get("unplaced"):
            parts.append(f"{st['unplaced']:,} outside the leading dimensions")
        return f" ({'; '.join(parts)})" if parts else ""

    def access_summary(self) -> str:
        st = self.stats
        parts = []
        if st.get("loads"):
            parts.append(f"{st['loads']:,} loads")
        if st.get("stores"):
            atomics = st.get("atomics", 0)
            parts.append(f"{st['stores']:,} stores" + (f" ({atomics:,} atomic)" if atomics else ""))
        masked = st.get("masked_loads", 0) + st.get("masked_stores", 0)
        if masked:
            parts.append(f"{masked:,} masked-off lanes")
        return ", ".join(parts) or "not accessed"


@dataclass
class LaunchMap:
    index: int  # 1-based, in launch order
    kernel: str
    grid: tuple[int, int, int]
    config: str = ""
    pid: tuple[int, int, int] | None = None  # only this program was traced
    error: str = ""  # the launch raised (the picture shows what ran before)
    source: str = ""  # file:line of the kernel's def
    stray_lanes: int = 0  # active lanes of accesses to memory of no tensor argument (not drawn)
    tensors: list[TensorMap] = field(default_factory=list)

    @property
    def n_programs(self) -> int:
        return int(np.prod(self.grid))

    @property
    def grid_text(self) -> str:
        """'grid 5x4x1 (20 programs)'"""
        n = self.n_programs
        return f"grid {'x'.join(map(str, self.grid))} ({n} program{'s' if n != 1 else ''})"

    @property
    def pid_linear(self) -> int | None:
        if self.pid is None:
            return None
        x, y, z = self.pid
        return x + y * self.grid[0] + z * self.grid[0] * self.grid[1]

    def pid_text(self, linear: int) -> str:
        gx, gy, _ = self.grid
        x, y, z = linear % gx, (linear // gx) % gy, linear // (gx * gy)
        if self.grid[1] == 1 and self.grid[2] == 1:
            return str(x)
        if self.grid[2] == 1:
            return f"({x},{y})"
        return f"({x},{y},{z})"


def _span(lo: int, hi: int) -> str:
    return str(lo) if lo == hi else f"{lo}..{hi}"


def unwritten(arrays: dict[str, np.ndarray], is_output: bool) -> np.ndarray:
    """Elements of an output that no program wrote. In a tensor that is read as well as written (in
    place), an element that was read but not written is an input element, not a hole."""
    inside = arrays["inside"].astype(bool)
    if not is_output:
        return np.zeros(inside.shape, dtype=bool)
    hole = inside & (arrays["stores"] == 0)
    if arrays["loads"].any():
        hole &= arrays["loads"] == 0
    return hole


def categories(arrays: dict[str, np.ndarray], is_output: bool) -> np.ndarray:
    """The problem category of each canvas cell (palette.OUTSIDE .. palette.OOB)."""
    inside = arrays["inside"].astype(bool)
    active = (arrays["loads"] + arrays["stores"]) > 0
    cat = np.full(inside.shape, palette.OUTSIDE, dtype=np.uint8)
    cat[inside] = palette.UNTOUCHED
    cat[inside & active] = palette.OK
    cat[(arrays["masked"] > 0) & ~active] = palette.MASKED
    cat[unwritten(arrays, is_output)] = palette.UNWRITTEN
    cat[inside & (arrays["store_npids"] > 1)] = palette.MULTI
    cat[~inside & active] = palette.OOB
    return cat


def save_launch(launch: LaunchMap, directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    stem = directory / f"launch{launch.index:03d}"
    arrays = {}
    meta = asdict(launch)
    for i, t in enumerate(launch.tensors):
        for key, value in t.arrays.items():
            arrays[f"t{i}_{key}"] = value
        meta["tensors"][i].pop("arrays")
    np.savez(stem.with_suffix(".npz"), **arrays)  # a temporary file: speed over size
    stem.with_suffix(".json").write_text(json.dumps(meta, default=_jsonable))
    return stem.with_suffix(".json")


def load_launch(meta_path: Path) -> LaunchMap:
    meta = json.loads(meta_path.read_text())
    data = np.load(meta_path.with_suffix(".npz"))
    tensors = []
    for i, t in enumerate(meta.pop("tensors")):
        g = t.pop("geometry")
        geometry = Geometry(**{**g, "lead": tuple(g["lead"])})
        arrays = {k: data[f"t{i}_{k}"] for k in ARRAYS if f"t{i}_{k}" in data}
        tensors.append(TensorMap(**{**t, "shape": tuple(t["shape"]), "strides": tuple(t["strides"]),
                                    "geometry": geometry, "arrays": arrays}))
    pid = tuple(meta.pop("pid")) if meta.get("pid") else None
    return LaunchMap(**{**meta, "grid": tuple(meta["grid"]), "pid": pid, "tensors": tensors})


def load_launches(directory: Path) -> list[LaunchMap]:
    return [load_launch(p) for p in sorted(directory.glob("launch*.json"))]


def _jsonable(value):
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def mosaic_shape(geometry: Geometry, n_slices: int) -> tuple[int, int, int, int]:
    """(grid rows, grid cols, height, width) of the mosaic that lays slices out with 1-cell gaps."""
    cols = max(1, math.ceil(math.sqrt(n_slices)))
    rows = max(1, -(-n_slices // cols))
    return rows, cols, rows * (geometry.height + 1) - 1, cols * (geometry.width + 1) - 1


def mosaic(arr: np.ndarray, geometry: Geometry, fill) -> np.ndarray:
    """Lay out (slices, height, width[, ...]) as one 2-D image, slices in row-major order."""
    n = arr.shape[0]
    grid_rows, grid_cols, height, width = mosaic_shape(geometry, n)
    out = np.full((height, width) + arr.shape[3:], fill, dtype=arr.dtype)
    h, w = geometry.height, geometry.width
    for s in range(n):
        r, c = divmod(s, grid_cols)
        out[r * (h + 1):r * (h + 1) + h, c * (w + 1):c * (w + 1) + w] = arr[s]
    return out
