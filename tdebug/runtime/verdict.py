"""What a run comes to (Verdict, from the cases' Status and their findings' Check): one exit code, one summary
line and one JSON shape for every command: 0 clean, 1 findings or failures, 2 nothing was checked, 3 part of the
job could not be done (whatever else was found)."""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from .results import CaseResult


class Status(str, enum.Enum):
    """How one case ended (CaseResult.status)."""

    PASS = "pass"
    FAIL = "fail"  # a wrong output, or findings
    ERROR = "error"  # the kernel or the script raised
    ASSERT = "assert"  # a tl.device_assert fired
    OVERFLOW = "overflow"  # int32 offset arithmetic overflowed (GPU debug mode)
    CRASH = "crash"
    HANG = "hang"
    UNSUPPORTED = "unsupported"  # a construct the CPU interpreter cannot run: not checked
    INTERNAL = "internal"  # tdebug's own failure: not checked
    NOT_CHECKED = "not-checked"
    QUIT = "quit"  # the person quit the debugger

    def __str__(self) -> str:
        return self.value


COULD_NOT_RUN = frozenset({Status.UNSUPPORTED, Status.INTERNAL, Status.NOT_CHECKED})


class Check(str, enum.Enum):
    """The class of a finding (Finding.check): what went wrong, or why a run could not go on."""

    BOUNDS = "bounds"
    UNINIT = "uninit"
    RACE = "race"
    UNWRITTEN = "unwritten"
    ASSERT = "assert"
    OVERFLOW = "overflow"
    NAN = "nan"
    LINT = "lint"
    MISMATCH = "mismatch"
    GPU_ERROR = "gpu-error"
    DIVERGENCE = "divergence"  # compiled and interpreted outputs differ (the GPU's interpreter pass)
    # A run's failure, not a detection:
    EXCEPTION = "exception"
    EXIT = "exit"
    CRASH = "crash"
    HANG = "hang"
    DTYPE = "dtype"
    NO_KERNEL = "no-kernel"
    NOT_CHECKED = "not-checked"
    UNSUPPORTED = "unsupported"
    INTERNAL = "internal"
    NOTE = "note"

    def __str__(self) -> str:
        return self.value


RUN_FAILURES = frozenset({Check.EXCEPTION, Check.EXIT, Check.CRASH, Check.HANG, Check.DTYPE, Check.NO_KERNEL,
                          Check.NOT_CHECKED, Check.UNSUPPORTED, Check.INTERNAL})


def status_of(case: CaseResult) -> Status | None:
    """The case's Status; None for a status no Status names (counted as a failure: never clean)."""
    try:
        return Status(case.status)
    except ValueError:
        return None


@dataclass(frozen=True)
class Verdict:
    """Counts over every case of a run (several files add up with +), and why parts were not checked."""

    passed: int = 0
    failed: int = 0
    not_checked: int = 0  # cases tdebug could not run (COULD_NOT_RUN), and files it could not even plan
    quit: int = 0
    launched_nothing: int = 0  # scripts that ran to their end without one Triton launch
    ran_no_case: int = 0  # targets that planned no case at all
    lint: int = 0  # lint warnings (check's autotune lint): a failure
    findings: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))  # Check -> count
    unchecked_notes: tuple[str, ...] = ()  # what an engine did not check (a size cap): never "clean"

    @classmethod
    def of(cls, cases: Iterable[CaseResult], *, fatal: str = "", lint: int = 0,
           unchecked_notes: Iterable[str] = ()) -> Verdict:
        """The verdict of one target's cases (fatal: it could not even be planned)."""
        cases = list(cases)
        counts: Counter[str] = Counter()
        passed = failed = not_checked = quit_ = nothing = 0
        for case in cases:
            status = status_of(case)
            if status in COULD_NOT_RUN:  # what it found before it stopped still counts (never "clean")
                not_checked += 1
                counts.update(f.check for f in case.findings if f.check not in RUN_FAILURES)
                continue
            counts.update(f.check for f in case.findings)
            if status is Status.QUIT:
                quit_ += 1
            elif status is Status.PASS and case.findings:  # never clean with findings
                failed += 1
            elif status is Status.PASS and case.launched_nothing:
                nothing += 1
            elif status is Status.PASS:
                passed += 1
            else:
                failed += 1
        return cls(passed=passed, failed=failed, not_checked=not_checked + bool(fatal), quit=quit_,
                   launched_nothing=nothing, ran_no_case=int(not cases and not fatal), lint=lint,
                   findings=MappingProxyType(dict(counts)), unchecked_notes=tuple(unchecked_notes))

    def __add__(self, other: Verdict) -> Verdict:
        findings = Counter(self.findings)
        findings.update(other.findings)
        return Verdict(self.passed + other.passed, self.failed + other.failed, self.not_checked + other.not_checked,
                       self.quit + other.quit, self.launched_nothing + other.launched_nothing,
                       self.ran_no_case + other.ran_no_case, self.lint + other.lint,
                       MappingProxyType(dict(findings)), self.unchecked_notes + other.unchecked_notes)

    @property
    def found(self) -> bool:
        """Findings or failures: something is wrong with the kernel or the script."""
        return bool(self.failed or self.lint)

    @property
    def incomplete(self) -> bool:
        """Part of the job could not be done: never reported clean."""
        return bool(self.not_checked or (self.unchecked_notes and not self.found))

    @property
    def nothing_checked(self) -> bool:
        """Nothing ran that could have found anything (and the person did not quit the debugger)."""
        return not self.found and not self.incomplete and not self.passed and not self.quit

    @property
    def clean(self) -> bool:
        return not (self.found or self.incomplete or self.nothing_checked)

    @property
    def exit_code(self) -> int:
        """3 when part of the job could not be done, else 1 on findings or failures, else 2 when nothing
        was checked, else 0."""
        return 3 if self.incomplete else 1 if self.found else 2 if self.nothing_checked else 0

    def summary(self) -> str:
        """One line: what was found, or clean, or why not clean."""
        if self.findings and (self.found or self.incomplete):
            what = ", ".join(f"{n} {check}" for check, n in sorted(self.findings.items()))
            what += ", NOT fully checked" if self.incomplete else ""
        elif self.found:
            what = "failed"
        elif self.incomplete:
            what = "no findings, NOT fully checked"
        elif self.nothing_checked:
            what = "nothing checked"
        else:
            what = "clean"
        return what

    def to_json(self) -> dict[str, Any]:
        return {"exit_code": self.exit_code, "summary": self.summary(), "passed": self.passed,
                "failed": self.failed, "not_checked": self.not_checked, "quit": self.quit,
                "launched_nothing": self.launched_nothing, "lint": self.lint,
                "findings": dict(sorted(self.findings.items())), "unchecked_notes": list(self.unchecked_notes)}
