"""From a failing case to the program and line that made it: the localisation in check/run's report, the
`tdebug run ... --break LINE --pid P` it ends with (driven through pdb on stdin), and tdebug.explain."""

from __future__ import annotations

import io
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tdebug.runtime.describe import pattern, program_group, region
from tdebug.runtime.localise import explain

ROOT = Path(__file__).resolve().parents[2]
EDGE_TILE = ROOT / "tests" / "cpu" / "data" / "edge_tile_bias.py"
ENV = dict(os.environ, PYTHONPATH=str(ROOT))
NUMBER = r"(-?\d+(?:\.\d+)?(?:e[-+]?\d+)?)"


def tdebug(args: list[str], stdin: str | None = None, timeout: float = 240) -> str:
    proc = subprocess.run([sys.executable, "-m", "tdebug", *args], cwd=ROOT, input=stdin, capture_output=True,
                          text=True, env=ENV, timeout=timeout)
    return re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout + proc.stderr)  # pdb++ colours its listing


def report(out: str) -> dict:
    """The localisation's facts as printed: group, pattern, store line, first element, print command, rerun."""
    found = {
        "group": re.search(r"wrong values: .* stored by (.*)", out).group(1),
        "pattern": re.search(r"pattern: (.*)", out).group(1),
        "stored": re.findall(r"stored at (\S+):(\d+)", out),
        "first": re.search(r"first wrong element \[([\d, ]+)\]: program (\d+(?:,\d+)*)", out).groups(),
        "print": re.search(r"`(p [^`]+)` shows " + NUMBER + r" \(expected " + NUMBER + r"\)", out).groups(),
    }
    lines = out.splitlines()
    found["command"] = lines[lines.index(next(ln for ln in lines if "stop there (same inputs)" in ln)) + 1].strip()
    return found


def stop_and_print(command: str, print_command: str, grid_dims: int) -> str:
    """Run the printed command as printed, with pdb commands on stdin: print the value, the program id."""
    args = shlex.split(command)
    assert args[:2] == ["tdebug", "run"], command
    pids = "".join(f"p tl.program_id({axis})\n" for axis in range(grid_dims))
    return tdebug(args[1:], stdin=f"{print_command}\n{pids}q\n")  # quit there: the rest of the run is not needed


# (file, case arguments, expected group, expected store line, grid dims, pattern fragment)
BUGS = [
    ("bugs/01_matmul_stride_trap.py", "--shape 129x127x65 --layout sliced --config 9", "every program (20 of 20)",
     84, 1, "every row but the first"),
    ("bugs/07_matmul_k_remainder.py", "--shape 129x127x65 --config 9", "every program (20 of 20)", 83, 1,
     "everywhere"),
    ("bugs/08_matmul_fp16_accumulator.py", "--shape 32x32x32768 --dtype fp16 --config 9", "the only program", 85, 1,
     "in the one tile"),
    ("bugs/06_softmax_masked_lanes.py", "--shape 129x3", "row", 39, 1, "rows"),
    ("bugs/12_attention_ragged_keys.py", "--shape 1x2x67x16 --variant full", "every program (4 of 4)", 75, 2,
     "everywhere"),
]


@pytest.mark.parametrize("file, case, group, line, dims, shape_of_errors", BUGS, ids=[b[0][5:7] for b in BUGS])
def test_catalogue_bug_is_localised_and_the_command_stops_on_a_wrong_value(file, case, group, line, dims,
                                                                         shape_of_errors):
    out = tdebug(["run", file, *case.split(), "--seed", "1"])
    assert "FAIL" in out, out
    found = report(out)
    assert group in found["group"], out
    assert shape_of_errors in found["pattern"], out
    assert found["stored"][0] == (Path(file).name, str(line)), out
    index, pid = found["first"]
    printed, got, expected = found["print"]
    got, expected = float(got), float(expected)
    assert f"--break {line} --pid {pid}" in found["command"] and found["command"].startswith(f"tdebug run {file}")
    assert out.rstrip().endswith(found["command"])  # the report ends with the one command
    # Run as printed: it stops at that line, in that program, on the same inputs, and shows the wrong value.
    session = stop_and_print(found["command"], printed, dims)
    assert f"breakpoint at {Path(file).name}:{line}" in session, session
    assert f"({line})" in session and "-> tl.store(" in session, session
    shown = re.findall(r"np\.float(16|32|64)\(" + NUMBER + r"\)", session)
    assert shown, session
    bits, value = shown[0]
    digits = 1e-3 if bits == "16" else 1e-5  # numpy prints the shortest repr that round-trips in its dtype
    assert float(value) == pytest.approx(got, rel=digits, abs=1e-6), session  # the stored value, same inputs
    rtol, atol = (float(v) for v in re.search(r"\(rtol " + NUMBER + ", atol " + NUMBER + r"\)", out).groups())
    assert abs(float(value) - expected) > atol + rtol * abs(expected), session  # ... and it is wrong
    program = tuple(int(v) for v in re.findall(r"array\(\[(\d+)\], dtype=int32\)", session)[:dims])
    assert program == tuple(int(p) for p in pid.split(",")), session


