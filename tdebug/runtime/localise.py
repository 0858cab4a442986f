"""Where a wrong output came from: the programs and source lines that stored its wrong elements.

The interpreter's store records (tdebug.interpreter.hooks.stores) are replayed into the output's logical shape
(store_maps.py): per element, the program that stored it last, the store's file:line and the lane of its
block. Program ids come from those records, never from an assumed block size. The wrong elements are then
described in the kernel's own terms (describe.py): which programs ("programs with pid_n = 3 only"), the
error pattern over the output, the store line(s), and the place to stop: the first wrong element's
program, line and lane, with a `tdebug run ... --break LINE --pid P` that stops there on the same inputs.
"""

from __future__ import annotations

import ast
import linecache
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from ..interpreter.hooks.stores import RECORDER, StoreRecorder
from .describe import pattern, program_group, region
from .store_maps import dropped_launch, pid_text, writer_maps


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
    kept = int((wrong & ~stored & (maps.launch_of <= 0)).sum())  # no launch stored them: still the input's values
    if kept:
        loc.lines.append(f"  {kept:,} wrong elements were stored by no program: they keep the value they had before "
                         "the launch (an in-place output whose stores went elsewhere, or missed these elements)")
    if loc.wrong and not bad:
        loc.group = "no program"
    elif loc.wrong:
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

    A pytest plugin: install the recorder where it sets up the interpreter (tdebug.interpreter.hooks.stores.install(),
    after TRITON_INTERPRET=1, as tdebug.child does), RECORDER.clear() before each test, and when a test's
    assert_close(actual, expected, rtol=..., atol=...) fails, call
    explain(actual, expected, rtol=rtol, atol=atol, file=io.StringIO()) and add loc.render() to the report.
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
        dropped = dropped_launch(out, recorder)
        if dropped is not None:
            print(f"tdebug.explain: launch {dropped.index} ({dropped.kernel}) stored more than {recorder.max_lanes:,} "
                  "lanes, too many to keep a record of each: no localisation", file=stream)
        else:
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
