"""Where a wrong output came from: the programs and source lines that stored its wrong elements.

The interpreter's store records (tdebug.interpreter.stores) are replayed into the output's logical shape:
per element, the program that stored it last, the store's file:line and the lane of its block. Program
ids come from those records, never from an assumed block size. The wrong elements are then described in
the kernel's own terms: which programs (split by one of the kernel's integer variables when one does:
"programs with pid_n = 3 only"), the error pattern over the output, the store line(s), and the place to
stop: the first wrong element's program, line and lane, with a `tdebug run ... --break LINE --pid P`.
"""

from __future__ import annotations

import ast
import linecache
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from ..interpreter.stores import RECORDER, ArgView, LaunchStores, StorageInfo, StoreRecorder

MAX_VALUES = 6  # values (or ranges) listed before "..."


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


def writer_maps(out, recorder: StoreRecorder = RECORDER) -> WriterMaps | None:
    """Replay the recorded stores into out; None when no recorded launch stored into its storage."""
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


# --- describing sets of programs and elements --------------------------------------------------------

def _ranges(values) -> str:
    values = sorted(set(int(v) for v in values))
    parts, i = [], 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[j + 1] == values[j] + 1:
            j += 1
        parts.append(str(values[i]) if i == j else f"{values[i]}-{values[j]}")
        i = j + 1
    return ", ".join(parts[:MAX_VALUES]) + (", ..." if len(parts) > MAX_VALUES else "")


def _values(name: str, values: set[int], every: set[int]) -> str:
    if len(values) == 1:
        return f"{name} = {next(iter(values))}"
    if values == {v for v in every if v >= min(values)}:
        return f"{name} >= {min(values)}"
    if values == {v for v in every if v <= max(values)}:
        return f"{name} <= {max(values)}"
    return f"{name} in {{{_ranges(values)}}}"


def _splitting_variable(bad: set[int], everyone: set[int], scalars: dict[int, dict[str, int]]):
    """The kernel variable whose values tell the programs in `bad` from the others, with the fewest values."""
    names: set[str] | None = None
    for p in everyone:
        keys = set(scalars.get(p, {}))
        names = keys if names is None else names & keys
    best = None
    for name in sorted(names or ()):
        inside = {scalars[p][name] for p in bad}
        outside = {scalars[p][name] for p in everyone - bad}
        if inside & outside:
            continue
        rank = (min(len(inside), len(outside)), "pid" not in name, len(name))
        if best is None or rank < best[0]:
            best = (rank, name, inside, outside)
    return best[1:] if best is not None else None


def program_group(bad: set[int], everyone: set[int], scalars: dict[int, dict[str, int]]) -> str:
    """Which programs, in the kernel's own terms: 'every program', 'programs with pid_n = 3 only'."""
    n, total = len(bad), len(everyone)
    if bad >= everyone:
        return f"every program ({total} of {total})" if total > 1 else "the only program"
    split = _splitting_variable(bad, everyone, scalars)
    if split is not None:
        name, inside, outside = split
        if len(inside) <= MAX_VALUES:
            return f"programs with {_values(name, inside, inside | outside)} only ({n} of {total})"
        if len(outside) <= MAX_VALUES:
            return f"every program but those with {_values(name, outside, inside | outside)} ({n} of {total})"
    if total - n <= MAX_VALUES:
        return f"every program but {_ranges(everyone - bad)} ({n} of {total})"
    return f"programs {_ranges(bad)} ({n} of {total})"


def as_2d(a: np.ndarray) -> np.ndarray:
    """Rows x columns: leading dimensions folded into the rows, a vector as one row."""
    if a.ndim == 0:
        return a.reshape(1, 1)
    if a.ndim == 1:
        return a.reshape(1, -1)
    return a.reshape(-1, a.shape[-1])


def _span(idx: np.ndarray, n: int, what: str) -> str:
    lo, hi = int(idx[0]), int(idx[-1])
    if lo == 0 and hi == n - 1:
        return ""
    many = f"{what}s {lo}-{hi}" if hi > lo else f"{what} {lo}"
    if hi == n - 1:
        return f"the last {what} block ({many})"
    if lo == 0:
        return f"the first {what} block ({many})"
    return many


def region(mask: np.ndarray) -> str:
    """Where a set of elements lies: 'the last column block (columns 96-126)', 'rows 32-63, columns 0-31'."""
    m = as_2d(mask)
    rows, cols = np.flatnonzero(m.any(axis=1)), np.flatnonzero(m.any(axis=0))
    if not rows.size:
        return "nowhere"
    if m.shape[0] == 1:
        return _span(cols, m.shape[1], "element") or "every element"
    r, c = _span(rows, m.shape[0], "row"), _span(cols, m.shape[1], "column")
    return ", ".join(p for p in (r, c) if p) or "all rows and columns"


