"""tdebug never loses a user's file: outputs checked before any work, viz never replaces what it did not
write, the workspace is never the catalogue, concurrent resets keep the user's edit."""

from __future__ import annotations

import json
import multiprocessing
import os
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from tdebug.cli import cli
from tdebug.exercises.workspace import load_bugs
from tdebug.runtime.files import MANIFEST, OutputError, check_output, write_atomic, write_output
from tdebug.viz import outdir

pytest_plugins = ["pytester"]

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


def test_an_output_path_is_refused_before_the_device_is_asked_for(tmp_path):
    """`sanitize --device cuda` on a machine without a GPU is exit 3, but a --json that would overwrite the
    target is the user's error and is said first (exit 2), whatever the machine (found by test_cli_fuzz)."""
    target = tmp_path / "add.py"
    target.write_bytes(ADD.read_bytes())
    r = invoke("sanitize", str(target), "--device", "cuda", "--json", str(target))
    one_line_exit_2(r, "--json", "an input")
    assert target.read_bytes() == ADD.read_bytes()


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
    from tdebug.cli.common import output_file

    ours = tmp_path / "r.json"
    write_output(ours, '{\n "tool": "tdebug check",\n "cases": []\n}', "--json")  # a previous run's: replaced
    assert output_file(str(ours), "--json", [ADD]) == ours
    lookalike = tmp_path / "l.json"  # begins as tdebug's reports do, but tdebug did not write it: refused
    lookalike.write_text('{\n "tool": "tdebug check",\n "cases": []\n}')
    with pytest.raises(click.UsageError, match="tdebug did not write it"):
        output_file(str(lookalike), "--json", [ADD])


def test_write_atomic_leaves_no_temporary_file_and_keeps_the_old_file_on_failure(tmp_path):
    path = tmp_path / "r.json"
    write_atomic(path, "old")
    with pytest.raises(ZeroDivisionError):
        from tdebug.runtime.files import atomic_file

        with atomic_file(path) as f:
            f.write(b"half")
            raise ZeroDivisionError
    assert path.read_text() == "old" and os.listdir(tmp_path) == ["r.json"]


# -- the one safe writer (runtime.files.write_output) ----------------------------------------------------

def test_the_writer_never_writes_through_a_link_into_a_users_file(tmp_path):
    mine = tmp_path / "notes.txt"
    mine.write_text("my notes")
    link = tmp_path / "report.json"
    link.symlink_to(mine)
    with pytest.raises(OutputError, match="link to .*tdebug did not write"):
        write_output(link, "{}", "--json")
    assert mine.read_text() == "my notes" and link.is_symlink()
    dangling = tmp_path / "gone.json"
    dangling.symlink_to(tmp_path / "nowhere" / "x.json")
    with pytest.raises(OutputError, match="link to nothing"):
        write_output(dangling, "{}", "--json")
    assert not (tmp_path / "nowhere").exists()
    # A link to a file tdebug wrote: that file is replaced, the link kept.
    ours = tmp_path / "ours.json"
    write_output(ours, "one", "--json")
    (tmp_path / "to_ours.json").symlink_to(ours)
    write_output(tmp_path / "to_ours.json", "two", "--json")
    assert ours.read_text() == "two" and (tmp_path / "to_ours.json").is_symlink()


def test_the_writer_judges_ownership_by_its_record_not_the_first_bytes(tmp_path):
    notes = tmp_path / "notes.md"
    notes.write_text("# tdebug: my own notes on the matrix\n")
    with pytest.raises(OutputError, match="tdebug did not write it"):
        write_output(notes, "# tdebug: the table", "--markdown")
    assert notes.read_text() == "# tdebug: my own notes on the matrix\n"
    out = tmp_path / "matrix.md"
    write_output(out, "first", "--markdown")
    write_output(out, "second", "--markdown")  # its own, unchanged: replaced
    assert out.read_text() == "second"
    out.write_text("second, edited by the person")  # changed since: theirs now
    with pytest.raises(OutputError, match="tdebug did not write it"):
        write_output(out, "third", "--markdown")
    assert out.read_text() == "second, edited by the person"
    assert sorted(os.listdir(tmp_path)) == sorted([MANIFEST, "matrix.md", "notes.md"])  # no temporary file left


def test_the_writer_refuses_a_missing_folder_an_input_and_a_manifest_not_its_own(tmp_path):
    with pytest.raises(OutputError, match="no folder .*make it first"):
        write_output(tmp_path / "missing" / "r.json", "{}", "--json")
    assert not (tmp_path / "missing").exists()
    source = tmp_path / "test_x.py"
    source.write_text("def test_x():\n    pass\n")
    with pytest.raises(OutputError, match="an input"):
        check_output(source, "--tdebug-json", [source])
    other = tmp_path / "other"
    other.mkdir()
    (other / MANIFEST).write_text("the user's own file of this name")
    write_output(other / "r.json", "{}", "--json")  # written, but not recorded: the user's file stays
    assert (other / MANIFEST).read_text() == "the user's own file of this name"
    with pytest.raises(OutputError):
        write_output(other / "r.json", "{}", "--json")  # unrecorded: refused, the safe way round


