"""What a job's run comes back as (CaseResult per case, JobResult per job) and how a case reads to a person."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..report import Finding, render


@dataclass
class CaseResult:
    index: int
    label: str
    status: str  # pass, fail, error, assert, overflow, crash, hang, unsupported/internal/not-checked (could not run),
                 # quit (the person quit the debugger)
    findings: list[Finding] = field(default_factory=list)
    comparisons: list[dict] = field(default_factory=list)
    time: float = 0.0
    cpu_time: float = 0.0  # the child's CPU seconds for the case (steadier than `time` on a busy machine)
    error: str = ""
    launches: list[dict] = field(default_factory=list)
    case: dict = field(default_factory=dict)
    exit_code: int | None = None
    stderr: str = ""
    localisation: list[dict] = field(default_factory=list)  # per wrong output: runtime.localise.Localisation
    launch_count: int | None = None  # a script's Triton launches; None where they cannot be seen (GPU modes)
    kernel_files: dict[str, str] = field(default_factory=dict)  # kernel name -> its source file (interpreter)

    @property
    def ok(self) -> bool:
        return self.status == "pass"

    @property
    def launched_nothing(self) -> bool:
        """A script that ran to its end without one Triton launch: nothing was checked."""
        return self.launch_count == 0


@dataclass
class ChildLog:
    """What one child process printed (capture=True) and how it ended; start: its first case's index."""

    start: int
    stdout: str = ""
    stderr: str = ""
    exit_code: int | None = None


@dataclass
class JobResult:
    kernel: str = ""
    labels: list[str] = field(default_factory=list)
    cases: list[CaseResult] = field(default_factory=list)
    lint: list[Finding] = field(default_factory=list)
    fatal: str = ""  # the child could not even plan (bad target file, import error)
    fatal_usage: bool = False  # ... because of what the user asked (a shape of the wrong rank): exit 2
    logs: list[ChildLog] = field(default_factory=list)  # one per child, with capture=True
    notes: list[Finding] = field(default_factory=list)  # worth knowing, not a fault (exit code 0)


def comparison_line(c: dict) -> str:
    from ..catalogue.compare import Comparison  # torch: only where a comparison is shown

    return Comparison(**{k: v for k, v in c.items() if k in Comparison.__dataclass_fields__}).summary()


def render_case(r: CaseResult, verbose: bool = True) -> list[str]:
    from ..catalogue.compare import Comparison

    mark = {"pass": "PASS", "fail": "FAIL"}.get(r.status, r.status.upper())
    config = ""
    for launch in r.launches:
        if launch.get("config"):
            config = f" [config {launch.get('config_index')}: {launch['config']}]"
            break
    lines = [f"{mark:5s} {r.label}{config}  ({r.time:.2f} s)" if r.time else f"{mark:5s} {r.label}{config}"]
    if not verbose:
        return lines
    for c in r.comparisons:
        lines.append("      " + comparison_line(c))
        comp = Comparison(**{k: v for k, v in c.items() if k in Comparison.__dataclass_fields__})
        if not comp.ok:
            lines += ["      " + d for d in comp.details()]
    if r.status not in ("pass",):
        for f in r.findings:
            lines += ["      " + ln for ln in render(f).splitlines()]
    for where in r.localisation:  # the command to stop where it went wrong comes last
        lines += ["      " + ln for ln in where["lines"] + ([where["command"]] if where.get("command") else [])]
    return lines