def _share(n: int, total: int) -> str:
    share = n / max(1, total)
    text = f"{share:.0%}" if share >= 0.01 else f"{share:.1%}" if share >= 0.001 else f"{share:.1g}"
    return f"{n:,} of {total:,} elements ({text})"


def pattern(bad: np.ndarray, writer: np.ndarray) -> str:
    """The error pattern over the output: everywhere, one tile, edge rows/columns, a diagonal band, rows."""
    b, w = as_2d(bad), as_2d(writer)
    n = int(b.sum())
    R, C = b.shape
    written = w >= 0
    n_written = int(written.sum())
    if n == 0:
        return "none"
    if n >= n_written:
        return "everywhere: every element"
    progs = np.unique(w[b & written])
    tiles = np.unique(w[written]).size
    if progs.size == 1 and tiles > 1:
        return f"one tile: {region(w == progs[0])}"
    rows, cols = np.flatnonzero(b.any(axis=1)), np.flatnonzero(b.any(axis=0))
    if R > 1 and C > 1:
        if 0 < rows[0] and rows[-1] == R - 1 and rows.size <= R // 2:
            return f"edge rows only: {_span(rows, R, 'row').split('(')[-1].rstrip(')')}"
        if 0 < cols[0] and cols[-1] == C - 1 and cols.size <= C // 2:
            return f"edge columns only: {_span(cols, C, 'column').split('(')[-1].rstrip(')')}"
        r_idx, c_idx = np.nonzero(b)
        band = int(np.abs(r_idx - c_idx).max())
        if band < max(1, min(R, C) // 8) and rows.size > 2:
            return f"a diagonal band: |row - column| <= {band}"
        if np.all(b[rows] | ~written[rows]):
            if rows.size == R - 1 and rows[0] == 1:
                return "whole rows: every row but the first"
            return f"whole rows: {rows.size} of {R} rows ({_ranges(rows)})"
        if np.all(b[:, cols] | ~written[:, cols]):
            return f"whole columns: {cols.size} of {C} columns ({_ranges(cols)})"
    row_tiles = R > 1 and tiles == R and all(np.unique(np.nonzero(w == p)[0]).size == 1 for p in progs[:64])
    unit = "row" if row_tiles else "tile"
    if tiles == 1:
        where = "in the one tile"
    elif progs.size == tiles:
        where = f"in every {unit}"
    else:
        where = f"in {progs.size} of {tiles} {unit}s"
    kind = "everywhere" if 2 * n >= n_written and 10 * progs.size >= 9 * tiles else "scattered"
    return f"{kind}: {_share(n, n_written)}, {where}"


def source_line(file: str, line: int) -> str:
    return linecache.getline(file, line).strip()


def stored_value(file: str, line: int) -> str:
    """The source of the value a tl.store(...) at file:line stores (its call may span lines), or ''."""
    chunk = ""
    for k in range(line, line + 8):
        chunk += linecache.getline(file, k)
        try:
            tree = ast.parse(chunk.strip())
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            name = getattr(node, "func", None)
            if isinstance(node, ast.Call) and getattr(name, "attr", getattr(name, "id", "")) == "store":
                value = node.args[1] if len(node.args) > 1 else next(
                    (kw.value for kw in node.keywords if kw.arg == "value"), None)
                return ast.unparse(value) if value is not None else ""
        return ""
    return ""


def _print_command(value: str, lane: tuple[int, ...]) -> str:
    if not value:
        return ""
    target = value if value.isidentifier() else f"({value})"
    index = f"[{', '.join(map(str, lane))}]" if lane else ""
    return f"p {target}.handle.data{index}"


@dataclass
class Localisation:
    """Where one output went wrong; `lines` and `command` are what a person reads."""

    kernel: str
    arg: str
    launch: int
    grid: tuple[int, int, int]
    wrong: int
    unwritten: int
    numel: int
    programs: list[int] = field(default_factory=list)  # linear ids of the programs that stored wrong elements
    group: str = ""
    pattern: str = ""
    sites: list[dict] = field(default_factory=list)  # file, line, source, count (wrong elements stored there)
    first: dict = field(default_factory=dict)  # index, pid, file, line, lane, stop, got, expected, print
    lines: list[str] = field(default_factory=list)
    command: str = ""

    def to_dict(self) -> dict:
        return asdict(self)

    def render(self) -> list[str]:
        return self.lines + ([self.command] if self.command else [])


def localise(out, got: np.ndarray, want: np.ndarray, wrong: np.ndarray, unwritten: np.ndarray,
             recorder: StoreRecorder = RECORDER,
             command: Callable[[str, int, str], str] | None = None) -> Localisation | None:
    """Describe where out's wrong elements came from. got/want: float64 arrays of out's shape; wrong and
    unwritten: bool masks (wrong excludes unwritten). command(file, line, pid_text) -> the rerun command."""
    maps = writer_maps(out, recorder)
    if maps is None:
        return None
    launch = maps.launch
    wrong = wrong & ~unwritten
    stored = (maps.writer >= 0) & (maps.launch_of == launch.index)  # elements an earlier launch left are told apart
    everyone = maps.storing | set(np.unique(maps.writer[stored]).tolist())
    bad = set(np.unique(maps.writer[wrong & stored]).tolist())
    bad |= {p for p, flat in maps.atomics if wrong.reshape(-1)[flat].any()}  # every program that added to them
    loc = Localisation(launch.kernel, maps.arg, launch.index, launch.grid, int(wrong.sum()), int(unwritten.sum()),
                       int(out.numel()), sorted(bad))
    grid = "x".join(map(str, launch.grid))
    loc.lines.append(f"where: {launch.kernel}, output {maps.arg}, launch {launch.index}, grid {grid}")
    if loc.wrong:
        loc.group = program_group(bad, everyone, maps.scalars)
        area = region(np.isin(maps.writer, sorted(bad))) if bad and bad != everyone else ""
        area = "" if area in ("all rows and columns", "every element") else area
        loc.pattern = pattern(wrong, maps.writer)
        loc.lines.append(f"  wrong values: {loc.wrong:,} of {loc.numel:,} elements, stored by {loc.group}"
                         + (f": {area}" if area else ""))
        loc.lines.append(f"  pattern: {loc.pattern}")
        overwritten = int((maps.overwritten & wrong).sum())
        if overwritten:
            loc.lines.append(f"  {overwritten:,} of the wrong elements were stored by two or more programs: the last "
                             "store is the one named here (a race, or a missing accumulation)")
    earlier = int((wrong & (maps.launch_of > 0) & (maps.launch_of != launch.index)).sum())
    if earlier:
        loc.lines.append(f"  {earlier:,} wrong elements were last stored by an earlier launch")
    if loc.unwritten:
        where = region(unwritten)
        if where == "all rows and columns":  # say what was written instead
            where = f"the {len(everyone)} program(s) of the grid stored only {region(stored)}"
        loc.lines.append(f"  elements no program wrote: {loc.unwritten:,} of {loc.numel:,}: {where}")
    if not loc.wrong:
        return loc
    counts = np.bincount(maps.site[wrong & (maps.site >= 0)], minlength=len(maps.sites))
    for i in np.argsort(-counts, kind="stable"):
        if counts[i]:
            file, line, _ = maps.sites[i]
            loc.sites.append({"file": file, "line": line, "source": source_line(file, line), "count": int(counts[i])})
            share = f" ({int(counts[i]):,} of them)" if len(np.flatnonzero(counts)) > 1 else ""
            loc.lines.append(f"  stored at {Path(file).name}:{line}{share}: {source_line(file, line)}")
    idx = tuple(int(i) for i in np.argwhere(wrong & stored)[0]) if (wrong & stored).any() else None
    if idx is None:
        return loc
    linear = int(maps.writer[idx])
    file, line, block = maps.sites[int(maps.site[idx])]
    lane = tuple(int(i) for i in np.unravel_index(int(maps.lane[idx]), block)) if block else ()
    pid = maps.pids[linear]
    stop = maps.earlier_hits.get((file, line, pid), 0) + int(maps.hit[idx])
    where_pid = pid_text(pid, launch.grid)
    varying = _varying_scalars(maps.scalars, linear)
    printed = _print_command(stored_value(file, line), lane)
    loc.first = {"index": list(idx), "pid": list(pid), "file": file, "line": line, "lane": list(lane),
                 "stop": stop, "got": float(got[idx]), "expected": float(want[idx]), "print": printed}
    block_text = "x".join(map(str, block)) + ("-lane" if len(block) == 1 else "") if block else "scalar"
    loc.lines.append(f"  first wrong element {list(idx)}: program {where_pid}{varying}, lane {list(lane)} of its "
                     f"{block_text} block at line {line}")
    if command is not None:
        then = f"`{printed}` shows {got[idx]:.6g} (expected {want[idx]:.6g})" if printed else \
            f"the element ends as {got[idx]:.6g} (expected {want[idx]:.6g})"
        again = f"; `continue` {stop - 1} time(s) to reach the store that wrote it" if stop > 1 else ""
        loc.lines.append(f"  stop there (same inputs): at the breakpoint, {then}{again}:")
        loc.command = command(file, line, where_pid)
    return loc


def _varying_scalars(scalars: dict[int, dict[str, int]], linear: int, limit: int = 3) -> str:
    """' (pid_m = 0, pid_n = 3)': the program's scalars whose values differ between programs."""
    mine = scalars.get(linear, {})
    varying = [name for name in mine if len({s.get(name) for s in scalars.values()}) > 1]
    shown = [f"{name} = {mine[name]}" for name in varying[:limit]]
    return f" ({', '.join(shown)})" if shown else ""


def _shown(path: str) -> str:
    """A path as the user would type it here: relative to the working directory when under it."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def run_command(target: str, case: dict | None, file: str, line: int, pid: str, argv: list[str] | None = None) -> str:
    """`tdebug run FILE --shape ... --break LINE --pid P` reproducing a catalogue case (or a script's run);
    a kernel in another file than the target is named by --break FILE:LINE."""
    parts = ["tdebug", "run", _shown(target)]
    if case is not None:
        parts += ["--shape", "x".join(map(str, case["shape"])), "--dtype", case["dtype"], "--layout", case["layout"]]
        if case.get("variant"):
            parts += ["--variant", case["variant"]]
        if case.get("config") is not None:
            parts += ["--config", str(case["config"])]
        parts += ["--seed", str(case["seed"])]
    same = Path(file).resolve() == Path(target).resolve()
    parts += ["--break", str(line) if same else f"{_shown(file)}:{line}", "--pid", pid]
    if argv:
        parts += ["--", *argv]
    return " ".join(parts)


# --- the script API: tdebug.explain ------------------------------------------------------------------

def explain(out, expected, *, rtol: float | None = None, atol: float | None = None, file=None,
            recorder: StoreRecorder = RECORDER) -> Localisation | None:
    """Print where `out` differs from `expected`: the programs and store lines of the last launches that
    wrote it, and a `tdebug run` command that stops there. Works inside a script run under tdebug's
    interpreter (tdebug run / tdebug sanitize); elsewhere it says so. Returns the Localisation (None when
    nothing is wrong or no launch stored into `out`). rtol/atol: as torch.testing.assert_close's; default
    tdebug's table for the dtype (atol scaled to max |expected|).
    """
    import torch

    from ..catalogue.compare import TOLERANCES, dtype_name, outside_tolerance, scaled_atol
    from ..catalogue.poison import poison_mask

    stream = file if file is not None else sys.stderr
    got = out.detach().cpu().to(torch.float64)
    want = torch.as_tensor(expected).detach().cpu().to(torch.float64).broadcast_to(got.shape)
    default_rtol, atol_factor = TOLERANCES[dtype_name(out.dtype)]
    rtol = default_rtol if rtol is None else rtol
    atol = scaled_atol(want, atol_factor) if atol is None else atol
    unwritten = poison_mask(out).cpu()
    wrong = outside_tolerance(got, want, rtol, atol) & ~unwritten
    if not recorder.installed:
        print("tdebug.explain: no store records: run this under tdebug's interpreter "
              f"(tdebug run {Path(sys.argv[0]).name} ...)", file=stream)
        return None
    if not bool(wrong.any() or unwritten.any()):
        print("tdebug.explain: every element is within tolerance", file=stream)
        return None
    script = sys.argv[0] if sys.argv and sys.argv[0].endswith(".py") else ""
    command = (lambda file, line, pid: run_command(script, None, file, line, pid, sys.argv[1:])) if script else None
    loc = localise(out, got.numpy(), want.numpy(), wrong.numpy(), unwritten.numpy(), recorder, command)
    if loc is None:
        print("tdebug.explain: no recorded launch stored into this tensor", file=stream)
        return None
    print(f"tdebug.explain: {loc.wrong:,} wrong and {loc.unwritten:,} unwritten of {loc.numel:,} elements "
          f"(rtol {rtol:g}, atol {atol:.3g})", file=stream)
    for text in loc.render():
        print(text, file=stream)
    return loc


def localise_case(outs, refs, comparisons, target: str, case: dict) -> list[dict]:
    """The localisation of each failing output of a catalogue case, as dicts for the case's result."""
    import torch

    from ..catalogue.compare import outside_tolerance
    from ..catalogue.poison import poison_mask

    outs = outs if isinstance(outs, (tuple, list)) else (outs,)
    refs = refs if isinstance(refs, (tuple, list)) else (refs,)
    found = []
    for out, ref, comp in zip(outs, refs, comparisons):
        if comp.ok or comp.shape_error or not isinstance(out, torch.Tensor) or out.device.type != "cpu":
            continue
        got, want = out.detach().to(torch.float64), ref.detach().cpu().to(torch.float64)
        unwritten = poison_mask(out)
        wrong = outside_tolerance(got, want, comp.rtol, comp.atol) & ~unwritten
        loc = localise(out, got.numpy(), want.numpy(), wrong.numpy(), unwritten.numpy(),
                       command=lambda file, line, pid: run_command(target, case, file, line, pid))
        if loc is not None:
            found.append(loc.to_dict())
    return found
