"""A suite sharded over machines: `pytest --tdebug --tdebug-json` per shard (pytest's own selection), merged by
`tdebug report` into the verdict, table and exit code of the unsharded run; the slowest tests' launches
(--tdebug-durations); bad inputs as one-line usage errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tdebug.cli import cli
from tdebug.runtime.suite import ShardError, junit_address, load_all

pytest_plugins = ["pytester"]

SUITE = Path(__file__).parent / "data" / "plugin_suite.py"


def report(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tdebug", "report", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=120)


def untimed(test: dict) -> dict:
    return {k: v for k, v in test.items() if k != "time"}


def test_three_shards_merged_equal_the_unsharded_run(pytester: pytest.Pytester):
    pytester.makepyfile(test_suite=SUITE.read_text())
    base = ["--tdebug", "-p", "no:cacheprovider", "--tdebug-seed", "7"]

    def run(name: str, *selection: str) -> pytest.RunResult:
        return pytester.runpytest_subprocess(*base, "--tdebug-json", f"{name}.json", "--junitxml", f"{name}.xml",
                                             *selection, timeout=600)

    whole = run("whole", "-k", "not hangs", "--tdebug-durations", "3")
    whole.assert_outcomes(passed=5, failed=5, deselected=1)
    tests = json.loads((pytester.path / "whole.json").read_text())["tests"]
    ids = [t["test"] for t in tests]
    assert len(ids) == 10

    # --tdebug-durations 3: the three tests with the most seconds in launches, most first, with their kernel.
    out = whole.stdout.str()
    rows = out[out.index("tdebug: the 3 slowest by seconds in Triton launches"):].splitlines()[2:5]
    slowest = sorted(tests, key=lambda t: (-t["time"]["launch_seconds"], t["test"]))[:3]
    assert [row.split()[-1] for row in rows] == [t["test"] for t in slowest]
    for row, test in zip(rows, slowest):
        assert float(row.split()[0]) == pytest.approx(test["time"]["launch_seconds"], abs=0.006)
        own = test["time"]["seconds"] - test["time"]["launch_seconds"]  # the rest of the call: the test's own code
        assert float(row.split()[1]) == pytest.approx(own, abs=0.011)
        assert test["time"]["slowest_kernel"]["kernel"] in row
    assert "(7 test(s) with less time in launches not shown" in out
    double = next(t for t in tests if t["test"].endswith("test_double_every_config"))
    assert double["time"]["slowest_kernel"]["launches"] == 2 == double["time"]["launches"]  # both config passes

    # Three shards, each chosen by pytest's own selection: -k expressions, node ids. (Not --deselect: it drops
    # every test whose id starts with the one given, test_add_unmasked_store_race_only with test_add_unmasked_store.)
    run("shard0", "-k", "test_add and not unmasked")
    run("shard1", "-k", "unmasked or double")
    run("shard2", *(f"test_suite.py::{name}" for name in ("test_wild_store_crashes", "test_after_the_crash",
                                                         "test_reads_empty_memory",
                                                         "test_reads_empty_memory_unchecked")))

    merged_whole = report("whole.json", "--junit", "whole.xml", "--json", "merged_whole.json", cwd=pytester.path)
    merged = report(*(f"shard{i}.json" for i in range(3)), *(f"--junit=shard{i}.xml" for i in range(3)),
                    "--json", "merged.json", cwd=pytester.path)
    assert merged_whole.returncode == merged.returncode == 1, merged.stderr  # findings
    a = json.loads((pytester.path / "merged_whole.json").read_text())
    b = json.loads((pytester.path / "merged.json").read_text())
    assert [untimed(t) for t in b["tests"]] == [untimed(t) for t in a["tests"]] == [untimed(t) for t in tests]
    assert b["verdict"] == a["verdict"]
    assert a["verdict"]["summary"] == "2 bounds, 2 uninit, 1 unwritten" and a["verdict"]["failed"] == 5
    assert {**b["summary"], "time": None} == {**a["summary"], "time": None}
    assert b["summary"]["outcomes"] == {"failed": 5, "passed": 5} and b["outside_tdebug"] == []
    assert [s["tests"] for s in b["shards"]] == [2, 4, 4]

    def rows_only(text: str) -> list[list[str]]:  # the table's rows of tests, but their seconds
        return [line.split()[:-2] + line.split()[-1:] for line in text.splitlines() if line.startswith("failed ")]

    assert rows_only(merged.stdout) == rows_only(merged_whole.stdout)
    assert len(rows_only(merged.stdout)) == 5
    assert merged.stdout.splitlines()[-1] == merged_whole.stdout.splitlines()[-1] == (
        "verdict: 2 bounds, 2 uninit, 1 unwritten")
    total = next(line for line in merged.stdout.splitlines() if line.startswith("total:"))
    assert total.startswith("total: 10 test(s) (5 failed, 5 passed), 10 Triton launch(es); 4 with findings "
                            "(bounds 2, uninit 2, unwritten 1), 1 crashed or hung")

    # A shard given twice, or two shards that ran the same test: the shards overlap, a usage error.
    again = report("shard0.json", "shard1.json", "shard0.json", cwd=pytester.path)
    assert again.returncode == 2 and again.stderr.strip().count("\n") == 0
    assert "both report" in again.stderr and "the shards overlap" in again.stderr
    overlap = report("whole.json", "shard1.json", cwd=pytester.path)
    assert overlap.returncode == 2 and "whole.json and shard1.json both report" in overlap.stderr


# -- merging, without running a suite ------------------------------------------------------------------------------


def shard(path: Path, tests: list[dict], *, checks="all", config=None, other=()) -> str:
    path.write_text(json.dumps({"checks": checks, "config": config, "seed": 1, "summary": {}, "tests": tests,
                                "other": list(other)}))
    return str(path)


def record(name: str, outcome: str = "passed", findings=(), crash: str = "", launches: int = 1,
           launch_seconds: float = 0.1) -> dict:
    return {"test": name, "outcome": outcome, "findings": [{"check": c, "message": "m"} for c in findings],
            "crash": crash, "launches": launches, "configs": [0],
            "time": {"seconds": 1.0, "launch_seconds": launch_seconds, "launches": launches,
                     "slowest_kernel": {"kernel": "k", "seconds": launch_seconds, "launches": launches}}}


def junit(path: Path, cases: list[tuple[str, str, str]]) -> str:
    """cases: (classname, name, '' | 'failure' | 'error' | 'skipped')."""
    body = "".join(f'<testcase classname="{c}" name="{n}">' + (f'<{tag} message="why"/>' if tag else "")
                   + "</testcase>" for c, n, tag in cases)
    path.write_text(f'<?xml version="1.0"?><testsuites><testsuite name="pytest">{body}</testsuite></testsuites>')
    return str(path)


def test_verdict_rules_of_merged_shards(tmp_path: Path):
    a = shard(tmp_path / "a.json", [record("t.py::test_a"), record("t.py::test_b", launches=0)])
    b = shard(tmp_path / "b.json", [record("t.py::C::test_c[1-x]")],
              other=[{"test": "t.py::test_skip", "when": "setup", "outcome": "skipped", "message": "gpu only"}])
    clean = load_all([a, b], [])
    assert (clean.verdict().exit_code, clean.verdict().summary()) == (0, "clean")
    assert clean.tests["t.py::test_skip"]["outcome"] == "skipped" and clean.verdict().passed == 2

    bad = shard(tmp_path / "bad.json", [record("u.py::test_oob", "failed", ["bounds", "bounds"]),
                                        record("u.py::test_hang", "failed", crash="tdebug: HANG: no result")])
    found = load_all([a, bad], [])
    assert (found.verdict().exit_code, found.verdict().summary()) == (1, "2 bounds")
    assert {c.label: c.status for c in found.cases()} == {"t.py::test_a": "pass", "t.py::test_b": "pass",
                                                          "u.py::test_oob": "fail", "u.py::test_hang": "hang"}

    internal = shard(tmp_path / "internal.json", [record("v.py::test_x", "failed", ["internal"])])
    assert load_all([a, internal], []).verdict().exit_code == 3  # tdebug could not check a test
    nothing = shard(tmp_path / "nothing.json", [record("w.py::test_cpu_only", launches=0)])
    assert load_all([nothing], []).verdict().exit_code == 2  # no test launched a kernel: nothing checked

    # JUnit: a teardown error on a test the shard recorded as passed, a setup error, a test outside tdebug.
    xml = junit(tmp_path / "a.xml", [("t", "test_a", "error"), ("t", "test_b", ""), ("t", "test_setup", "error")])
    merged = load_all([a], [xml])
    assert merged.tests["t.py::test_a"]["outcome"] == "error" and merged.tests["t::test_setup"]["outcome"] == "error"
    assert merged.verdict().exit_code == 1 and merged.outside == []
    outside = load_all([a], [junit(tmp_path / "o.xml", [("t", "test_a", ""), ("other", "test_plain", "")])])
    assert outside.outside == ["other::test_plain"]
    assert (outside.verdict().exit_code, outside.verdict().summary()) == (3, "no findings, NOT fully checked")


def test_junit_names_a_test_as_pytest_does():
    assert junit_address("tests/cpu/test_x.py::TestA::test_b[1-a/b::c]") == ("tests.cpu.test_x.TestA",
                                                                             "test_b[1-a/b::c]")
    assert junit_address("test_suite.py::test_add") == ("test_suite", "test_add")


def test_bad_inputs_are_one_line_usage_errors(tmp_path: Path):
    good = shard(tmp_path / "good.json", [record("t.py::test_a")])
    (tmp_path / "other.json").write_text(json.dumps({"tool": "tdebug check", "files": []}))
    (tmp_path / "text.json").write_text("not json at all")
    (tmp_path / "broken.xml").write_text("<testsuites><testcase")
    cases = [
        ([str(tmp_path / "missing.json")], "no such file"),
        ([str(tmp_path / "other.json")], "not a tdebug report"),
        ([str(tmp_path / "text.json")], "not a tdebug report (not JSON"),
        ([good, "--junit", str(tmp_path / "broken.xml")], "not JUnit XML"),
        ([good, good], "both report t.py::test_a"),
        ([good, shard(tmp_path / "race.json", [record("t.py::test_b")], checks=["race"])], "different settings"),
        ([good, "--json", good], "--json"),
        ([], "nothing to merge"),
    ]
    for args, words in cases:
        r = CliRunner().invoke(cli, ["report", *args])
        assert r.exit_code == 2, (args, r.output, r.stderr)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("tdebug: error:") and words in lines[0], (args, r.stderr)
    assert json.loads(Path(good).read_text())["tests"][0]["test"] == "t.py::test_a"  # never overwritten
    with pytest.raises(ShardError, match="not a tdebug report"):
        load_all([str(tmp_path / "text.json")], [])


SETUP_AND_TEARDOWN = """
import pytest