@pytest.mark.slow  # the bug's case in all ten autotune configs
def test_bugs_check_shows_the_same(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    workspace = tmp_path / "ws"
    assert "01_matmul_stride_trap.py" in tdebug(["bugs", "--workspace", str(workspace), "start", "1"])
    out = tdebug(["bugs", "--workspace", str(workspace), "check", "1", "--quick", "--seed", "1"])
    assert "FAIL the bug's case" in out, out
    found = report(out)
    assert found["group"].startswith("every program") and found["stored"][0] == ("01_matmul_stride_trap.py", "84")
    assert "whole rows: every row but the first" in found["pattern"]
    copy = workspace / "01_matmul_stride_trap.py"
    assert found["command"].startswith(f"tdebug run {copy} --shape 129x127x65 --dtype fp32 --layout sliced ")


def test_script_api_names_the_edge_tile_and_its_command_stops_there():
    out = tdebug(["run", str(EDGE_TILE.relative_to(ROOT))])
    assert "tdebug.explain: 64 wrong and 0 unwritten of 6,400 elements" in out, out
    assert "stored by programs with pid_n = 3 only (2 of 8): the last column block (columns 96-99)" in out
    assert "pattern: edge columns only: column 99" in out
    found = report(out)
    assert found["stored"] == [("edge_tile_bias.py", "28")]
    assert found["first"] == ("0, 99", "0,3")
    assert found["command"] == "tdebug run tests/cpu/data/edge_tile_bias.py --break 28 --pid 0,3"
    session = stop_and_print(found["command"], found["print"][0], 2)
    assert "breakpoint at edge_tile_bias.py:28 (bias_add_kernel) in program 0,3" in session
    shown = float(re.search(r"np\.float32\(" + NUMBER + r"\)", session).group(1))
    assert shown == pytest.approx(float(found["print"][1]), rel=1e-5)
    assert re.findall(r"array\(\[(\d+)\], dtype=int32\)", session)[:2] == ["0", "3"]


def test_explain_outside_the_interpreter_says_how_to_get_there():
    import torch

    stream = io.StringIO()
    assert explain(torch.zeros(3), torch.ones(3), file=stream) is None
    assert "run this under tdebug's interpreter" in stream.getvalue()


# -- the wording, on maps made by hand -----------------------------------------------------------------------

def tiles(rows: int, cols: int, tile: int) -> np.ndarray:
    """Writer map of a grid of tile x tile programs, numbered row-major over the tiles."""
    r, c = np.indices((rows, cols))
    return (r // tile) * (-(-cols // tile)) + c // tile


def test_pattern_names_edges_one_tile_bands_and_rows():
    w = tiles(64, 100, 32)
    bad = np.zeros(w.shape, dtype=bool)
    bad[:, 96:] = True
    assert pattern(bad, w) == "edge columns only: columns 96-99"
    bad[:] = False
    bad[60:, :] = True
    assert pattern(bad, w) == "edge rows only: rows 60-63"
    bad[:] = False
    bad[32:64, 32:64] = True
    assert pattern(bad, w) == "one tile: the last row block (rows 32-63), columns 32-63"
    bad[:] = False
    bad[np.arange(64), np.arange(64)] = True
    assert pattern(bad, w) == "a diagonal band: |row - column| <= 0"
    bad[:] = False
    bad[1:, :] = True
    assert pattern(bad, w) == "whole rows: every row but the first"
    assert pattern(np.ones(w.shape, dtype=bool), w) == "everywhere: every element"


def test_program_group_speaks_in_the_kernels_variables():
    scalars = {p: {"pid": p, "pid_m": p // 4, "pid_n": p % 4} for p in range(8)}
    assert program_group({3, 7}, set(range(8)), scalars) == "programs with pid_n = 3 only (2 of 8)"
    assert program_group({2, 3, 6, 7}, set(range(8)), scalars) == "programs with pid_n >= 2 only (4 of 8)"
    assert program_group(set(range(8)), set(range(8)), scalars) == "every program (8 of 8)"
    assert program_group({1, 5, 6}, set(range(16)), {}) == "programs 1, 5-6 (3 of 16)"
    assert program_group({1, 2, 4, 5, 7}, set(range(8)), {}) == "every program but 0, 3, 6 (5 of 8)"
    assert region(tiles(64, 100, 32) >= 6) == "the last row block (rows 32-63), the last column block (columns 64-99)"


# -- tdebug viz of a wrong case ---------------------------------------------------------------------------------

def test_viz_draws_the_error_in_tolerance_units_with_tiles_and_store_lines(tmp_path):
    out = tdebug(["viz", "bugs/01_matmul_stride_trap.py", "--shape", "33x40", "--layout", "sliced", "--seed", "1",
                  "--out", str(tmp_path)])
    assert "WRONG VALUES: c_ptr: " in out, out
    assert "pattern: whole rows: every row but the first" in out
    assert "stored at 01_matmul_stride_trap.py:84" in out
    png = tmp_path / "error1_matmul_kernel_c_ptr.png"
    assert png.is_file()
    page = (tmp_path / "viz.html").read_text()
    assert "wrong values: matmul_kernel · c_ptr" in page and "--break 84 --pid 0" in page


def test_error_picture_marks_wrong_unwritten_and_labels_each_tile(tmp_path):
    from PIL import Image

    from tdebug.viz.errors import UNWRITTEN_RGB, ErrorMap, draw_error, error_rgb, tile_edges, tile_labels

    writer = tiles(8, 8, 4)
    error = np.zeros((8, 8), dtype=np.float32)
    error[:, 7] = 50.0  # the last column: 50 tolerances off
    error[7, 0] = np.nan  # never written
    site = np.zeros((8, 8), dtype=np.int32)
    m = ErrorMap("y_ptr", "k", (8, 8), (2, 2, 1), 1e-4, 1e-5, [{"file": "k.py", "line": 28}], ["where: ..."], "",
                 {"error": error, "writer": writer, "site": site})
    rgb = error_rgb(error)
    assert tuple(rgb[7, 0]) == UNWRITTEN_RGB and tuple(rgb[0, 0]) == (255, 255, 255)
    assert rgb[0, 7, 0] > 150 and rgb[0, 7, 2] < 100  # beyond tolerance: warm colours
    assert len(tile_edges(writer)) == 2 * 8  # one vertical and one horizontal boundary line, 8 cells each
    assert sorted(t for _, _, t in tile_labels(m)) == ["L28"] * 4
    assert m.wrong == 8 and m.unwritten == 1
    picture = np.asarray(Image.open(draw_error(m, tmp_path / "e.png")).convert("RGB"))
    assert (picture == UNWRITTEN_RGB).all(axis=-1).any()


def test_replayed_stores_give_last_writer_overwrites_and_atomic_contributors():
    import torch

    from tdebug.interpreter.hooks.stores import ArgView, LaunchStores, StorageInfo, StoreRecord, StoreRecorder
    from tdebug.runtime.localise import localise
    from tdebug.runtime.store_maps import writer_maps

    base = torch.zeros(4, 6)
    out = base[:, 1:5]  # a view: storage offset 1, row stride 6
    ptr = base.untyped_storage().data_ptr()
    view = ArgView("y_ptr", (4, 4), 1, (6, 1), 1, (6, 1))
    launch = LaunchStores(1, "k", (2, 1, 1), {ptr: StorageInfo(ptr, ptr, base.untyped_storage().nbytes(), [view])})

    def record(pid: int, rows: range, atomic: bool = False) -> StoreRecord:
        offsets = np.array([1 + 6 * r + c for r in rows for c in range(4)])
        return StoreRecord((pid, 0, 0), "k.py", 9, ptr, 4, offsets, np.arange(offsets.size), (len(rows), 4), 1, atomic)

    recorder = StoreRecorder()
    recorder.launches = [launch]
    launch.records = [record(0, range(0, 3)), record(1, range(2, 4))]  # program 1 overwrites row 2
    maps = writer_maps(out, recorder)
    assert maps.writer[:, 0].tolist() == [0, 0, 1, 1] and maps.arg == "y_ptr"
    assert maps.overwritten[:, 0].tolist() == [False, False, True, False]
    assert maps.lane[2, 1] == 1  # row 2 is the first row of program 1's block
    launch.records = [record(0, range(0, 4), atomic=True), record(1, range(0, 4), atomic=True)]
    wrong = np.zeros((4, 4), dtype=bool)
    wrong[0, 0] = True
    loc = localise(out, np.zeros((4, 4)), np.ones((4, 4)), wrong, np.zeros((4, 4), dtype=bool), recorder)
    assert loc.programs == [0, 1] and loc.group == "every program (2 of 2)"
    assert not writer_maps(out, recorder).overwritten.any()  # atomic updates add up: nothing is overwritten


def test_break_takes_file_and_line_for_a_kernel_the_target_imports(monkeypatch):
    from tdebug.interpreter.hooks.breakpoints import BreakpointError, resolve_breaks
    from tdebug.runtime.localise import run_command

    monkeypatch.chdir(ROOT)
    [(kernel, line)] = resolve_breaks(str(EDGE_TILE), ["kernels/add.py:22"])
    assert (kernel.name, line) == ("add_kernel", 22)
    [(kernel, _)] = resolve_breaks(str(EDGE_TILE), ["28"])
    assert kernel.name == "bias_add_kernel"
    with pytest.raises(BreakpointError, match="outside every kernel"):
        resolve_breaks(str(EDGE_TILE), ["kernels/add.py:3"])
    command = run_command(str(EDGE_TILE), None, str(ROOT / "kernels" / "add.py"), 22, "1", ["64"])
    assert command == "tdebug run tests/cpu/data/edge_tile_bias.py --break kernels/add.py:22 --pid 1 -- 64"


def test_a_launch_storing_more_than_the_cap_keeps_no_records_and_explain_says_so():
    out = tdebug(["run", "tests/cpu/data/edge_tile_capped.py"])
    assert "tdebug.explain: launch 1 (bias_add_kernel) stored more than 1,000 lanes, too many to keep a record of " \
           "each: no localisation" in out, out
    assert "localised: False" in out
    assert "stored by programs" not in out
