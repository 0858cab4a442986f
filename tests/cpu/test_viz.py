"""tdebug viz: the per-element maps (counts, programs, out-of-bounds margin, unwritten region) and the
pixels of the pictures drawn from them, for buggy kernels and their fixed versions.

Most scenarios run in one traced child (tests/cpu/data/viz_run_specs.py launches each in turn), so the
whole module stays well under a minute; the CLI, --pid, the error paths and --serve get a child each.
"""

from __future__ import annotations

import ast
import base64
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import zlib
from pathlib import Path

import numpy as np
import pytest

from tdebug.interpreter.versions import triton_viz_problem
from tdebug.runtime.job import VizJob
from tdebug.viz import palette
from tdebug.viz.draw import draw_tensor
from tdebug.viz.html import render_page
from tdebug.viz.model import Geometry, LaunchMap, TensorMap, categories
from tdebug.viz.reduce import ArgTensor, Attributor, TensorAccumulator, block_coords, greedy_coords
from tdebug.viz.target import default_target
from tdebug.viz.trace_parent import trace

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "cpu" / "data"
TDEBUG = [sys.executable, "-m", "tdebug"]
RED = palette.CATEGORY_RGB[palette.OOB]
AMBER = palette.CATEGORY_RGB[palette.UNWRITTEN]
PURPLE = palette.CATEGORY_RGB[palette.MULTI]


# ---------------------------------------------------------------------------------------- pure numpy

def test_block_coords_keep_a_column_overflow_as_a_column():
    """A 2x3 tile at rows 3..4, columns 3..5 of a contiguous 5x5 tensor: column 5 stays column 5."""
    rows, cols = np.arange(3, 5)[:, None], np.arange(3, 6)[None, :]
    e = rows * 5 + cols
    r, c = block_coords(e, (5, 1), (5, 5))
    assert r.tolist() == [[3, 3, 3], [4, 4, 4]]
    assert c.tolist() == [[3, 4, 5], [3, 4, 5]]
    # Split greedily by the strides, the same addresses wrap onto the next row instead.
    assert greedy_coords(e.reshape(-1), (5, 1), (5, 5))[1].tolist() == [3, 4, 0, 3, 4, 0]


def test_block_coords_follow_a_transposed_access():
    rows, cols = np.arange(4)[:, None], np.arange(3)[None, :]
    e = cols * 10 + rows  # a 10x3 tensor read as its transpose: axis 0 steps the column... of stride 1
    r, c = block_coords(e, (1, 10), (10, 3))
    assert r.tolist() == (rows + 0 * cols).tolist() and c.tolist() == (cols + 0 * rows).tolist()


def test_greedy_coords_put_the_gap_of_a_sliced_view_right_of_it():
    """A 4x5 view with row stride 11: element offset 7 is in the gap, column 7 of row 0."""
    r, c = greedy_coords(np.array([7, 11, 16]), (11, 1), (4, 5))
    assert r.tolist() == [0, 1, 1] and c.tolist() == [7, 0, 5]


def _arg(name: str, shape, base: int, elsize: int = 4) -> ArgTensor:
    strides, acc = [], 1
    for d in reversed(shape):
        strides.insert(0, acc)
        acc *= d
    return ArgTensor(name, tuple(shape), tuple(strides), elsize, "fp32", base, base - 4096, base + 4096 + acc * elsize)


