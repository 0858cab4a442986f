"""A script's outcome in tdebug's terms: its failure is exit 1 with its own code, exception and line, never
passed through; nothing launched is "nothing checked" (exit 2), not clean; stdin reaches it; quitting the
debugger ends the run as asked."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tdebug.cli import cli

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tests" / "cpu" / "data" / "script_outcomes.py"


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args))


def tdebug(*args: str, stdin: str = "") -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "tdebug", *args], cwd=ROOT, input=stdin, capture_output=True,
                          text=True, env=env, timeout=240)


@pytest.mark.parametrize("mode, words", [
    ("exit3", ["script_outcomes.py:34", "the script exited with code 3", "failed (exit code 3)"]),
    ("os_exit", ["exited with code 9 before tdebug could read its results", "failed (exit code 9)"]),
    # The script's own KeyboardInterrupt is its failure, never a crash of a launch (issue 29)
    ("keyboard_interrupt", ["script_outcomes.py:44", "the script raised KeyboardInterrupt", "failed (exit code 1)"]),
    ("raise_sigint", ["script_outcomes.py:47", "the script raised KeyboardInterrupt", "failed (exit code 1)"]),
])
def test_a_scripts_own_exit_code_is_its_failure_not_tdebugs(mode, words):
    # The script inherits SIGINT's disposition, as under plain python: run from a shell's background job (SIGINT
    # ignored there), its raise_signal(SIGINT) would do nothing. Not ignored here, wherever the suite runs.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        r = invoke("run", str(SCRIPT), "--", mode)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert r.exit_code == 1, r.output
    assert all(w in r.output for w in words), r.output
    assert "Traceback" not in r.output


def test_a_script_that_raises_at_import_reports_its_exception_and_line(tmp_path):
    script = tmp_path / "setup_fails.py"
    script.write_text("import math\n\nraise ValueError(f'bad config: {math.pi:.2f}')\n")
    r = invoke("run", str(script))
    assert r.exit_code == 1, r.output
    assert "setup_fails.py:3" in r.output and "ValueError: bad config: 3.14" in r.output
    assert "no SPEC" not in r.output + r.stderr


def test_a_crash_before_any_launch_does_not_blame_a_launch():
    r = invoke("run", str(SCRIPT), "--", "segv_before_launch")
    assert r.exit_code == 1, r.output
    assert "died (SIGSEGV) before it launched any Triton kernel" in r.output
    assert "out-of-bounds" not in r.output and "launch crashed" not in r.output


@pytest.mark.parametrize("command", ["run", "sanitize"])
def test_a_script_that_launches_no_kernel_checked_nothing(tmp_path, command):
    script = tmp_path / "no_kernel.py"
    script.write_text("import torch\nprint(torch.ones(3).sum())\n")
    r = invoke(command, str(script))
    assert r.exit_code == 2, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "launched no Triton kernel: nothing was" in lines[0], r.stderr
    assert ": clean" not in r.output


def test_standard_input_reaches_the_script():
    p = tdebug("run", str(SCRIPT), "--", "echo_stdin", stdin="hello from the pipe\n")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "read: hello from the pipe" in p.stdout


@pytest.mark.parametrize("keys", ["q\n", pytest.param("", marks=pytest.mark.slow)], ids=["q", "end-of-input"])
def test_quitting_the_debugger_ends_the_run_as_asked(keys):
    p = tdebug("run", "kernels/add.py", "--shape", "300", "--break", "--pid", "1", stdin=keys)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    assert "quit the debugger" in out
    assert "BdbQuit" not in out and "ERROR" not in out
