"""The plugin in the process that reports (a lone pytest, or pytest-xdist's controller): every test's
findings gathered from the reports (each worker's arrive on them), the summary line, the JSON file."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections import Counter
from pathlib import Path

import pytest

from ..runtime.files import OutputError, WriteFailed, check_output, write_output
from ..runtime.suite import durations_lines, time_totals
from .in_process_timer import MARKS_KEY, why_worker_ended
from .plugin import CONTROLLER, REPRO_ROOT
from .sanitized_test import SanitizedTest


def _inputs(config: pytest.Config) -> list[Path]:
    """The files pytest was given (test files, catalogue files): never overwritten by --tdebug-json."""
    return [p for p in (Path(str(a).split("::", 1)[0]) for a in config.args) if p.is_file()]


def check_json_path(config: pytest.Config) -> None:
    """--tdebug-json checked before any test runs, as the CLI checks its outputs (runtime.files.check_output)."""
    path = config.option.tdebug_json
    if path is None:
        return
    try:
        check_output(path, "--tdebug-json", _inputs(config))
    except OutputError as e:
        raise pytest.UsageError(str(e)) from None


def _message(report: pytest.TestReport) -> str:
    """A report's one line: the exception (RuntimeError: ...) or the skip's reason."""
    longrepr = report.longrepr
    if isinstance(longrepr, tuple):  # a skip: (path, line, "Skipped: reason")
        return str(longrepr[2])
    crash = getattr(longrepr, "reprcrash", None)
    if crash is not None:
        return crash.message
    text = str(longrepr or "").strip()
    return text.splitlines()[-1] if text else ""


class Reporter:
    def __init__(self, config: pytest.Config, seed: int) -> None:
        self.config = config
        self.seed = seed
        self.json_path: str | None = config.option.tdebug_json
        self.tests: dict[str, dict] = {}
        self.other: list[dict] = []  # setup/teardown reports that failed or skipped
        self.repro_root: str | None = config.stash.get(REPRO_ROOT, None)
        self.repro_before = {p.name for p in Path(self.repro_root).iterdir()} if self.repro_root else set()
        # pytest-xdist: the workers' in-process timers leave marks here, read when a worker ends mid-test
        self.marks = Path(tempfile.mkdtemp(prefix="tdebug-timer-")) if config.stash.get(CONTROLLER, False) else None
        self.crashed: set[str] = set()  # tests whose worker ended mid-test, explained by their marks

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node) -> None:
        """pytest-xdist: every worker plans the catalogue's cases with the controller's seed."""
        node.workerinput["tdebug_seed"] = self.seed
        node.workerinput["tdebug_repro"] = self.repro_root
        if self.marks is not None:
            node.workerinput[MARKS_KEY] = str(self.marks)

    @pytest.hookimpl(optionalhook=True)
    def pytest_handlecrashitem(self, crashitem: str, report: pytest.TestReport, sched) -> None:
        """pytest-xdist: a worker ended in the middle of a test. Where that test ran under tdebug's in-process
        timer, its failure says whether the timer ended it or something else did, and it counts as crashed."""
        why = why_worker_ended(self.marks, crashitem) if self.marks is not None else None
        if why is None:
            return
        report.longrepr = f"{report.longrepr}\n{why}"
        self.tests[crashitem] = {"test": crashitem, "outcome": "failed",
                                 **SanitizedTest(crash=why, in_process=True).record()}
        self.crashed.add(crashitem)  # its report (when "???") is that test's, not one of 'other'

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self.marks is not None:
            shutil.rmtree(self.marks, ignore_errors=True)  # made by this process in __init__

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        record = getattr(report, "tdebug", None)
        if report.when == "call" and record is not None:
            self.tests[report.nodeid] = {"test": report.nodeid, "outcome": report.outcome, **record}
        elif report.when != "call" and (report.failed or report.skipped) and report.nodeid not in self.crashed:
            # A setup that failed or skipped (the call never ran), a teardown that failed (tdebug's findings in a
            # fixture's teardown among its causes): in the JSON report, so that a merged report (tdebug report)
            # counts what pytest counted.
            outcome = "skipped" if report.skipped else "error"
            self.other.append({"test": report.nodeid, "when": report.when, "outcome": outcome,
                               "message": _message(report)[:300]})

    def summary(self) -> dict:
        checks: Counter = Counter()
        for test in self.tests.values():
            for f in test["findings"]:
                checks[f["check"]] += 1
        return {
            "tests": len(self.tests),
            "launches": sum(t["launches"] for t in self.tests.values()),
            "with_findings": sum(bool(t["findings"]) for t in self.tests.values()),
            "crashed_or_hung": sum(bool(t["crash"]) for t in self.tests.values()),
            "in_process": sum(bool(t.get("in_process")) for t in self.tests.values()),
            "findings_by_check": dict(sorted(checks.items())),
            "time": time_totals(self.tests.values()),
        }

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if not self.tests:  # --collect-only, or every test deselected or skipped
            return
        s = self.summary()
        option = self.config.option
        checks = ", ".join(sorted(option.tdebug_check)) if option.tdebug_check else "all checks"
        config = option.tdebug_config
        configs = "every autotune config" if config is None else f"autotune config #{config}"
        by_check = ", ".join(f"{k} {v}" for k, v in s["findings_by_check"].items())
        line = (f"tdebug: {s['tests']} test(s) sanitized ({checks}, {configs}), {s['launches']} Triton launch(es); "
                f"{s['with_findings']} with findings" + (f" ({by_check})" if by_check else "")
                + f", {s['crashed_or_hung']} crashed or hung"
                + (f"; catalogue seed {self.seed}" if option.tdebug_catalogue else ""))
        terminalreporter.write_sep("-", "tdebug")
        terminalreporter.write_line(line)
        if s["in_process"]:
            terminalreporter.write_line(
                f"tdebug: {s['in_process']} test(s) ran in pytest's own process, not a forked child: CUDA was "
                "initialised there (a fixture or a module-level CUDA tensor), and a child forked after that cannot "
                "use it; a crash there ends the process (with pytest-xdist: its worker), a hang after "
                "--tdebug-timeout")
        spent = s["time"]
        if spent["seconds"] > 0:
            share = 100 * spent["launch_seconds"] / spent["seconds"]
            terminalreporter.write_line(
                f"tdebug: the tests' calls took {spent['seconds']:.1f} s, {spent['launch_seconds']:.1f} s "
                f"({share:.0f}%) of it in Triton launches (the interpreter and tdebug's checks)"
                + (f", {spent['wait_seconds']:.1f} s waiting for host memory before large launches (the workers' "
                   "interpreted launches take turns; --tdebug-max-mib runs larger ones compiled only)"
                   if spent["wait_seconds"] else "") + ", the rest in the tests' own code")
        durations = option.tdebug_durations
        if durations is not None:
            title = "every test" if durations == 0 else f"the {durations} slowest"
            terminalreporter.write_sep("-", f"tdebug: {title} by seconds in Triton launches")
            for row in durations_lines(self.tests.values(), durations) or ["(no test made a timed launch)"]:
                terminalreporter.write_line(row)
        if self.json_path:
            terminalreporter.write_line(f"tdebug: findings written to {self.json_path}")
        for line in self.repro_lines():
            terminalreporter.write_line(line)

    def repro_lines(self) -> list[str]:
        """One line per reproducer the session wrote: its test and the command that replays it."""
        if not self.repro_root:
            return []
        root = Path(self.repro_root)
        new = sorted(p for p in root.iterdir() if p.is_dir() and p.name not in self.repro_before)
        if not new:
            return [f"tdebug: no launch with a finding: nothing written to {root}"]
        lines = []
        for folder in new:
            text = (folder / "finding.txt").read_text() if (folder / "finding.txt").exists() else ""
            test = next((t.removeprefix("from: ") for t in text.splitlines() if t.startswith("from: ")), "")
            if (folder / "repro.py").exists():
                lines.append(f"tdebug: repro of {test}: tdebug sanitize {folder / 'repro.py'}")
            else:
                reason = text.split("NOT WRITTEN: ", 1)[-1].splitlines()[0] if "NOT WRITTEN" in text else "?"
                lines.append(f"tdebug: repro of {test} not written: {reason}")
        return lines

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if not self.json_path:
            return
        option = self.config.option
        payload = {
            "checks": sorted(option.tdebug_check) if option.tdebug_check else "all",
            "config": option.tdebug_config,
            "seed": self.seed,
            "summary": self.summary(),
            "tests": [self.tests[k] for k in sorted(self.tests)],
            "other": sorted(self.other, key=lambda o: (o["test"], o["when"])),
        }
        try:
            write_output(self.json_path, json.dumps(payload, indent=1), "--tdebug-json", _inputs(self.config))
        except OutputError as e:  # it changed while the tests ran: said, never written through
            self.config.get_terminal_writer().line(f"tdebug: error: {e}", red=True)
            session.exitstatus = pytest.ExitCode.USAGE_ERROR
        except WriteFailed as e:  # a full disk, no descriptors left: said with the path, never a traceback
            self.config.get_terminal_writer().line(f"tdebug: error: {e}", red=True)
            session.exitstatus = pytest.ExitCode.INTERNAL_ERROR