def test_accumulator_counts_programs_margin_unwritten_and_doubles():
    arg = _arg("out", (10,), base=1 << 20)
    acc = TensorAccumulator(arg)
    addr = lambda idx: arg.base + 4 * np.asarray(idx)
    acc.add("store", 0, addr(np.arange(0, 8)), None)
    acc.add("store", 1, addr(np.arange(8, 16)), np.arange(8, 16) < 14)  # 2 masked-off lanes, 4 out of bounds
    acc.add("store", 2, addr([0, 1]), None)  # a second writer for elements 0 and 1
    t = acc.finish(is_output=False)
    st = t.stats
    assert (st["stores"], st["masked_stores"], st["oob_stores"]) == (16, 2, 4)
    assert st["oob_elements"] == [10, 13]
    assert st["unwritten"] == 0 and st["multi_written"] == 2
    cat = t.categories()
    assert (cat == palette.OOB).sum() == 4 and (cat == palette.MULTI).sum() == 2
    assert (cat == palette.MASKED).sum() == 2
    flat = lambda k: t.arrays[k].reshape(-1)
    assert flat("store_pid")[9] == 1 and flat("store_pid")[0] == 0 and flat("store_pid_max")[0] == 2


def test_atomics_count_as_stores_but_not_as_a_second_writer():
    arg = _arg("acc", (4,), base=1 << 20)
    acc = TensorAccumulator(arg)
    for pid in range(3):
        acc.add("atomic", pid, arg.base + 4 * np.arange(4), None)
    t = acc.finish(is_output=False)
    assert t.stats["stores"] == 12 and t.stats["atomics"] == 12 and t.stats["multi_written"] == 0
    assert t.problems() == [] and "12 stores (12 atomic)" in t.access_summary()


def test_attributor_keeps_an_overflow_with_its_own_tensor():
    """Most lanes of a tile that ran off the end of `a` lie past it: still `a`'s access (guard bands)."""
    a = ArgTensor("a", (8,), (1,), 4, "fp32", 1_000_000, 1_000_000 - 4096, 1_000_032 + 4096)
    b = ArgTensor("b", (8,), (1,), 4, "fp32", 2_000_000, 2_000_000 - 4096, 2_000_032 + 4096)
    att = Attributor([a, b])
    assert att.attribute(a.base + 4 * np.arange(4, 40)) == 0
    assert att.attribute(b.base + 4 * np.arange(0, 8)) == 1


def test_geometry_wraps_1d_and_caps_margins():
    g = Geometry.for_shape((1000,))
    assert (g.kind, g.cols, g.rows) == ("1d", 32, 32)
    assert Geometry.for_shape((129, 127)).cap_rows == 33
    assert Geometry.for_shape((2, 3, 4, 5)).n_slices == 6


def test_default_target_reads_the_last_started_exercise(tmp_path):
    chosen = default_target([tmp_path])
    assert chosen.path == ROOT / "kernels" / "matmul.py" and "no exercise started" in chosen.why
    (tmp_path / "workspace").mkdir()
    exercise = tmp_path / "workspace" / "04_gelu_missing_masks.py"
    exercise.write_text("# a copy\n")
    state = {"last_started": "workspace/04_gelu_missing_masks.py"}
    (tmp_path / "workspace" / ".state.json").write_text(json.dumps(state))
    chosen = default_target([tmp_path])
    assert chosen.path == exercise and "started last" in chosen.why


# ------------------------------------------------------------------------------- one traced child