@pytest.fixture
def broken():
    raise RuntimeError("the fixture could not set up")


@pytest.fixture
def dirty():
    yield
    raise RuntimeError("the fixture could not clean up")


def test_setup_fails(broken):
    pass


@pytest.mark.skip(reason="needs a GPU")
def test_skipped():
    pass


def test_teardown_fails(dirty):
    pass
"""


def test_setup_errors_skips_and_teardown_errors_reach_the_report(pytester: pytest.Pytester):
    """What pytest counts outside a test's call is in --tdebug-json ('other') and in the merged verdict."""
    pytester.makepyfile(test_fixtures=SETUP_AND_TEARDOWN)
    result = pytester.runpytest_subprocess("--tdebug", "-p", "no:cacheprovider", "--tdebug-json", "r.json",
                                           timeout=300)
    result.assert_outcomes(passed=1, skipped=1, errors=2)
    data = json.loads((pytester.path / "r.json").read_text())
    assert [(o["test"], o["when"], o["outcome"]) for o in data["other"]] == [
        ("test_fixtures.py::test_setup_fails", "setup", "error"),
        ("test_fixtures.py::test_skipped", "setup", "skipped"),
        ("test_fixtures.py::test_teardown_fails", "teardown", "error")]
    assert "could not set up" in data["other"][0]["message"]
    merged = report("r.json", "--json", "m.json", cwd=pytester.path)
    assert merged.returncode == 1, merged.stdout + merged.stderr  # two errors: failures
    tests = {t["test"]: t["outcome"] for t in json.loads((pytester.path / "m.json").read_text())["tests"]}
    assert tests == {"test_fixtures.py::test_setup_fails": "error", "test_fixtures.py::test_skipped": "skipped",
                     "test_fixtures.py::test_teardown_fails": "error"}
