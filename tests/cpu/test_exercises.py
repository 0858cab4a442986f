"""The exercise flow: the workspace (start, hint, reset, state) and `tdebug bugs check` end to end: an
unedited copy fails with the right finding; the copy with the fixed kernel's diff applied passes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tdebug.cli import cli
from tdebug.exercises.judge import check_exercise
from tdebug.exercises.workspace import ExerciseError, Workspace, apply_fix, find_bug, load_bugs

ROOT = Path(__file__).resolve().parents[2]
BUGS = load_bugs(ROOT)


def bug(ident: str):
    return find_bug(ident, BUGS)


@pytest.fixture
def ws(tmp_path, monkeypatch) -> Workspace:
    monkeypatch.setenv("TDEBUG_WORKSPACE", str(tmp_path / "ws"))
    monkeypatch.chdir(ROOT)
    return Workspace()


def run_cli(*args: str):
    return CliRunner().invoke(cli, ["bugs", *args], catch_exceptions=False)


def fix_copy(ws: Workspace, b) -> Path:
    """Edit the fix into the workspace copy: the bug -> fixed kernel diff, as `tdebug bugs solution` shows it."""
    path = ws.copy_path(b)
    path.write_text(apply_fix(path.read_text(), b.path.read_text(), b.fixes.read_text()))
    return path


# -- the workspace -----------------------------------------------------------------------------------------

def test_start_copies_once_and_never_overwrites(ws):
    b = bug("5")
    path, created = ws.start(b)
    assert created and path == ws.path / b.name and path.read_text() == b.path.read_text()
    path.write_text(path.read_text() + "# my edit\n")
    again, created = ws.start(b)
    assert again == path and not created and path.read_text().endswith("# my edit\n")
    state = json.loads(ws.state_path.read_text())
    assert state["last_started"] == str(path) and state["bugs"]["05"]["status"] == "started"


def test_hints_come_one_at_a_time_and_are_remembered(ws):
    b = bug("7")
    seen = [ws.next_hint(b) for _ in range(len(b.hints) + 1)]
    assert [n for n, _, _ in seen] == [*range(1, len(b.hints) + 1), len(b.hints)]
    assert [t for _, t, _ in seen[:-1]] == list(b.hints)
    assert seen[-1][2] and not seen[0][2]
    assert Workspace(ws.path).hints_shown(b) == len(b.hints)


def test_reset_keeps_the_users_version(ws):
    b = bug("7")
    path, _ = ws.start(b)
    path.write_text("my version\n")
    restored, backup = ws.reset(b)
    assert restored.read_text() == b.path.read_text()
    assert backup is not None and backup.read_text() == "my version\n" and backup.name.startswith(b.name + ".bak-")


def test_check_needs_a_copy_and_unknown_ids_are_usage_errors(ws):
    with pytest.raises(ExerciseError, match="tdebug bugs start 05"):
        ws.require_copy(bug("5"))
    for args in (["show", "99"], ["hint", "nope"], ["start", "0"], ["check", "5"], ["solution", "77"]):
        result = run_cli(*args)
        assert result.exit_code == 2, (args, result.output)
        assert result.output.count("\n") == 1 and result.output.startswith("tdebug: error: ")
        assert "Traceback" not in result.output


def test_cli_list_show_hint_start_solution_reset(ws):
    out = run_cli("list")
    assert out.exit_code == 0
    assert "05" in out.output and "Store mask" in out.output and "not started" in out.output
    out = run_cli("show", "5")
    assert out.exit_code == 0 and "What you saw" in out.output
    assert "tdebug sanitize bugs/05_add_store_mask.py --shape 1000" in out.output
    out = run_cli("hint", "05")
    assert out.exit_code == 0 and "Hint 1/3" in out.output
    out = run_cli("start", "05")
    assert out.exit_code == 0 and "Copied" in out.output and (ws.path / bug("5").name).is_file()
    out = run_cli("start", "05")
    assert "already exists" in out.output
    out = run_cli("list")
    assert "started" in out.output
    out = run_cli("solution", "05")
    assert out.exit_code == 0
    assert "-    tl.store(out_ptr + offsets * stride_out, x + y)" in out.output
    assert "+    tl.store(out_ptr + offsets * stride_out, x + y, mask=mask)" in out.output
    out = run_cli("reset", "05")
    assert out.exit_code == 0 and ".bak-" in out.output


# -- bugs check, end to end --------------------------------------------------------------------------------

def test_unedited_copy_fails_with_the_bugs_finding_and_the_fix_passes(ws):
    b = bug("5")
    ws.start(b)
    out = run_cli("check", "05", "--quick", "--seed", "1")
    assert out.exit_code == 1 and "FAIL: bug 05 is not fixed" in out.output
    # The unmasked store crashes the bare interpreter or is reported as out of bounds.
    assert "FAIL the bug's case" in out.output and ("crash" in out.output or "bounds" in out.output)
    fix_copy(ws, b)
    out = run_cli("check", "05", "--quick", "--seed", "1")
    assert out.exit_code == 0, out.output
    assert "PASS: bug 05 is fixed." in out.output
    assert ws.status(b) == "passed"


def test_deleting_the_kernel_body_or_calling_torch_does_not_pass(ws):
    b = bug("5")
    path, _ = ws.start(b)
    text = path.read_text()
    body = ("    x = tl.load(x_ptr + offsets * stride_x, mask=mask)\n"
            "    y = tl.load(y_ptr + offsets * stride_y, mask=mask)\n"
            "    tl.store(out_ptr + offsets * stride_out, x + y)\n")
    assert body in text
    path.write_text(text.replace(body, "    pass\n"))
    result = check_exercise(b, path, quick=True, seed=3)
    assert result.status == "fail" and "unwritten" in "\n".join(result.steps[0].details)
    launch = "    add_kernel[grid]("
    assert launch in text
    path.write_text(text.replace(launch, "    return x + y\n    add_kernel[grid]("))
    result = check_exercise(b, path, quick=True, seed=3)
    assert result.status == "fail" and "no-kernel" in "\n".join(result.steps[0].details)


def test_editing_the_reference_in_the_copy_does_not_help(ws):
    b = bug("7")
    path, _ = ws.start(b)
    path.write_text(path.read_text().replace("    return a @ b\n", "    return matmul(a, b)\n"))
    result = check_exercise(b, path, quick=True, seed=2)
    assert result.status == "fail" and result.steps[0].name == "the bug's case"


def test_story_inputs_exercise_needs_the_assert(ws):
    b = bug("11")
    path, _ = ws.start(b)
    result = check_exercise(b, path, quick=True, seed=4)
    assert result.status == "fail" and [s.name for s in result.steps] == ["the bug's case", "story inputs"]
    assert "bounds" in result.steps[-1].summary + "\n".join(result.steps[-1].details)
    fix_copy(ws, b)
    result = check_exercise(b, path, quick=True, seed=4)
    assert result.status == "pass", [(s.name, s.summary) for s in result.steps]
    assert "token id out of range" in result.steps[1].summary


def test_tolerance_trap_is_fixed_in_user_check_not_in_the_kernel(ws):
    b = bug("13")
    path, _ = ws.start(b)
    result = check_exercise(b, path, quick=True, seed=5)
    assert result.status == "fail"
    assert [(s.name, s.ok) for s in result.steps] == [("the bug's case", True), ("user_check", False)]
    assert "rejects the correct kernel's output" in result.steps[-1].summary
    # A check that accepts anything is no fix.
    strict = "    return float((out.double() - ref.double()).abs().max()) <= 0.02\n"
    assert strict in path.read_text()
    path.write_text(path.read_text().replace(strict, "    return True\n"))
    result = check_exercise(b, path, quick=True, seed=5)
    assert result.status == "fail" and "accepts a wrong output" in result.steps[-1].summary
    ws.reset(b)
    fix_copy(ws, b)
    result = check_exercise(b, path, quick=True, seed=5)
    assert result.status == "pass", [(s.name, s.summary) for s in result.steps]


@pytest.mark.slow
@pytest.mark.parametrize("b", [x for x in BUGS if not x.gpu_only], ids=[x.key for x in BUGS if not x.gpu_only])
def test_every_exercise_end_to_end(ws, b):
    path, _ = ws.start(b)
    before = check_exercise(b, path, quick=True, seed=11)
    assert before.status == "fail", [(s.name, s.summary) for s in before.steps]
    # It fails where its expected detectors look.
    failing = before.steps[-1]
    where = {"the bug's case"} | ({"reference check (quick)"} if "check" in b.caught_by else set())
    where |= {"autotune lint"} if "lint" in b.caught_by else set()
    where |= {"sanitizer"} if b.has_story_inputs is False and any(d.startswith("sanitize:") for d in b.caught_by) \
        else set()
    where |= {"story inputs"} if b.has_story_inputs else set()
    where |= {"user_check"} if b.expects_clean else set()
    assert failing.name in where, (failing.name, failing.summary, where)
    fix_copy(ws, b)
    after = check_exercise(b, path, quick=True, seed=11)
    assert after.status == "pass", [(s.name, s.summary, s.details) for s in after.steps]


def test_gpu_only_bug_is_unverified_on_a_cpu(ws):
    b = next(x for x in BUGS if x.gpu_only)
    path, _ = ws.start(b)
    result = check_exercise(b, path, quick=True, seed=6, gpu=False)
    assert result.status == "unverified" and "GPU" in result.reason
