"""A `pytest --tdebug` session as data: each test's record (its findings, launches and where its time went),
the slowest tests' launches (--tdebug-durations), and the reports of a suite's shards (--tdebug-json, pytest's
JUnit XML) merged into one verdict, one table, one exit code (`tdebug report`)."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..report import Finding
from .results import CaseResult
from .verdict import COULD_NOT_RUN, Verdict

# -- one test's launches -----------------------------------------------------------------------------------------


def slowest_kernel(launches: Iterable[dict]) -> dict | None:
    """The kernel whose launches took the most seconds in a test: {"kernel", "seconds", "launches"}; None when
    no launch was timed (no launch, or only launches in processes the test started)."""
    seconds: Counter[str] = Counter()
    counts: Counter[str] = Counter()
    for launch in launches:
        if "seconds" not in launch:
            continue
        seconds[launch["kernel"]] += launch["seconds"]
        counts[launch["kernel"]] += 1
    if not seconds:
        return None
    kernel, spent = max(seconds.items(), key=lambda kv: (kv[1], kv[0]))
    return {"kernel": kernel, "seconds": round(spent, 3), "launches": counts[kernel]}


def time_totals(tests: Iterable[dict]) -> dict:
    """Where the tests' time went (wall seconds, summed over the tests' records): their calls, of which Triton
    launches, and before those, waits for host memory."""
    timed = [t["time"] for t in tests if "time" in t]
    return {"seconds": round(sum(t["seconds"] for t in timed), 3),
            "launch_seconds": round(sum(t["launch_seconds"] for t in timed), 3),
            "wait_seconds": round(sum(t.get("wait_seconds", 0.0) for t in timed), 3)}


def durations_lines(tests: Iterable[dict], n: int) -> list[str]:
    """The n tests whose Triton launches took longest (0: every test), as pytest's --durations lists its slowest
    tests: seconds in launches, seconds in the test's own code (its call's other seconds), its launches (every
    autotune config pass's), the kernel whose launches took most of them."""
    timed = sorted((t for t in tests if "time" in t), key=lambda t: (-t["time"]["launch_seconds"], t["test"]))
    shown = timed if n == 0 else timed[:n]
    if not shown:
        return []
    lines = [f"{'launch s':>9} {'own s':>8} {'launches':>8}  {'slowest kernel (s, launches)':<40} test"]
    for test in shown:
        spent = test["time"]
        slow = spent.get("slowest_kernel")
        kernel = f"{slow['kernel']} ({slow['seconds']:.2f} s, {slow['launches']})" if slow else "-"
        launches = spent.get("launches", test.get("launches", 0))
        own = max(0.0, spent["seconds"] - spent["launch_seconds"])
        lines.append(f"{spent['launch_seconds']:9.2f} {own:8.2f} {launches:8d}  {kernel:<40} "
                     f"{test['test']}")
    rest = len(timed) - len(shown)
    if rest:
        lines.append(f"({rest} test(s) with less time in launches not shown; --tdebug-durations 0 shows all)")
    return lines


# -- shard reports -----------------------------------------------------------------------------------------------


class ShardError(ValueError):
    """A report that cannot be merged (missing, not a tdebug report, a test reported twice): one line, a usage
    error."""


REPORT_KEYS = ("checks", "config", "seed", "summary", "tests")
TEST_KEYS = {"test": str, "outcome": str, "findings": list, "crash": str, "launches": int}


@dataclass
class Shard:
    """One `pytest --tdebug --tdebug-json FILE` report."""

    path: str
    checks: Any
    config: int | None
    seed: int | None
    tests: list[dict]
    other: list[dict] = field(default_factory=list)  # setup/teardown reports that failed or skipped


def _read(path: str) -> bytes:
    p = Path(path)
    if not p.exists():
        raise ShardError(f"no such file: {path}")
    if not p.is_file():
        raise ShardError(f"not a file: {path}")
    try:
        return p.read_bytes()
    except OSError as e:
        raise ShardError(f"{path}: cannot read it ({e.strerror})") from None


def load_shard(path: str) -> Shard:
    """A shard's --tdebug-json report, its shape checked."""
    raw = _read(path)
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise ShardError(f"{path}: not a tdebug report (not JSON; give JUnit XML files with --junit)") from None
    missing = [k for k in REPORT_KEYS if not isinstance(data, dict) or k not in data]
    if missing or not isinstance(data["tests"], list):
        raise ShardError(f"{path}: not a tdebug report (a `pytest --tdebug --tdebug-json FILE` report has "
                         f"{', '.join(REPORT_KEYS)}; missing {', '.join(missing) or 'a list of tests'})")
    for i, test in enumerate(data["tests"]):
        wrong = [k for k, kind in TEST_KEYS.items() if not isinstance(test, dict) or not isinstance(test.get(k), kind)]
        if wrong:
            raise ShardError(f"{path}: not a tdebug report (test #{i + 1} has no valid {', '.join(wrong)})")
    other = data.get("other", [])
    if not isinstance(other, list) or not all(isinstance(o, dict) and isinstance(o.get("test"), str)
                                              for o in other):
        raise ShardError(f"{path}: not a tdebug report ('other' is not a list of test reports)")
    return Shard(path, data["checks"], data["config"], data["seed"], data["tests"], other)


def junit_address(nodeid: str) -> tuple[str, str]:
    """A pytest node id as pytest's JUnit XML names its testcase (classname, name): the path's '/' as '.', no
    '.py', the last part the name (pytest's junitxml.mangle_test_address)."""
    base, bracket, params = nodeid.partition("[")  # parameters may hold '::' or '/': one opaque part
    path, *names = base.split("::")
    parts = [re.sub(r"\.py$", "", path.replace("/", "."))] + names
    parts[-1] += bracket + params
    return ".".join(parts[:-1]), parts[-1]


def _known(by_address: dict[tuple[str, str], str], classname: str, name: str) -> str | None:
    """The test id of a JUnit testcase; a classname under --junit-prefix matches without its prefix."""
    while True:
        found = by_address.get((classname, name))
        if found is not None or "." not in classname:
            return found
        classname = classname.split(".", 1)[1]


@dataclass(frozen=True)
class JUnitCase:
    classname: str
    name: str
    outcome: str  # passed, failed, error, skipped
    message: str
    path: str


def load_junit(path: str) -> list[JUnitCase]:
    """Every testcase of a pytest JUnit XML file (--junitxml) with its outcome."""
    raw = _read(path)
    try:
        root = ET.fromstring(raw)
    except ET.ParseError as e:
        raise ShardError(f"{path}: not JUnit XML ({e})") from None
    if root.tag not in ("testsuites", "testsuite"):
        raise ShardError(f"{path}: not JUnit XML (its root is <{root.tag}>, not <testsuites> or <testsuite>)")
    cases = []
    for case in root.iter("testcase"):
        outcome, message = "passed", ""
        for tag in ("error", "failure", "skipped"):  # the worst first
            child = case.find(tag)
            if child is not None:
                outcome = {"error": "error", "failure": "failed", "skipped": "skipped"}[tag]
                message = (child.get("message") or "").splitlines()[0] if child.get("message") else ""
                break
        cases.append(JUnitCase(case.get("classname", ""), case.get("name", ""), outcome, message, path))
    return cases


# -- merged ------------------------------------------------------------------------------------------------------

RANK = {"passed": 0, "skipped": 1, "failed": 2, "error": 3}  # a test's worst report wins


@dataclass
class Merged:
    """Every shard's tests as one session: a row per test, one verdict."""

    shards: list[Shard]
    junit_files: list[str]
    tests: dict[str, dict]  # test id -> its record (a shard's, or made from JUnit), "outcome" the worst report's
    sources: dict[str, str]  # test id -> the file that reported it
    outside: list[str]  # tests that ran, per JUnit, without a tdebug record: not checked by tdebug

    def cases(self) -> list[CaseResult]:
        """A CaseResult per test that ran (skipped ones did not), for runtime.verdict."""
        cases = []
        for i, (name, test) in enumerate(sorted(self.tests.items())):
            if name in self.outside:
                continue
            findings = [Finding.from_dict(f) for f in test["findings"]]
            status = _status(test, findings)
            if status is None:
                continue
            cases.append(CaseResult(index=i, label=name, status=status, findings=findings,
                                    error=test.get("crash", ""), launch_count=test["launches"]))
        return cases

    def verdict(self) -> Verdict:
        notes = [f"{len(self.outside)} test(s) ran outside tdebug (in JUnit XML with no tdebug record)"] \
            if self.outside else []
        return Verdict.of(self.cases(), unchecked_notes=notes)

    def counts(self) -> dict:
        outcomes = Counter(t["outcome"] for t in self.tests.values())
        by_check: Counter[str] = Counter(f["check"] for t in self.tests.values() for f in t["findings"])
        return {"tests": len(self.tests), "outcomes": dict(sorted(outcomes.items())),
                "launches": sum(t["launches"] for t in self.tests.values()),
                "with_findings": sum(bool(t["findings"]) for t in self.tests.values()),
                "crashed_or_hung": sum(bool(t.get("crash")) for t in self.tests.values()),
                "findings_by_check": dict(sorted(by_check.items())),
                "time": time_totals(self.tests.values())}

    def table(self) -> list[str]:
        """The tests that did not pass clean (a row each), then a row per shard and the totals."""
        bad = [(name, t) for name, t in sorted(self.tests.items())
               if t["findings"] or t.get("crash") or t["outcome"] in ("failed", "error") or name in self.outside]
        lines = []
        if bad:
            lines.append(f"{'outcome':<8} {'findings':<28} {'launches':>8} {'launch s':>9}  test")
            for name, t in bad:
                checks = Counter(f["check"] for f in t["findings"])
                what = ", ".join(f"{c} {n}" for c, n in sorted(checks.items()))
                if t.get("crash"):
                    what = ("hang" if "HANG" in t["crash"] else "crash") + (f"; {what}" if what else "")
                if name in self.outside:
                    what = "not under tdebug"
                spent = t.get("time", {}).get("launch_seconds")
                lines.append(f"{t['outcome']:<8} {what or '-':<28} {t['launches']:8d} "
                             f"{'-' if spent is None else f'{spent:.2f}':>9}  {name}")
            lines.append("")
        for shard in self.shards:
            n = sum(1 for s in self.sources.values() if s == shard.path)
            spent = sum(t["time"]["seconds"] for t in shard.tests if "time" in t)
            lines.append(f"shard {shard.path}: {n} test(s), {spent:.1f} s in their calls, seed {shard.seed}")
        for path in self.junit_files:
            n = sum(1 for s in self.sources.values() if s == path)
            lines.append(f"junit {path}: {n} test(s) with no tdebug record")
        c = self.counts()
        outcomes = ", ".join(f"{n} {o}" for o, n in c["outcomes"].items())
        by_check = ", ".join(f"{k} {v}" for k, v in c["findings_by_check"].items())
        lines.append(f"total: {c['tests']} test(s) ({outcomes or 'none'}), {c['launches']} Triton launch(es); "
                     f"{c['with_findings']} with findings" + (f" ({by_check})" if by_check else "")
                     + f", {c['crashed_or_hung']} crashed or hung; {c['time']['seconds']:.1f} s in the tests' "
                     f"calls, {c['time']['launch_seconds']:.1f} s of it in Triton launches")
        return lines

    def to_json(self) -> dict:
        checks, config = _agreed(self.shards)
        return {"tool": "tdebug report", "checks": checks, "config": config,
                "shards": [{"path": s.path, "seed": s.seed, "tests": len(s.tests)} for s in self.shards],
                "junit": self.junit_files, "verdict": self.verdict().to_json(), "summary": self.counts(),
                "outside_tdebug": sorted(self.outside), "tests": [self.tests[k] for k in sorted(self.tests)]}


def _status(test: dict, findings: list[Finding]) -> str | None:
    """A test's Status for runtime.verdict; None for a skipped test without findings (it did not run)."""
    could_not = [f.check for f in findings if f.check in {s.value for s in COULD_NOT_RUN}]
    if could_not and len(could_not) == len(findings):
        return could_not[0]  # tdebug could not check it (an internal error): never a pass
    if test.get("crash"):
        return "hang" if "HANG" in test["crash"] else "crash"
    if findings or test["outcome"] == "failed":
        return "fail"
    if test["outcome"] == "error":
        return "error"
    if test["outcome"] == "skipped":
        return None
    return "pass"


def _agreed(shards: list[Shard]) -> tuple[Any, int | None]:
    checks = {json.dumps(s.checks, sort_keys=True) for s in shards}
    configs = {s.config for s in shards}
    if len(checks) > 1 or len(configs) > 1:
        raise ShardError("the shards ran different settings (--tdebug-check or --tdebug-config): "
                         + "; ".join(f"{s.path}: checks {s.checks}, config {s.config}" for s in shards))
    return (shards[0].checks, shards[0].config) if shards else ("all", None)


def merge(shards: list[Shard], junit: dict[str, list[JUnitCase]]) -> Merged:
    """The shards' tests as one session. A test in two shard reports (or two JUnit files) is an error: the
    shards overlap. A JUnit testcase adds to its test's record (a setup or teardown error pytest reported
    outside the test's call) or, with no record, stands for a test tdebug did not see."""
    _agreed(shards)
    tests: dict[str, dict] = {}
    sources: dict[str, str] = {}
    for shard in shards:
        for test in shard.tests:
            name = test["test"]
            if name in sources:
                raise ShardError(f"{sources[name]} and {shard.path} both report {name}: the shards overlap")
            tests[name], sources[name] = dict(test), shard.path
        for extra in shard.other:  # a setup or teardown that failed or skipped
            name = extra["test"]
            known = tests.get(name)
            if known is None:
                tests[name] = {"test": name, "outcome": extra.get("outcome", "error"), "findings": [], "crash": "",
                               "launches": 0, "configs": []}
                sources[name] = shard.path
            elif sources[name] != shard.path:
                raise ShardError(f"{sources[name]} and {shard.path} both report {name}: the shards overlap")
            else:
                known["outcome"] = _worse(known["outcome"], extra.get("outcome", "error"))
    by_address = {junit_address(name): name for name in tests}
    junit_seen: dict[str, str] = {}
    outside: list[str] = []
    for path, cases in junit.items():
        for case in cases:
            name = _known(by_address, case.classname, case.name)
            if name is None:  # no tdebug record: a test tdebug did not run, or a collection error
                name = f"{case.classname}::{case.name}" if case.classname else case.name
                by_address[(case.classname, case.name)] = name
                tests[name] = {"test": name, "outcome": case.outcome, "findings": [], "crash": "", "launches": 0,
                               "configs": [], "junit": case.message}
                sources[name] = path
                if case.outcome == "passed":
                    outside.append(name)
            elif junit_seen.get(name, path) != path:
                raise ShardError(f"{junit_seen[name]} and {path} both report {name}: the shards overlap")
            else:
                tests[name]["outcome"] = _worse(tests[name]["outcome"], case.outcome)
                if name in outside and case.outcome != "passed":
                    outside.remove(name)
            junit_seen[name] = path
    return Merged(shards, list(junit), tests, sources, outside)


def _worse(a: str, b: str) -> str:
    return a if RANK.get(a, 3) >= RANK.get(b, 3) else b


def load_all(reports: Iterable[str], junit_files: Iterable[str]) -> Merged:
    """Every report read and merged; a ShardError (one line) for the first bad input."""
    shards = [load_shard(p) for p in reports]
    return merge(shards, {p: load_junit(p) for p in junit_files})
