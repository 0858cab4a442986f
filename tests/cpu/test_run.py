"""`tdebug run` through click's CliRunner and, for the debugger, a real subprocess driven through stdin."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tdebug.cli import cli

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "tests" / "cpu" / "data" / "sanitize_scenarios.py"


def invoke(*args):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_catalogue_kernel_passes_under_the_interpreter():
    r = invoke("run", str(ROOT / "kernels" / "add.py"), "--shape", "1000", "--seed", "3")
    assert r.exit_code == 0, r.output
    assert "PASS  1000 fp32 contiguous" in r.output
    assert "seed 3" in r.output


def test_autotuned_kernel_runs_on_cpu_and_says_which_config():
    r = invoke("run", str(ROOT / "kernels" / "matmul.py"), "--shape", "33x17x9", "--config", "7")
    assert r.exit_code == 0, r.output
    assert "config#7 [config 7: BLOCK_M=" in r.output
    r = invoke("run", str(ROOT / "kernels" / "matmul.py"), "--shape", "33x17")
    assert r.exit_code == 0 and "config 0:" in r.output and "33x17x65" in r.output


def test_device_assert_is_live_and_fails_the_run():
    r = invoke("run", str(SCENARIOS), "--", "assert")
    assert r.exit_code == 1
    assert "device_assert failed: x too big" in r.output
    assert "sanitize_scenarios.py:" in r.output and "program (4)" in r.output


def test_crash_is_reported_with_the_next_command():
    # A store to unmapped memory through an address made from an integer (no tensor behind it, so nothing to
    # check it against): a deterministic SIGSEGV.
    r = invoke("run", str(SCENARIOS), "--timeout", "60", "--", "wild_address")
    assert r.exit_code == 1
    assert "CRASH" in r.output and "SIGSEGV" in r.output
    assert "next: tdebug sanitize" in r.output and "-- wild_address" in r.output
    assert "Traceback" not in r.output


# transpose_unmasked: the serial engine's first out-of-bounds access is program (0, 1, 0)'s store at line 115; the
# batched engine stopped at a later program's load (line 114) until a kernel error in a batch was run again serially.
@pytest.mark.parametrize("scenario, line", [("transpose_unmasked", 115), ("wild_store", 121)])
def test_access_outside_its_tensor_stops_before_it_touches_memory(scenario, line):
    # An unmasked ragged tile (under plain TRITON_INTERPRET=1 it corrupts the heap: a crash or a hang later) and
    # a store terabytes past its tensor (a SIGSEGV there) stop at their line, the process's memory untouched.
    r = invoke("run", str(SCENARIOS), "--timeout", "60", "--", scenario)
    assert r.exit_code == 1
    assert "OutOfBounds" in r.output and f"sanitize_scenarios.py:{line}" in r.output
    assert "outside the tensor the pointer points into" in r.output
    assert "CRASH" not in r.output and "Traceback" not in r.output


def test_hang_is_reported():
    r = invoke("run", str(SCENARIOS), "--timeout", "3", "--", "hang")
    assert r.exit_code == 1
    assert "HANG" in r.output and "no result after 3 s" in r.output


@pytest.mark.parametrize("args, message", [
    (["run", "no/such/file.py"], "no such file"),
    (["run", "kernels/add.py", "--shape", "129x"], "bad shape"),
    (["run", "kernels/add.py", "--shape", "0x5"], "must be positive"),
    (["run", "kernels/add.py", "--shape", "-3"], "must be positive"),
    (["run", "kernels/add.py", "--shape", "abc"], "not an integer"),
    (["run", "kernels/add.py", "--mode", "warp"], "'warp' is not one of"),
    (["run", "kernels/add.py", "--break", "3"], "outside every kernel"),
    (["run", "kernels/add.py", "--dtype", "int7"], "'int7' is not one of"),
    (["run", "kernels/add.py", "--pid", "x"], "bad --pid"),
    (["run", "kernels/matmul.py", "--shape", "5"], "matmul takes a shape"),
    (["run", "pyproject.toml"], "not a Python file"),
])
def test_bad_input_gives_one_line_and_exit_2(args, message):
    proc = subprocess.run([sys.executable, "-m", "tdebug", *args], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert message in lines[0]
    assert "Traceback" not in proc.stderr + proc.stdout


def test_a_file_with_no_spec_and_nothing_to_run(tmp_path):
    f = tmp_path / "lib.py"
    f.write_text("def helper():\n    return 1\n")
    proc = subprocess.run([sys.executable, "-m", "tdebug", "run", str(f)], capture_output=True, text=True)
    assert proc.returncode == 2 and "no SPEC" in proc.stderr


def test_breakpoint_stops_at_the_line_in_the_requested_program_only():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    commands = "p pid\np offsets.handle.data[:3]\nc\n"
    proc = subprocess.run(
        [sys.executable, "-m", "tdebug", "run", "kernels/add.py", "--shape", "1000", "--break", "22",
         "--pid", "2"], cwd=ROOT, input=commands, capture_output=True, text=True, env=env, timeout=120)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "breakpoint at add.py:22 (add_kernel) in program 2" in out
    assert out.count("add_kernel()") == 1  # stopped once: program 2 only, out of 4
    assert "array([2]" in out  # pid
    assert "array([512, 513, 514])" in out  # offsets of program 2, BLOCK_SIZE=256
    assert "PASS" in out


def test_break_with_no_line_stops_at_the_kernels_first_line():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, "-m", "tdebug", "run", "kernels/add.py", "--shape", "300", "--break", "--pid", "1"],
        cwd=ROOT, input="n\np pid\nc\n", capture_output=True, text=True, env=env, timeout=120)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "breakpoint at add.py:19 (add_kernel)" in out
    assert "array([1]" in out
