"""--repro DIR: a reproducer folder per launch with a finding (from a script under sanitize, a failing check,
a pytest --tdebug test) whose repro.py, copied alone to a fresh folder, gives the same finding under
`tdebug sanitize`; the folder rules (never a user's file replaced) and the size bound."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tdebug.runtime.reproducers import MARKER, ReproError, prepare_root, strip_module

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "cpu" / "data"
SCENARIOS = DATA / "repro_scenarios.py"


def tdebug(*args: str, cwd: Path = ROOT, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tdebug", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600, env={**os.environ, **(env or {})})


def findings(report: Path) -> list[tuple]:
    """(check, kernel, file name, line, tensor, count) of every finding in a sanitize --json report."""
    data = json.loads(report.read_text())
    return sorted((f["check"], f["kernel"], Path(f["file"]).name, f["line"], f["tensor"], f["count"])
                  for t in data["targets"] for c in t["cases"] for f in c["findings"])


def replay_alone(folder: Path, tmp_path: Path) -> tuple[subprocess.CompletedProcess, Path]:
    """The reproducer copied alone into a fresh folder, run from there under tdebug sanitize."""
    fresh = tmp_path / "elsewhere"
    fresh.mkdir()
    shutil.copytree(folder, fresh / folder.name)
    report = fresh / "replay.json"
    done = tdebug("sanitize", str(fresh / folder.name / "repro.py"), "--json", str(report), cwd=fresh)
    return done, report


@pytest.mark.parametrize("scenario", ["bounds", "uninit"])
def test_a_script_finding_replays_alone_with_the_same_finding(scenario, tmp_path):
    out, report = tmp_path / "repro", tmp_path / "first.json"
    done = tdebug("sanitize", str(SCENARIOS), "--repro", str(out), "--json", str(report), "--", scenario)
    assert done.returncode == 1, done.stdout + done.stderr
    first = findings(report)
    (folder,) = [p for p in out.iterdir() if p.is_dir()]
    assert f"tdebug sanitize {folder / 'repro.py'}" in done.stdout
    assert {p.name for p in folder.iterdir()} == {"repro.py", "launch.json", "tensors.pt", "finding.txt",
                                                   "repro_scenarios.py"}
    # The module copy keeps definitions and constants at their lines, not the script's work.
    copy = (folder / "repro_scenarios.py").read_text().splitlines()
    original = SCENARIOS.read_text().splitlines()
    assert len(copy) == len(original) and "SCALE = 2.0" in copy[9]
    assert not any("main(sys.argv[1])" in line for line in copy)
    again, replay = replay_alone(folder, tmp_path)
    assert again.returncode == 1, again.stdout + again.stderr
    assert findings(replay) == first and first
    assert first[0][0] == scenario


def test_a_failing_check_replays_its_wrong_output(tmp_path):
    out = tmp_path / "repro"
    done = tdebug("check", str(DATA / "check_skip_last_block.py"), "--repro", str(out))
    assert done.returncode == 1, done.stdout + done.stderr
    (folder,) = [p for p in out.iterdir() if p.is_dir()]
    assert "never written" in (folder / "finding.txt").read_text()
    again, replay = replay_alone(folder, tmp_path)
    assert again.returncode == 1, again.stdout + again.stderr
    assert "104 of 1000 elements outside tolerance" in again.stdout
    assert ("unwritten", "scale_kernel", "check_skip_last_block.py", 14, "out_ptr", 104) in findings(replay)


def test_pytest_tdebug_repro_replays_a_tests_finding(pytester: pytest.Pytester, tmp_path):
    pytester.makepyfile(test_axpy=SCENARIOS.read_text() + "\n\ndef test_bounds():\n    main('bounds')\n")
    out = pytester.path / "repro"
    result = pytester.runpytest_subprocess("--tdebug", "--tdebug-repro", str(out), "-p", "no:cacheprovider",
                                           timeout=600)
    result.assert_outcomes(failed=1)
    (folder,) = [p for p in out.iterdir() if p.is_dir()]
    assert f"tdebug: repro of test_axpy.py::test_bounds: tdebug sanitize {folder / 'repro.py'}" in result.stdout.str()
    again, replay = replay_alone(folder, tmp_path)
    assert again.returncode == 1, again.stdout + again.stderr
    assert findings(replay) == [("bounds", "axpy_kernel", "test_axpy.py", 18, "y_ptr", 24)]


def test_too_large_a_launch_is_said_not_saved(tmp_path):
    out = tmp_path / "repro"
    done = tdebug("sanitize", str(SCENARIOS), "--repro", str(out), "--", "bounds", env={"TDEBUG_REPRO_MAX_MIB": "0"})
    assert done.returncode == 1
    (folder,) = [p for p in out.iterdir() if p.is_dir()]
    assert {p.name for p in folder.iterdir()} == {"finding.txt"}
    assert "not written: its tensors hold 0.0 MiB, more than a reproducer saves (0 MiB" in done.stdout


def test_the_folder_never_replaces_a_users_file(tmp_path):
    fresh = tmp_path / "new"
    assert prepare_root(fresh) == fresh and (fresh / MARKER).exists()
    assert prepare_root(fresh) == fresh  # tdebug's own: used again
    users = tmp_path / "users"
    users.mkdir()
    (users / "notes.txt").write_text("mine")
    first = prepare_root(users)
    assert first == users / "tdebug-repro" and (users / "notes.txt").read_text() == "mine"
    (users / "tdebug-repro-2").mkdir()  # a folder of the user's with the next name: skipped
    (users / "tdebug-repro-2" / "x").write_text("mine too")
    shutil.rmtree(first)
    (users / "tdebug-repro").mkdir()
    (users / "tdebug-repro" / "y").write_text("mine")
    assert prepare_root(users) == users / "tdebug-repro-3"
    file = tmp_path / "a_file"
    file.write_text("x")
    with pytest.raises(ReproError, match="a file, not a folder"):
        prepare_root(file)


def test_strip_module_keeps_definitions_at_their_lines():
    source = ("import torch\nX = 3\nY = torch.randn(4)\n\n@decorator\ndef f():\n    return X\n\n"
              "print(f())\nif __name__ == '__main__':\n    f()\n")
    stripped = strip_module(source).splitlines()
    assert stripped[:2] == ["import torch", "X = 3"] and stripped[2] == ""
    assert stripped[4:7] == ["@decorator", "def f():", "    return X"]
    assert all(line == "" for line in stripped[8:])