def test_the_writer_removes_its_temporary_file_on_any_exception(tmp_path, monkeypatch):
    import tdebug.runtime.files as files

    def interrupted(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(files.os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_output(tmp_path / "r.json", "{}", "--json")
    assert os.listdir(tmp_path) == []


def test_cli_json_onto_a_link_to_a_users_file_is_refused_before_any_work(tmp_path):
    mine = tmp_path / "mine.json"
    mine.write_text('{"my": "data"}')
    link = tmp_path / "link.json"
    link.symlink_to(mine)
    r = invoke("check", str(ADD), "--quick", "--json", str(link))
    one_line_exit_2(r, "--json", "link to")
    assert mine.read_text() == '{"my": "data"}' and link.is_symlink()
    r = invoke("check", str(ADD), "--quick", "--json", str(tmp_path / "no" / "r.json"))
    one_line_exit_2(r, "--json", "make it first")


def test_bugs_matrix_writes_no_markdown_unless_asked(tmp_path, monkeypatch):
    """A full `bugs matrix` never writes into the tool's own docs/ by default; --markdown onto a user's
    notes that begin `# tdebug:` is refused before any cell runs."""
    notes = tmp_path / "notes.md"
    notes.write_text("# tdebug: my notes\n")
    r = invoke("bugs", "matrix", "--only", "4", "--detector", "check", "--markdown", str(notes))
    one_line_exit_2(r, "--markdown", "tdebug did not write it")
    assert notes.read_text() == "# tdebug: my notes\n"
    from tdebug.cli import bugs

    option = next(p for p in bugs.matrix.params if p.name == "markdown")
    assert option.default is None and "docs/" not in (option.help or "")


def test_pytest_tdebug_json_is_refused_over_the_test_file_and_through_links(pytester):
    test_file = pytester.makepyfile(test_one="def test_one():\n    assert True\n")
    before = test_file.read_text()
    result = pytester.runpytest_subprocess("--tdebug", "--tdebug-json", str(test_file), str(test_file))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert test_file.read_text() == before
    result.stderr.fnmatch_lines(["*--tdebug-json*an input*"])
    mine = pytester.path / "mine.json"
    mine.write_text("mine")
    (pytester.path / "link.json").symlink_to(mine)
    result = pytester.runpytest_subprocess("--tdebug", "--tdebug-json", "link.json", str(test_file))
    assert result.ret == pytest.ExitCode.USAGE_ERROR and mine.read_text() == "mine"
    result = pytester.runpytest_subprocess("--tdebug", "--tdebug-json", "r.json", str(test_file))
    assert result.ret == 0 and '"tests"' in (pytester.path / "r.json").read_text()
    result = pytester.runpytest_subprocess("--tdebug", "--tdebug-json", "r.json", str(test_file))
    assert result.ret == 0  # its own file from the last run: replaced


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


def test_viz_after_a_run_cut_short_never_replaces_a_file_it_cannot_prove_its_own(tmp_path):
    """Ctrl-C between writing the pictures and recording their digests: the manifest names them with no
    digest; the person edits one; the next run must not replace it (it draws into a fresh subfolder)."""
    folder = tmp_path / "out"
    outdir.prepare(folder, ["viz.html", "launch1.png"])
    (folder / "launch1.png").write_bytes(b"drawn, then edited by the person")  # never recorded: cut short
    chosen, note = outdir.choose(folder)
    assert chosen == folder / "tdebug-viz" and "did not write" in note
    outdir.prepare(chosen, ["launch1.png"])
    assert (folder / "launch1.png").read_bytes() == b"drawn, then edited by the person"


def test_viz_cut_short_leaves_no_temporary_file_in_out(tmp_path, monkeypatch):
    """SIGTERM while drawing: a worker's .NAME.XXXXXX.tmp is removed; the user's own files stay."""
    from tdebug.cli import viz as viz_cli
    from tdebug.viz import draw
    from tdebug.viz.trace_parent import TraceResult

    folder = tmp_path / "out"

    def killed_while_drawing(launches, out_dir):
        (out_dir / ".viz.html.a1b2c3.tmp").write_text("half a page")  # a worker's, ended by SIGTERM
        (out_dir / ".notes.txt.keep.tmp").write_text("the user's")  # not a name viz writes: left alone
        raise KeyboardInterrupt

    monkeypatch.setattr(draw, "draw_all", killed_while_drawing)
    with pytest.raises(KeyboardInterrupt):
        viz_cli._render(TraceResult(), "t.py", folder)
    assert sorted(p.name for p in folder.iterdir()) == [".notes.txt.keep.tmp", outdir.MANIFEST]


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


def _write_many(args: tuple[str, int]) -> None:
    folder, worker = args
    for i in range(10):
        write_output(Path(folder) / f"w{worker}_{i}.json", "{}", "--json")


def test_concurrent_writers_in_one_folder_keep_every_record(tmp_path):
    """Four processes writing outputs into one folder at once: every file is recorded as tdebug's."""
    with multiprocessing.get_context("fork").Pool(4) as pool:
        pool.map(_write_many, [(str(tmp_path), w) for w in range(4)])
    for w in range(4):
        for i in range(10):
            check_output(tmp_path / f"w{w}_{i}.json", "--json")  # replaceable: recorded, unchanged
