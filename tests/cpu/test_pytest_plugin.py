"""pytest --tdebug on a small Triton test suite (tests/cpu/data/plugin_suite.py), run by pytester in a
subprocess as a user runs it: findings fail their test, a crash or hang only its own, every autotune
config, the markers, the same results with pytest-xdist, and the catalogue's cases as tests."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

# Imported here, at collection: they import torch, which must not be first imported inside a pytester test
# (pytester takes its imports out of sys.modules afterwards, and torch's C extension cannot be imported twice).
from tdebug.pytest_plugin.forked import run_forked
from tdebug.pytest_plugin.sanitized_test import crash_text

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[2]
SUITE = Path(__file__).parent / "data" / "plugin_suite.py"

# test id -> (outcome, the checks of its findings, crashed)
EXPECTED = {
    "test_suite.py::test_add[1000]": ("passed", [], False),
    "test_suite.py::test_add[1024]": ("passed", [], False),
    "test_suite.py::test_add_unmasked_store": ("failed", ["bounds"], False),  # its own assertion passes
    "test_suite.py::test_wild_store_crashes": ("failed", [], True),
    "test_suite.py::test_after_the_crash": ("passed", [], False),
    "test_suite.py::test_double_every_config": ("failed", ["unwritten"], False),
    "test_suite.py::test_reads_empty_memory": ("failed", ["uninit", "uninit"], False),
    "test_suite.py::test_reads_empty_memory_unchecked": ("passed", [], False),
    "test_suite.py::test_add_unmasked_store_race_only": ("passed", [], False),
    "test_suite.py::TestInUnittestStyle::test_add_unmasked_store": ("failed", ["bounds"], False),
}


def run_suite(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict]:
    pytester.makepyfile(test_suite=SUITE.read_text())
    report = pytester.path / "tdebug.json"
    result = pytester.runpytest_subprocess("--tdebug", "--tdebug-json", str(report), "-p", "no:cacheprovider",
                                           *args, timeout=600)
    return result, json.loads(report.read_text())


def test_findings_fail_their_test_a_crash_only_its_own_and_xdist_gives_the_same(pytester: pytest.Pytester):
    result, report = run_suite(pytester, "-k", "not hangs")
    tests = {t["test"]: t for t in report["tests"]}
    assert {k: (t["outcome"], sorted(f["check"] for f in t["findings"]), bool(t["crash"]))
            for k, t in tests.items()} == EXPECTED
    result.assert_outcomes(passed=5, failed=5, deselected=1)
    out = result.stdout.str()

    # The unmasked store: the report names the line, the tensor, how far past the end, and that it had no mask.
    (bounds,) = tests["test_suite.py::test_add_unmasked_store"]["findings"]
    assert (bounds["kernel"], bounds["tensor"], bounds["count"]) == ("add_kernel", "out_ptr", 24)
    assert bounds["masked"] is False
    assert "tl.store(out_ptr + offs, x + y)  # the bug" in SUITE.read_text().splitlines()[bounds["line"] - 1]
    assert "bounds: store past the end of 'out_ptr'" in out
    assert "'out_ptr' element 1000 (of 1000)" in out

    # The crash: this test fails with the crash report, the next test in the file still runs and passes.
    crash = tests["test_suite.py::test_wild_store_crashes"]["crash"]
    assert "CRASH" in crash and "SIGSEGV" in crash and "kernel wild_store_kernel" in crash
    assert "Fatal Python error: Segmentation fault" in out  # the traceback, under the test's captured stderr

    # Every autotune config: the grid fixed for BLOCK=64 leaves half the output unwritten in config #1 only.
    double = tests["test_suite.py::test_double_every_config"]
    assert double["configs"] == [0, 1]
    assert double["findings"][0]["extra"]["configs"] == ["#1 (BLOCK=32 warps=4 stages=3)"]
    assert "in autotune config pass #1" in out  # the test's own assertion failed there too

    # Where the time went: each test's call, of which its Triton launches (the crashed one reported nothing).
    for name, test in tests.items():
        spent = test["time"]
        assert 0 <= spent["launch_seconds"] <= spent["seconds"], name
        assert (spent["launch_seconds"] > 0) == (test["launches"] > 0 and not test["crash"]), name
    assert report["summary"]["time"]["seconds"] == pytest.approx(sum(t["time"]["seconds"] for t in tests.values()))
    assert "tdebug: the tests' calls took " in out and "of it in Triton launches" in out

    # pytest-xdist: the same outcomes and the same findings, merged into one JSON report.
    result_n2, report_n2 = run_suite(pytester, "-k", "not hangs", "-n", "2")
    result_n2.assert_outcomes(passed=5, failed=5)  # xdist deselects in its workers: not counted here
    untimed = [{k: v for k, v in t.items() if k != "time"} for t in report["tests"]]
    assert [{k: v for k, v in t.items() if k != "time"} for t in report_n2["tests"]] == untimed
    assert {**report_n2["summary"], "time": None} == {**report["summary"], "time": None}


def test_a_hang_fails_its_test_and_one_config_runs_when_asked(pytester: pytest.Pytester):
    result, report = run_suite(pytester, "-k", "hangs or double", "--tdebug-config", "0")
    tests = {t["test"]: t for t in report["tests"]}
    hang = tests["test_suite.py::test_spin_hangs"]
    assert hang["outcome"] == "failed"
    assert "HANG: no result 3 s after the test's first Triton launch" in hang["crash"], hang["crash"]
    assert "kernel spin_kernel" in hang["crash"]
    double = tests["test_suite.py::test_double_every_config"]
    assert (double["outcome"], double["configs"], double["findings"]) == ("passed", [0], [])
    result.assert_outcomes(passed=1, failed=1, deselected=9)


def test_catalogue_cases_are_tests_spread_by_xdist(pytester: pytest.Pytester):
    from tdebug.catalogue.cases import plan_cases
    from tdebug.catalogue.spec import load_target

    kernel, bug = REPO / "kernels" / "add.py", REPO / "bugs" / "05_add_store_mask.py"
    n_cases = len(plan_cases(load_target(kernel).spec, quick=True))
    report = pytester.path / "catalogue.json"
    result = pytester.runpytest_subprocess("--tdebug-catalogue", "quick", str(kernel), str(bug), "-n", "2",
                                           "--tdebug-json", str(report), "-p", "no:cacheprovider", timeout=600)
    tests = json.loads(report.read_text())["tests"]
    good = [t for t in tests if t["test"].startswith("kernels/add.py::add[")]
    bad = [t for t in tests if t["test"].startswith("bugs/05_add_store_mask.py::")]
    assert len(good) == n_cases and all(t["outcome"] == "passed" and not t["findings"] for t in good)
    assert bad and all(t["outcome"] == "failed" for t in bad)
    assert any(f["check"] == "bounds" for t in bad for f in t["findings"])
    result.assert_outcomes(passed=len(good), failed=len(bad))


def test_a_bad_check_name_is_a_usage_error(pytester: pytest.Pytester):
    pytester.makepyfile(test_nothing="def test_nothing():\n    pass\n")
    result = pytester.runpytest_subprocess("--tdebug", "--tdebug-check", "bounds", "--tdebug-check", "speling")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--tdebug-check: unknown check(s) speling; the checks are assert, bounds,*"])


def test_the_plugin_costs_nothing_without_tdebug():
    """pytest imports the plugin in every session of an environment with tdebug: no torch, no Triton."""
    code = ("import sys, tdebug.pytest_plugin.plugin; "
            "print(sorted(m for m in ('torch', 'triton', 'numpy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_a_failing_assert_close_says_which_program_and_line_wrote_the_wrong_elements(pytester: pytest.Pytester):
    suite = Path(__file__).parent / "data" / "plugin_explain_suite.py"
    pytester.makepyfile(test_explain=suite.read_text())
    result = pytester.runpytest_subprocess("--tdebug", "-p", "no:cacheprovider", timeout=300)
    result.assert_outcomes(failed=2)
    out = result.stdout.str()
    first = out[out.index("___ test_scale ___"):out.index("___ test_scale_too_large_to_record ___")]
    # to the summary: under CI=true pytest's short summary repeats every failure's whole message
    capped = out[out.index("___ test_scale_too_large_to_record ___"):out.index("short test summary info")]
    assert "Mismatched elements: 3 / 300" in first  # torch's own message first
    assert "where: scale_kernel, output y_ptr" in first
    store_line = next(i for i, line in enumerate(suite.read_text().splitlines(), 1) if "tl.store(y_ptr" in line)
    assert f":{store_line}" in first and "program 4" in first  # the last block (elements 256-299) stored them
    assert "Mismatched elements: 3 / 300" in capped
    assert ("tdebug.explain: launch 1 (scale_kernel) stored more than 100 lanes, too many to keep a record of each: "
            "no localisation") in capped
    assert "where: scale_kernel" not in capped and "program 4" not in capped


SWALLOWING_TEST = """
import torch
import triton
import triton.language as tl


