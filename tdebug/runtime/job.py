"""What a child process is asked to do (Job and its parts, frozen dataclasses): the only way a job is made, and
the one place it is written for the child (to_json) and read back there (from_json)."""

from __future__ import annotations

import json
import secrets
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from ..catalogue.spec import Case
from .device import Device

KINDS = ("spec", "script")
ENGINES = ("tdebug", "symbolic")
EXECUTORS = ("auto", "batched", "serial")  # how the child runs a launch's programs (TDEBUG_EXECUTOR)


def fresh_seed() -> int:
    """The one seed policy: every command draws a fresh input seed unless --seed is given, and prints it so
    the run can be repeated."""
    return secrets.randbelow(2**31)


def _tuple(values) -> tuple | None:
    return None if values is None else tuple(values)


@dataclass(frozen=True)
class Plan:
    """Which cases of a catalogue file to run: the planned matrix (catalogue.cases.plan_cases), narrowed by
    the lists given (None: the spec's own); with Job.single, the one case the lists' first entries name."""

    device: str = "cpu"
    seed: int = 0
    quick: bool = False
    dtypes: tuple[str, ...] | None = None
    layouts: tuple[str, ...] | None = None
    shapes: tuple[tuple[int, ...], ...] | None = None
    configs: tuple[int, ...] | None = None
    variants: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "device", Device(self.device).value)  # ValueError for anything else
        for name in ("dtypes", "layouts", "configs", "variants"):
            object.__setattr__(self, name, _tuple(getattr(self, name)))
        if self.shapes is not None:
            object.__setattr__(self, "shapes", tuple(tuple(int(n) for n in s) for s in self.shapes))

    def to_dict(self) -> dict[str, Any]:
        """The keyword arguments of catalogue.cases.plan_cases."""
        return asdict(self)


@dataclass(frozen=True)
class SanitizeOptions:
    """The interpreter sanitizer a job installs in the child (sanitize.session.SanitizerSession's arguments)."""

    checks: tuple[str, ...] = ()
    max_findings: int = 50

    def __post_init__(self) -> None:
        object.__setattr__(self, "checks", tuple(self.checks))


@dataclass(frozen=True)
class JobLimits:
    """Size caps for the interpreter pass (interpreter.hooks.limits.Limits); 0: no cap."""

    max_programs: int = 0
    max_bytes: int = 0


@dataclass(frozen=True)
class Job:
    """One run of a target in a child process (tdebug.child), as runtime.harness.run_job starts it."""

    target: str  # an absolute path
    kind: str  # "spec" (a catalogue file) or "script"
    argv: tuple[str, ...] = ()  # a script's arguments
    plan: Plan | None = None  # a catalogue file's cases (None with explicit `cases`, or for a script)
    cases: tuple[Case, ...] | None = None  # explicit cases instead of a plan
    single: bool = False  # the one case the plan's first entries name (tdebug run)
    config: int | None = None  # a script: only this autotune config
    config_rank: int = 0  # a script: the rank of the surviving config this run takes (sanitize's sweep)
    # a script: run once per rank here, each run in a process forked from the child (sanitize's sweep); a case each
    sweep_ranks: tuple[int, ...] = ()
    sanitize: SanitizeOptions | None = None  # the interpreter sanitizer, or None
    engine: str = "tdebug"  # the interpreter engine: "tdebug" or "symbolic" (triton-viz)
    limits: JobLimits | None = None  # size caps for the interpreter pass
    lint: bool = False  # check's autotune lint first
    guard: bool = False  # guard bands around a GPU case's tensors
    pin_autotune: bool = False  # GPU modes: run the case's config instead of benchmarking them all
    reference_from: str | None = None  # a file whose reference judges this one (an exercise copy)
    breaks: tuple[str, ...] | None = None  # breakpoints ("FILE:LINE"); None: no debugger
    pid: tuple[int, ...] | None = None  # with breaks: only in this program
    start: int = 0  # the first case to run (a fresh child after a crash goes on from there)
    executor: str = "auto"  # "auto" | "batched" | "serial": exported to the child as TDEBUG_EXECUTOR
    divergence: bool = False  # the GPU's interpreter pass: each launch also run compiled, outputs compared
    repro: str | None = None  # a folder: a self-contained reproducer per launch with a finding (runtime/reproducers.py)
    seed: int | None = None  # a script: the run's seed, which seeds torch, numpy and random before it runs

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"Job.kind {self.kind!r}: one of {', '.join(KINDS)}")
        if self.engine not in ENGINES:
            raise ValueError(f"Job.engine {self.engine!r}: one of {', '.join(ENGINES)}")
        if self.executor not in EXECUTORS:
            raise ValueError(f"Job.executor {self.executor!r}: one of {', '.join(EXECUTORS)}")
        object.__setattr__(self, "argv", tuple(self.argv))
        object.__setattr__(self, "sweep_ranks", tuple(self.sweep_ranks))
        for name in ("breaks", "pid"):
            object.__setattr__(self, name, _tuple(getattr(self, name)))
        if self.cases is not None:
            object.__setattr__(self, "cases", tuple(self.cases))

    @property
    def device(self) -> str:
        """Where the job's tensors live: "cuda" or "cpu" (a script's are wherever it puts them: "cpu" here)."""
        if self.cases:
            return self.cases[0].device
        return self.plan.device if self.plan is not None else "cpu"

    def but(self, **changes: Any) -> Job:
        """A copy with some fields changed (the job itself never changes)."""
        return replace(self, **changes)

    def for_gpu(self) -> Job:
        """The job on the GPU, compiled: device cuda, each case's own autotune config, no interpreter
        sanitizer, no breakpoints (the GPU runs compiled code)."""
        plan = replace(self.plan, device="cuda") if self.plan is not None else None
        cases = tuple(replace(c, device="cuda") for c in self.cases) if self.cases is not None else None
        return replace(self, plan=plan, cases=cases, sanitize=None, breaks=None, pid=None, pin_autotune=True)

    # -- the one serialisation, parent to child ---------------------------------------------------------

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Job:
        data = json.loads(text)
        if data.get("plan") is not None:
            data["plan"] = Plan(**data["plan"])
        if data.get("cases") is not None:
            data["cases"] = tuple(Case(**{**c, "shape": tuple(c["shape"])}) for c in data["cases"])
        if data.get("sanitize") is not None:
            data["sanitize"] = SanitizeOptions(**data["sanitize"])
        if data.get("limits") is not None:
            data["limits"] = JobLimits(**data["limits"])
        return cls(**data)


@dataclass(frozen=True)
class VizJob:
    """One traced run for `tdebug viz` (viz.trace_child): a catalogue file's one case, or a script."""

    target: str
    kind: str
    argv: tuple[str, ...] = ()
    shape: tuple[int, ...] | None = None
    dtype: str = "fp32"
    layout: str = "contiguous"
    seed: int = 0
    config: int | None = None
    variant: str | None = None
    pid: tuple[int, int, int] | None = None
    out: str = ""  # the folder the child writes its maps to
    serve: dict[str, int] | None = field(default=None)  # {"port": N}: serve triton-viz's visualizer

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"VizJob.kind {self.kind!r}: one of {', '.join(KINDS)}")
        object.__setattr__(self, "argv", tuple(self.argv))
        for name in ("shape", "pid"):
            object.__setattr__(self, name, _tuple(getattr(self, name)))

    def but(self, **changes: Any) -> VizJob:
        return replace(self, **changes)

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> VizJob:
        return cls(**json.loads(text))