def _bug_files() -> dict[str, tuple[Path, Path, str, str]]:
    """bugs/ exercises with a missing mask, a hardcoded grid or a race between programs:
    name -> (bug file, fixed file, kind, shape)."""
    found = {}
    for path in sorted((ROOT / "bugs").glob("*.py")):
        try:
            tree = ast.parse(path.read_text())
        except (OSError, SyntaxError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "Bug":
                kw = {k.arg: k.value for k in node.keywords}
                try:
                    title = ast.literal_eval(kw["title"]).lower()
                    fixes = ROOT / ast.literal_eval(kw["fixes"])
                    shape = ast.literal_eval(kw["shape"]) if "shape" in kw else None
                except (KeyError, ValueError):
                    continue
                kind = ("mask" if "mask" in title and "missing" in title else "grid" if "grid" in title
                        else "race" if "race between programs" in title else "")
                if kind and fixes.is_file():
                    found[path.stem] = (path, fixes, kind, "x".join(map(str, shape)) if shape else "")
    return found


BUGS = _bug_files()
SCENARIOS = {
    "add_nomask": f"{DATA / 'viz_add_nomask.py'}",
    "add_fixed": f"{ROOT / 'kernels' / 'add.py'}:1000",
    "copy_nomask": f"{DATA / 'viz_copy2d.py'}::nomask",
    "copy_fixed": f"{DATA / 'viz_copy2d.py'}::fixed",
    "copy_smallgrid": f"{DATA / 'viz_copy2d.py'}::smallgrid",
    "copy_overlap": f"{DATA / 'viz_copy2d.py'}::overlap",
    "stride_trap": f"{DATA / 'viz_copy2d.py'}::stride_trap:sliced",
    "matmul": f"{ROOT / 'kernels' / 'matmul.py'}:129x127",
    "transpose_nomask": f"@{DATA / 'viz_transpose_nomask.py'}",
    "script": f"@{DATA / 'viz_script_launches.py'}",
    "descriptor": f"@{DATA / 'viz_descriptor.py'}",
}
for _name, (_bug, _fixed, _kind, _shape) in BUGS.items():
    SCENARIOS[f"bug:{_name}"] = f"{_bug}"
    SCENARIOS[f"fixed:{_name}"] = f"{_fixed}:{_shape}"


@pytest.fixture(scope="module")
def traced() -> dict[str, list[LaunchMap]]:
    job = VizJob(kind="script", target=str(DATA / "viz_run_specs.py"),
                 argv=tuple(f"{k}={v}" for k, v in SCENARIOS.items()), seed=0)
    result = trace(job, timeout=400)
    assert not result.crashed and not result.info.get("error"), result.output[-3000:]
    by_number = {launch.index: launch for launch in result.launches}
    found = {}
    for m in re.finditer(r"^SCENARIO (\S+) (\d+) (\d+)$", result.output, re.M):
        found[m[1]] = [by_number[i] for i in range(int(m[2]), int(m[3]) + 1)]
    assert set(found) == set(SCENARIOS), result.output[-3000:]
    return found


def tensor(traced, scenario: str, name: str, launch: int = 0) -> TensorMap:
    return next(t for t in traced[scenario][launch].tensors if t.name == name)


def cells(t: TensorMap, category: int) -> int:
    return int((t.categories() == category).sum())


def test_add_without_masks_shows_24_lanes_past_the_end(traced):
    for name, kind in (("x_ptr", "loads"), ("y_ptr", "loads"), ("out_ptr", "stores")):
        t = tensor(traced, "add_nomask", name)
        assert t.stats[f"oob_{kind}"] == 24 and t.stats["oob_elements"] == [1000, 1023]
        assert cells(t, palette.OOB) == 24
        inside = t.arrays["inside"].astype(bool)
        assert inside.sum() == 1000 and (t.arrays[kind][inside] == 1).all()
    out = tensor(traced, "add_nomask", "out_ptr")
    assert out.arrays["store_pid"].reshape(-1)[999] == 3 and out.stats["unwritten"] == 0


def test_fixed_add_shows_masked_lanes_but_no_margin(traced):
    out = tensor(traced, "add_fixed", "out_ptr")
    assert out.stats["oob_stores"] == 0 and out.stats["masked_stores"] == 24 and out.stats["unwritten"] == 0
    assert cells(out, palette.OOB) == 0 and cells(out, palette.MASKED) == 24
    assert out.problems() == []


def test_copy_without_masks_draws_the_bottom_and_right_margins(traced):
    out = tensor(traced, "copy_nomask", "out_ptr")
    g = out.geometry
    assert (g.mt, g.mb, g.ml, g.mr) == (0, 31, 0, 1)
    assert out.stats["oob_stores"] == 5 * 4 * 32 * 32 - 129 * 127
    assert out.stats["oob_rows"] == [129, 159] and out.stats["oob_columns"] == [127, 127]
    cat = out.categories()[0]
    assert (cat[129:, :128] == palette.OOB).all() and (cat[:129, 127] == palette.OOB).all()
    assert (cat[:129, :127] == palette.OK).all()


def test_fixed_copy_has_no_margin_no_hole_no_double(traced):
    for scenario in ("copy_fixed", "matmul"):
        for t in traced[scenario][0].tensors:
            assert t.oob_lanes == 0 and t.stats["unwritten"] == 0 and t.stats["multi_written"] == 0, t.name
            assert cells(t, palette.OOB) + cells(t, palette.UNWRITTEN) + cells(t, palette.MULTI) == 0


def test_too_small_grid_leaves_the_unwritten_region(traced):
    out = tensor(traced, "copy_smallgrid", "out_ptr")
    assert out.stats["unwritten"] == 129 * 127 - 3 * 2 * 32 * 32
    cat = out.categories()[0]
    assert (cat[:96, :64] == palette.OK).all() and (cat[96:, :] == palette.UNWRITTEN).all()
    assert (cat[:, 64:] == palette.UNWRITTEN).all()


def test_programs_writing_the_same_tile_are_doubles(traced):
    out = tensor(traced, "copy_overlap", "out_ptr")
    inside = out.arrays["inside"].astype(bool)
    assert (out.arrays["store_npids"][inside] == 2).all() and out.stats["multi_written"] == 129 * 127


def test_stride_trap_reads_the_gap_of_a_sliced_view(traced):
    x = tensor(traced, "stride_trap", "x_ptr")
    assert x.strides == (2 * 127 + 3, 1) and x.stats["oob_columns"] == [127, 256]
    assert x.geometry.mr == x.geometry.cap_cols  # clipped to the widest margin
    assert cells(x, palette.OOB) > 0 and x.stats["unplaced"] == 0


def test_matmul_program_map_shows_the_tiles(traced):
    launch = traced["matmul"][0]
    assert launch.config.startswith("config ") and "BLOCK_M=32 BLOCK_N=32" in launch.config
    c = tensor(traced, "matmul", "c_ptr")
    inside = c.arrays["inside"].astype(bool)
    assert (c.arrays["stores"][inside] == 1).all()
    pids = c.arrays["store_pid"][inside]
    assert len(np.unique(pids)) == launch.n_programs == 5 * 4
    tile = c.arrays["store_pid"][0, :32, :32]
    assert (tile == tile[0, 0]).all()
    a = tensor(traced, "matmul", "a_ptr")
    assert (a.arrays["loads"][a.arrays["inside"].astype(bool)] == 4).all()  # each A tile read by 4 column tiles


def test_unmasked_transpose_that_segfaults_the_interpreter_is_drawn(traced):
    x, out = (tensor(traced, "transpose_nomask", n) for n in ("x_ptr", "out_ptr"))
    assert x.stats["oob_rows"] == [100, 127] and x.stats["oob_columns"] == [70, 127]
    assert out.stats["oob_rows"] == [70, 127] and out.stats["oob_columns"] == [100, 127]
    assert out.stats["unwritten"] == 0


def test_script_launches_are_numbered_and_3d_is_sliced(traced):
    first, second = traced["script"]
    assert second.index == first.index + 1 and second.kernel == "batched_fill_kernel"
    z = second.tensors[0]
    assert z.geometry.kind == "nd" and z.arrays["stores"].shape[0] == 3
    for s in range(3):
        assert z.arrays["stores"][s].sum() == 30 and set(np.unique(z.arrays["store_pid"][s])) - {-1} == {s}


def test_tensor_descriptors_are_drawn_and_written_back(traced):
    """The guarded copy of a descriptor's base is what the kernel used, and the result came back (the
    script asserts it); the descriptor's bounds check shows as masked-off lanes, not out of bounds."""
    launch = traced["descriptor"][0]
    x, o = launch.tensors
    assert (x.name, o.name) == ("x_desc", "o_desc") and launch.stray_lanes == 0
    assert x.stats["loads"] == 640 and o.stats["stores"] == 640 and o.stats["masked_stores"] == 128
    assert o.oob_lanes == 0 and o.stats["unwritten"] == 0


@pytest.mark.parametrize("name", sorted(n for n, v in BUGS.items() if v[2] == "mask"))
def test_missing_mask_bug_shows_the_margin_its_fix_does_not(traced, name):
    bug = [t for launch in traced[f"bug:{name}"] for t in launch.tensors]
    fixed = [t for launch in traced[f"fixed:{name}"] for t in launch.tensors]
    assert sum(t.oob_lanes for t in bug) > 0 and sum(cells(t, palette.OOB) for t in bug) > 0
    assert sum(t.oob_lanes for t in fixed) == 0 and sum(cells(t, palette.OOB) for t in fixed) == 0


@pytest.mark.parametrize("name", sorted(n for n, v in BUGS.items() if v[2] == "grid"))
def test_hardcoded_grid_bug_shows_the_unwritten_region_its_fix_does_not(traced, name):
    bug = [t for launch in traced[f"bug:{name}"] for t in launch.tensors]
    fixed = [t for launch in traced[f"fixed:{name}"] for t in launch.tensors]
    assert sum(t.stats["unwritten"] for t in bug) > 0 and sum(cells(t, palette.UNWRITTEN) for t in bug) > 0
    assert sum(t.stats["unwritten"] + t.oob_lanes for t in fixed) == 0


# ------------------------------------------------------------------------------------------ pixels

def _pixels(path: Path, box=None) -> np.ndarray:
    from PIL import Image

    img = np.asarray(Image.open(path).convert("RGB")).astype(int)
    if box is not None:
        left, top, right, bottom = box
        img = img[top:bottom, left:right]
    return img


def _near(img: np.ndarray, rgb, tol: int = 24) -> np.ndarray:
    return (np.abs(img - np.array(rgb)) <= tol).all(axis=-1)


def _draw(traced, tmp_path, scenario, name, launch=0):
    lm = traced[scenario][launch]
    t = next(t for t in lm.tensors if t.name == name)
    return draw_tensor(lm, t, tmp_path / f"{scenario}_{name}.png")


def test_png_warning_red_lies_in_the_margin_below_and_right(traced, tmp_path):
    drawn = _draw(traced, tmp_path, "copy_nomask", "out_ptr")
    whole = _near(_pixels(drawn.path), RED)
    left, top, right, bottom = drawn.boxes["problems"]
    panel = whole[top:bottom, left:right]
    assert panel.sum() > 1000 and panel.sum() == whole.sum() - _legend_red(whole, drawn)
    g = drawn.tensor.geometry
    h, w = panel.shape
    # The tensor occupies the top-left 129 of 160 rows and 127 of 128 columns of the panel.
    tensor_bottom, tensor_right = int(h * g.rows / g.height), int(w * g.cols / g.width)
    ys, xs = np.nonzero(panel)
    assert ((ys >= tensor_bottom - 2) | (xs >= tensor_right - 2)).all()
    assert (ys >= tensor_bottom - 2).mean() > 0.9


def _legend_red(mask: np.ndarray, drawn) -> int:
    """Red pixels outside all panels: the problems legend's swatch."""
    inside = np.zeros(mask.shape, bool)
    for left, top, right, bottom in drawn.boxes.values():
        inside[top:bottom, left:right] = True
    return int((mask & ~inside).sum())


def test_png_of_the_fixed_kernel_has_no_warning_colour(traced, tmp_path):
    for scenario, name in (("copy_fixed", "out_ptr"), ("matmul", "c_ptr")):
        img = _pixels(_draw(traced, tmp_path, scenario, name).path)
        for rgb in (RED, AMBER, PURPLE):
            assert not _near(img, rgb, 12).any(), (scenario, name, rgb)


def test_png_of_a_too_small_grid_is_mostly_amber(traced, tmp_path):
    drawn = _draw(traced, tmp_path, "copy_smallgrid", "out_ptr")
    panel = _pixels(drawn.path, drawn.boxes["problems"])
    assert _near(panel, AMBER).mean() > 0.5 and not _near(panel, RED).any()


@pytest.mark.parametrize("name", sorted(n for n, v in BUGS.items() if v[2] == "race"))
def test_race_bug_shows_doubly_written_elements_its_atomic_fix_does_not(traced, name):
    bug = [t for launch in traced[f"bug:{name}"] for t in launch.tensors]
    fixed = [t for launch in traced[f"fixed:{name}"] for t in launch.tensors]
    assert sum(t.stats["multi_written"] for t in bug) > 0 and sum(cells(t, palette.MULTI) for t in bug) > 0
    assert sum(t.stats["multi_written"] for t in fixed) == 0
    assert sum(t.stats.get("atomics", 0) for t in fixed) > 0  # the fix's atomic_add is drawn as stores


@pytest.mark.parametrize("name", sorted(n for n, v in BUGS.items() if v[2] in ("mask", "grid")))
def test_png_of_each_bug_and_its_fix(traced, tmp_path, name):
    """The bug's worst tensor has the warning colour in its problems panel; the same tensor of the fix has none."""
    kind = BUGS[name][2]
    colour = RED if kind == "mask" else AMBER
    score = (lambda t: t.oob_lanes) if kind == "mask" else (lambda t: t.stats["unwritten"])
    launch, worst = max(((lm, t) for lm in traced[f"bug:{name}"] for t in lm.tensors), key=lambda p: score(p[1]))
    fixed_launch = traced[f"fixed:{name}"][traced[f"bug:{name}"].index(launch)]
    fixed = next(t for t in fixed_launch.tensors if t.name == worst.name)
    for lm, t, expect in ((launch, worst, True), (fixed_launch, fixed, False)):
        drawn = draw_tensor(lm, t, tmp_path / f"{lm.index}_{t.name}.png")
        hits = int(_near(_pixels(drawn.path, drawn.boxes["problems"]), colour, 12).sum())
        assert (hits > 0) == expect, (lm.kernel, t.name, hits)


# -------------------------------------------------------------------------------------------- HTML

def test_html_page_is_self_contained_and_embeds_the_maps(traced):
    page = render_page(traced["copy_nomask"] + traced["script"], "tdebug viz test")
    assert "http://" not in page and "https://" not in page and "<link" not in page
    assert page.count('src="data:image/png;base64,') == 4 * (2 + 2 + 1)
    data = json.loads(re.search(r'<script type="application/json" id="viz-data">(.*?)</script>', page, re.S)[1])
    entry = data["tensors"][f"l{traced['copy_nomask'][0].index}t1"]
    assert entry["name"] == "out_ptr" and entry["mb"] == 31
    raw = np.frombuffer(zlib.decompress(base64.b64decode(entry["category"])), dtype=np.uint8)
    t = tensor(traced, "copy_nomask", "out_ptr")
    assert (raw.reshape(entry["height"], entry["width"]) == categories(t.arrays, t.is_output)[0]).all()


# --------------------------------------------------------------------------------------------- CLI

def _cli(*args, cwd=None, timeout=240) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("TRITON_INTERPRET", None)
    return subprocess.run(TDEBUG + list(args), cwd=cwd or ROOT, capture_output=True, text=True, timeout=timeout,
                          env=env)


def test_cli_matmul_writes_pngs_and_the_page(tmp_path):
    out = tmp_path / "pics"
    r = _cli("viz", "kernels/matmul.py", "--shape", "129x127", "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert "129x127x65" in r.stdout and "PROBLEM" not in r.stdout
    paths = [Path(line) for line in r.stdout.splitlines() if line.endswith((".png", ".html"))]
    names = sorted(p.name for p in paths)
    assert names == sorted([f"launch1_matmul_kernel_{n}_ptr.png" for n in "abc"] + ["viz.html"])
    assert all((ROOT / p if not p.is_absolute() else p).is_file() for p in paths)
    with open(out / "launch1_matmul_kernel_c_ptr.png", "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def _invoke(*args):
    """The CLI in this process (the traced launch still runs in a child)."""
    from click.testing import CliRunner

    from tdebug.cli import cli

    return CliRunner().invoke(cli, list(args))


def test_cli_without_target_draws_the_started_exercise(tmp_path, monkeypatch):
    (tmp_path / "workspace").mkdir()
    shutil.copy(DATA / "viz_add_nomask.py", tmp_path / "workspace" / "my_add.py")
    (tmp_path / "workspace" / ".state.json").write_text(json.dumps({"last_started": "workspace/my_add.py"}))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TDEBUG_WORKSPACE", str(tmp_path / "workspace"))  # as `tdebug bugs` finds it
    r = _invoke("viz", "--out", "pics")
    assert r.exit_code == 1, r.stderr  # it prints PROBLEM: a finding (issue 29)
    assert "workspace/my_add.py, the exercise you started last" in r.stderr
    assert "24 out-of-bounds store lanes" in r.stdout
    assert _near(_pixels(tmp_path / "pics" / "launch1_add_nomask_kernel_out_ptr.png"), RED).sum() > 0


def test_cli_pid_traces_one_program(tmp_path):
    r = _invoke("viz", str(DATA / "viz_copy2d.py"), "--variant", "fixed", "--pid", "4,3", "--out", str(tmp_path))
    assert r.exit_code == 0, r.stderr
    assert "program (4,3) only" in r.stdout and "never written" not in r.stdout


@pytest.mark.parametrize("args, message", [
    (["viz", "no/such/file.py"], "no such file"),
    (["viz", "kernels/matmul.py", "--shape", "1x2x3x4"], "matmul takes a shape"),
    (["viz", "kernels/matmul.py", "--pid", "a"], "bad --pid"),
    (["viz", str(DATA / "viz_script_launches.py"), "--shape", "3"], "applies to catalogue files"),
])
def test_cli_user_errors_are_one_line_exit_2(args, message, monkeypatch):
    monkeypatch.chdir(ROOT)
    r = _invoke(*args)
    assert r.exit_code == 2 and message in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_cli_script_that_launches_nothing(tmp_path):
    script = tmp_path / "nothing.py"
    script.write_text("import torch\nx = torch.zeros(3)\n")
    r = _invoke("viz", str(script), "--out", str(tmp_path / "o"))
    assert r.exit_code == 2 and "launched no Triton kernel" in r.stderr


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.skipif(triton_viz_problem() is not None, reason=f"--serve {triton_viz_problem()}")
def test_serve_answers_on_loopback_then_stops(tmp_path):
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(TDEBUG + ["viz", str(DATA / "viz_add_nomask.py"), "--serve", "--port", str(port),
                                      "--out", str(tmp_path)], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        deadline, url, seen = time.monotonic() + 180, f"http://127.0.0.1:{port}/", []
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            seen.append(line)
            if f"127.0.0.1:{port}" in line or not line:
                break
        answered = None
        while time.monotonic() < deadline and answered is None:
            try:
                with urllib.request.urlopen(url + "api/data", timeout=5) as resp:
                    answered = (resp.status, json.loads(resp.read()))
            except OSError:
                time.sleep(0.3)
        assert answered is not None, "".join(seen)
        assert answered[0] == 200 and answered[1]["ops"]["visualization_data"]
        with urllib.request.urlopen(url, timeout=5) as resp:
            assert resp.status == 200 and b"<html" in resp.read().lower()
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
    with pytest.raises(OSError):
        urllib.request.urlopen(url, timeout=2)


@pytest.mark.slow
def test_browser_check_script():
    """scripts/viz_browser_check.sh: headless Chromium renders the page; the screenshot is checked."""
    if not shutil.which("chromium") and os.geteuid() != 0:
        pytest.skip("chromium is not installed (the script installs it as root)")
    r = subprocess.run(["bash", str(ROOT / "scripts" / "viz_browser_check.sh")], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
