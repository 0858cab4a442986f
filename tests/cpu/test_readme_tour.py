"""The README's tour, command by command, against the CLI: each command that runs on a CPU without a
workspace or a GPU ends with the exit code the README promises (0 clean, 1 findings), never 2 or 3."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TDEBUG = [str(Path(sys.executable).with_name("tdebug"))]


def tour_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    block = text.split("## A tour", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    commands = []
    for line in block.splitlines():
        for part in line.split("#", 1)[0].split(";"):
            if part.strip().startswith("tdebug "):
                commands.append(part.strip())
    return commands


# The tour's commands this test cannot run here, and why.
SKIPPED = {
    "my_script.py": "a placeholder for the reader's own script",
    "--mode debug": "needs a GPU",
    "bench": "needs a GPU",
    "bugs start": "writes a workspace", "bugs check": "needs a started workspace",
    "bugs solution": "prints the solution (covered by test_bugs.py)", "bugs matrix": "minutes of CPU (test_matrix.py)",
    "check --all": "minutes of CPU (test_check.py)",
}
EXPECTED = {"bugs/04_gelu_missing_masks.py": 1}  # an exercise: its findings are the point
STDIN = {"--break": "c\n" * 40}  # continue past every stop


def test_the_tour_is_what_this_test_runs():
    commands = tour_commands()
    assert any("--break 81 --pid 1" in c for c in commands), commands
    assert len(commands) >= 14, commands


@pytest.mark.slow
@pytest.mark.parametrize("command", tour_commands())
def test_tour_command(command, tmp_path):
    why = next((why for key, why in SKIPPED.items() if key in command), None)
    if why:
        pytest.skip(why)
    if command.strip() == "tdebug sanitize":
        pytest.skip("the whole catalogue: minutes of CPU (test_sanitize.py)")
    if "--engine symbolic" in command:
        pytest.importorskip("triton_viz")
    args = shlex.split(command)[1:]
    args = [str(tmp_path / "results.json") if a == "results.json" else a for a in args]
    if args[0] == "viz":
        args += ["--out", str(tmp_path / "viz")]
    stdin = next((text for key, text in STDIN.items() if key in command), "")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TDEBUG_WORKSPACE": str(tmp_path / "ws")}
    p = subprocess.run(TDEBUG + args, cwd=ROOT, input=stdin, capture_output=True, text=True, env=env, timeout=600)
    out = p.stdout + p.stderr
    expected = next((code for key, code in EXPECTED.items() if key in command), 0)
    if "--engine symbolic" in command:
        expected = p.returncode if p.returncode in (0, 1) else 0  # its false positives are documented
    assert p.returncode == expected, f"{command}: exit {p.returncode}\n{out[-3000:]}"
    assert "Traceback" not in out, out[-3000:]
    if "--break" in command:
        assert re.search(r"breakpoint at \S+:\d+", out) and "never ran" not in out, out[-3000:]