@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def test_copy_or_not():
    x = torch.randn(100)
    y = torch.empty_like(x)
    try:
        copy_kernel[(2,)](x, y, 100, BLOCK=64)
    except Exception:  # a broad except around the launch: the test passes whatever went wrong there
        pass
"""


def test_an_internal_error_the_test_catches_still_fails_the_test(pytester: pytest.Pytester):
    """tdebug's own error inside its patches (here: its memory checker handed no addresses) is never a silent
    pass, even when the test swallows the exception: the launch was not checked."""
    pytester.makeconftest(
        "from tdebug.sanitize import memory\n"
        "_access = memory.LaunchChecker.access\n"
        "def access(self, kind, ptrs, *rest, **kwargs):\n"
        "    return _access(self, kind, None, *rest, **kwargs)\n"
        "memory.LaunchChecker.access = access\n")
    pytester.makepyfile(test_swallow=SWALLOWING_TEST)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", timeout=300)
    result.assert_outcomes(passed=1)  # without tdebug: the checker is not there, the test passes
    result = pytester.runpytest_subprocess("--tdebug", "-p", "no:cacheprovider", timeout=300)
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "internal error in tdebug" in out and "tdebug/sanitize/memory.py" in out, out


def test_a_child_killed_from_outside_is_told_apart_with_its_peak_memory():
    """SIGKILL that tdebug did not send (the out-of-memory killer's signal): the report says so and how much
    memory the test's process held; other signals keep the crash report."""
    import os
    import signal

    def hog(channel):
        block = bytearray(300 << 20)  # 300 MiB, touched
        block[:: 4096] = b"x" * len(block[:: 4096])
        os.kill(os.getpid(), signal.SIGKILL)

    child = run_forked(hog, timeout=60)
    assert child.crashed and child.exit_code == -signal.SIGKILL
    assert child.peak_rss >= 300 << 20
    text = crash_text(child, 60)
    assert "killed (SIGKILL)" in text and "out-of-memory killer" in text, text
    assert f"{child.peak_rss / 2**30:.1f} GiB resident" in text

    def segfault(channel):
        import faulthandler

        faulthandler.disable()  # pytest's handler would print the child's stack into the run's log: expected here
        os.kill(os.getpid(), signal.SIGSEGV)

    child = run_forked(segfault, timeout=60)
    assert "died (SIGSEGV)" in crash_text(child, 60) and "out-of-memory" not in crash_text(child, 60)


IN_PROCESS_SUITE = """
import os, signal, time
import pytest

@pytest.mark.tdebug(timeout=2)
def test_past_its_timeout():
    time.sleep(60)

@pytest.mark.tdebug(timeout=60)
def test_killed_from_outside():
    os.kill(os.getpid(), signal.SIGKILL)

def test_after_them():
    pass
"""


def test_a_worker_ended_mid_test_in_process_says_whether_the_timeout_or_something_else_ended_it(
        pytester: pytest.Pytester):
    """Tests that run in pytest's own process (on a GPU machine: CUDA initialised there) are timed there, and the
    timer ends the pytest-xdist worker; xdist alone says only 'worker crashed'. The failure and the summary say
    which of the two ended it: tdebug's timeout (and how to raise it) or a kill from outside (the OOM killer)."""
    pytester.makeconftest("import tdebug.pytest_plugin.runner as runner\n"
                          "runner.cuda_initialised = lambda: True  # as on a GPU machine\n")
    pytester.makepyfile(test_in_process=IN_PROCESS_SUITE)
    report = pytester.path / "tdebug.json"
    marks_before = set(Path(tempfile.gettempdir()).glob("tdebug-timer-*"))
    result = pytester.runpytest_subprocess("--tdebug", "--tdebug-json", str(report), "-p", "no:cacheprovider",
                                           "-n", "1", timeout=300)
    result.assert_outcomes(passed=1, failed=2)
    out = result.stdout.str()
    assert "--tdebug-timeout of 2 s ran out" in out and "tdebug ended the worker" in out, out
    assert "before its --tdebug-timeout of 60 s: not tdebug's timer" in out, out
    assert "2 crashed or hung" in out, out
    tests = {t["test"].split("::")[-1]: t for t in json.loads(report.read_text())["tests"]}
    assert "ran out" in tests["test_past_its_timeout"]["crash"]
    assert "out-of-memory killer" in tests["test_killed_from_outside"]["crash"]
    assert tests["test_after_them"]["outcome"] == "passed" and not tests["test_after_them"]["crash"]
    assert set(Path(tempfile.gettempdir()).glob("tdebug-timer-*")) <= marks_before  # the controller's, removed
