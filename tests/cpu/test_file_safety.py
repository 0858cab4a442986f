"""tdebug never loses a user's file: outputs checked before any work, viz never replaces what it did not
write, the workspace is never the catalogue, concurrent resets keep the user's edit."""

from __future__ import annotations

import json
import multiprocessing
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from tdebug.cli import cli
from tdebug.exercises.workspace import load_bugs
from tdebug.runtime.files import write_atomic
from tdebug.viz import outdir

ROOT = Path(__file__).resolve().parents[2]
ADD = ROOT / "kernels" / "add.py"


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args))


def one_line_exit_2(r, *words: str) -> None:
    assert r.exit_code == 2, (r.output, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tdebug: error:"), r.stderr
    assert all(w in lines[0] for w in words), lines[0]
    assert "Traceback" not in r.output


@pytest.mark.parametrize("command", ["check", "sanitize"])
def test_json_onto_the_target_is_refused_before_any_work(tmp_path, command):
    target = tmp_path / "add.py"
    target.write_bytes(ADD.read_bytes())
    before = target.read_bytes()
    r = invoke(command, str(target), "--json", str(target))
    one_line_exit_2(r, "--json", "an input")
    assert target.read_bytes() == before
    assert "PASS" not in r.output and "case" not in r.output  # refused before any case ran


def test_json_onto_a_catalogue_file_through_another_name_is_refused(tmp_path):
    link = tmp_path / "link.json"
    link.symlink_to(ADD)
    r = invoke("check", "--all", "--json", str(link))
    one_line_exit_2(r, "an input")


@pytest.mark.parametrize("args, words", [
    (["check", str(ADD), "--quick", "--json", "/proc/nope.json"], ["--json", "cannot write"]),
    (["sanitize", str(ADD), "--json", "/proc/nope.json"], ["--json", "cannot write"]),
    (["sanitize", str(ADD), "--keep-log", "/proc/x/log.txt"], ["--keep-log", "cannot write"]),
    (["viz", str(ADD), "--out", "/proc/nope"], ["--out", "cannot write"]),
    (["bugs", "matrix", "--only", "4", "--markdown", "/proc/m.md"], ["--markdown", "cannot write"]),
    (["check", str(ADD), "--json", str(ROOT / "kernels")], ["--json", "directory"]),
    (["viz", str(ADD), "--out", str(ADD)], ["--out", "is a file"]),
    (["bugs", "matrix", "--only", "4", "--markdown", str(ROOT / "bugs" / "04_gelu_missing_masks.py")],
     ["an input"]),
])
def test_unwritable_outputs_are_refused_before_any_work(args, words):
    r = invoke(*args)
    one_line_exit_2(r, *words)


def test_an_existing_file_tdebug_did_not_write_is_never_overwritten(tmp_path):
    mine = tmp_path / "notes.json"
    mine.write_text('{"my": "notes"}')
    r = invoke("check", str(ADD), "--json", str(mine))
    one_line_exit_2(r, "tdebug did not write it")
    assert mine.read_text() == '{"my": "notes"}'
    theirs = tmp_path / "r.json"
    theirs.write_text('{\n "tool": "tdebug check",\n "cases": []\n}')  # a previous run's: replaced
    from tdebug.cli.common import output_file

    assert output_file(str(theirs), "--json", [ADD]) == theirs


def test_write_atomic_leaves_no_temporary_file_and_keeps_the_old_file_on_failure(tmp_path):
    path = tmp_path / "r.json"
    write_atomic(path, "old")
    with pytest.raises(ZeroDivisionError):
        from tdebug.runtime.files import atomic_file

        with atomic_file(path) as f:
            f.write(b"half")
            raise ZeroDivisionError
    assert path.read_text() == "old" and os.listdir(tmp_path) == ["r.json"]


# -- viz --out --------------------------------------------------------------------------------------

def test_viz_never_writes_into_a_folder_of_the_users_files(tmp_path):
    mine = {"viz.html": b"my page", "launch1_gelu_kernel_out_ptr.png": b"my png", "notes.txt": b"x"}
    for name, data in mine.items():
        (tmp_path / name).write_bytes(data)
    folder, note = outdir.choose(tmp_path)
    assert folder == tmp_path / "tdebug-viz" and "did not write" in note
    outdir.prepare(folder, ["viz.html", "launch1_gelu_kernel_out_ptr.png"])
    for name in ("viz.html", "launch1_gelu_kernel_out_ptr.png"):
        (folder / name).write_bytes(b"tdebug's")
    outdir.record(folder, [folder / "viz.html", folder / "launch1_gelu_kernel_out_ptr.png"])
    assert {n: (tmp_path / n).read_bytes() for n in mine} == mine
    # The next run reuses tdebug's own subfolder and removes only what it recorded writing there.
    assert outdir.choose(tmp_path)[0] == folder
    outdir.prepare(folder, ["viz.html"])
    assert not (folder / "launch1_gelu_kernel_out_ptr.png").exists()
    assert {n: (tmp_path / n).read_bytes() for n in mine} == mine


def test_viz_treats_a_file_the_user_changed_or_added_as_theirs(tmp_path):
    folder = tmp_path / "out"
    outdir.prepare(folder, ["viz.html"])
    (folder / "viz.html").write_text("tdebug's")
    outdir.record(folder, [folder / "viz.html"])
    assert outdir.choose(folder) == (folder, "")
    (folder / "viz.html").write_text("edited by the user")
    assert outdir.choose(folder)[0] == folder / "tdebug-viz"
    (folder / "viz.html").write_text("tdebug's")
    assert outdir.choose(folder) == (folder, "")
    (folder / "launch9_mine.png").write_bytes(b"user's")
    assert outdir.choose(folder)[0] == folder / "tdebug-viz"


@pytest.mark.slow  # a traced launch and drawing (the folder logic itself is tested above)
def test_viz_cli_into_a_users_folder_keeps_their_png_and_page(tmp_path):
    (tmp_path / "viz.html").write_text("my page")
    (tmp_path / "launch1_add_nomask_kernel_out_ptr.png").write_bytes(b"my png")
    r = invoke("viz", str(ROOT / "tests" / "cpu" / "data" / "viz_add_nomask.py"), "--out", str(tmp_path))
    assert r.exit_code == 1, r.output  # it draws out-of-bounds stores: PROBLEM, exit 1
    assert "writing into" in r.stderr
    assert (tmp_path / "viz.html").read_text() == "my page"
    assert (tmp_path / "launch1_add_nomask_kernel_out_ptr.png").read_bytes() == b"my png"
    assert (tmp_path / "tdebug-viz" / "viz.html").is_file()
    recorded = json.loads((tmp_path / "tdebug-viz" / ".tdebug-viz").read_text())["files"]
    assert "viz.html" in recorded and all(recorded.values())


# -- the workspace -----------------------------------------------------------------------------------

@pytest.fixture
def catalogue_guard():
    """Puts bug 04 back should the code under test break it (as it once did: renamed to a backup)."""
    before = {p: p.read_bytes() for p in (ROOT / "bugs").glob("04_*.py")}
    yield before
    for p in (ROOT / "bugs").glob("04_*.py.bak-*"):
        p.unlink()
    for p, data in before.items():
        if not p.is_file() or p.read_bytes() != data:
            p.write_bytes(data)


@pytest.mark.parametrize("where", ["bugs", "kernels", "bugs/sub"])
def test_bugs_refuses_a_workspace_in_the_catalogue(where, catalogue_guard):
    r = invoke("bugs", "--workspace", str(ROOT / where), "reset", "4")
    one_line_exit_2(r, "in the catalogue")
    assert {p: p.read_bytes() for p in (ROOT / "bugs").glob("04_*.py")} == catalogue_guard
    assert not (ROOT / "bugs" / "sub").exists()


def _reset(workspace: str) -> int:
    return CliRunner().invoke(cli, ["bugs", "--workspace", workspace, "reset", "4"]).exit_code


def test_concurrent_resets_never_lose_the_users_edit(tmp_path, monkeypatch):
    bugs = load_bugs(ROOT)
    monkeypatch.setattr("tdebug.cli.bugs.load_bugs", lambda: bugs)  # parsed once, not 160 times (0.2 s each)
    bug = next(b for b in bugs if b.id == 4)
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(8) as pool:
        for round_ in range(20):
            ws = tmp_path / f"ws{round_}"
            assert _reset(str(ws)) == 0
            edit = f"# my fix, round {round_}\n"
            copy = ws / bug.name
            copy.write_text(edit + copy.read_text())
            codes = pool.map(_reset, [str(ws)] * 8)
            assert codes == [0] * 8
            texts = [p.read_text() for p in ws.glob(bug.name + "*")]
            assert sum(t.startswith(edit) for t in texts) >= 1, f"round {round_}: the edit is in no file"
            backups = list(ws.glob(bug.name + ".bak-*"))
            assert len(backups) == 8  # one per reset, none overwritten
            assert copy.read_bytes() == bug.path.read_bytes()
            assert not list(ws.glob(".*.tmp"))
