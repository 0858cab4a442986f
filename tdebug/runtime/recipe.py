"""The one recipe that wires tdebug into a process, and the `Installed` it gives back (the parts installed).

Every process that runs kernels under tdebug (a `sanitize` / `run` / `check` child, a pytest worker under
`pytest --tdebug`, a `viz` child, a worker a script spawned) says what it needs as a `Recipe` and calls
`install(recipe, sanitizer, listeners)`: the interpreter's patches, the store records, the size caps, the
reproducer writer, the follower of forked and spawned children, the launch lock, and the checks above this
layer, made by the caller (a sanitizer session, the GPU's divergence check, viz's guard and trace: anything with
an `install()`). What runs inside what is `interpreter.versions.LAYERS`, not the order here. The `Installed` it
returns holds the parts and the interpreter's per-process state (`state`, `launches`, `recorder`, `faults()`):
the one handle the process's code uses for them.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..interpreter import patches
from ..interpreter.hooks import stores
from ..interpreter.versions import take_faults
from .allocator import freeze_installed_objects, keep_freed_memory
from .job import Job, JobLimits


class Part(Protocol):
    """A check or tool that wraps the interpreter in its own layer (versions.LAYERS) once installed."""

    def install(self) -> None: ...


@dataclass(frozen=True)
class Follow:
    """Launches in the forked and spawned children of this process: written to `folder`, collected here."""

    folder: Path
    settings: dict = field(default_factory=dict)  # what a spawned child needs to install the same recipe
    home: int | None = None  # the process whose children are followed (None: this one; -1: none yet)
    active: bool = True  # False: pytest's own forks are not followed until a test's child adopts the follower


@dataclass(frozen=True)
class Recipe:
    """What one process installs below the checks. Every part is off unless named."""

    interpret: bool  # TRITON_INTERPRET=1 here: tdebug's interpreter; else a GPU mode
    exact_values: bool = True  # False for triton-viz's symbolic engine: values are expressions
    store_records: bool = False  # who stored each element (a wrong output's localisation, viz's error tiles)
    clamp_config: bool = False  # a kernel with fewer autotune configs than asked runs its last one
    pin_autotune: bool = False  # GPU modes: the case's config runs instead of a benchmark of them all
    limits: JobLimits | None = None  # size caps, checked before anything else of a launch
    repro: tuple[Path, str] | None = None  # (folder, label): a reproducer of each launch with findings
    follow: Follow | None = None
    serialise: bool = False  # one launch at a time across the process's threads

    @classmethod
    def for_job(cls, job: Job, follow_folder: Path | None = None, home: int | None = None) -> Recipe:
        """A sanitize / run / check child's recipe; a worker spawned from its script passes `home=-1`."""
        interpret = os.environ.get("TRITON_INTERPRET") == "1"
        values = job.engine != "symbolic"  # triton-viz's symbolic launches compute no values to store
        follow = None
        if interpret and follow_folder is not None:
            settings = {"sanitize": asdict(job.sanitize) if job.sanitize is not None else None,
                        "engine": job.engine, "limits": asdict(job.limits) if job.limits is not None else None}
            follow = Follow(follow_folder, settings, home=home)
        return cls(interpret=interpret, exact_values=values, store_records=values, pin_autotune=job.pin_autotune,
                   limits=job.limits, repro=(Path(job.repro), Path(job.target).name) if job.repro else None,
                   follow=follow, serialise=follow is not None)


@dataclass
class Installed:
    """One process's tdebug, as its recipe installed it."""

    recipe: Recipe
    sanitizer: Any = None  # sanitize.session.SanitizerSession or sanitize.symbolic.SymbolicSession
    follower: Any = None  # runtime.follow.Follower
    repro: Any = None  # runtime.reproducers.ReproWriter
    listeners: list[Part] = field(default_factory=list)

    @property
    def state(self) -> patches.State:
        """The interpreter's launch state: the autotune config asked for, the launches run."""
        return patches.STATE

    @property
    def launches(self) -> list[patches.LaunchRecord]:
        return patches.STATE.launches

    @property
    def recorder(self) -> stores.StoreRecorder | None:
        return stores.RECORDER if stores.RECORDER.installed else None

    @staticmethod
    def faults() -> list[BaseException]:
        """Errors tdebug's own code raised inside a patch since the last call (each reported once)."""
        return take_faults()


def install(recipe: Recipe, sanitizer: Part | None = None, listeners: Iterable[Part] = ()) -> Installed:
    """Install the recipe's parts, the sanitizer and the listeners; what was installed, held for the process's code."""
    installed = Installed(recipe, sanitizer=sanitizer, listeners=list(listeners))
    interpret = recipe.interpret
    if interpret:
        keep_freed_memory()
        patches.install(exact_values=recipe.exact_values)
        if recipe.store_records:
            stores.install()
        patches.clamp_configs(recipe.clamp_config)
    elif recipe.pin_autotune:
        patches.pin_autotune()
    if sanitizer is not None:
        sanitizer.install()
    for part in installed.listeners:
        part.install()
    if not interpret:  # a GPU mode: what follows wraps the interpreter's launches
        return installed
    checked = sanitizer if hasattr(sanitizer, "case_findings") else None  # tdebug's own, not the symbolic one
    if recipe.limits is not None:
        from ..interpreter.hooks import limits

        limits.install(limits.Limits(recipe.limits.max_programs, recipe.limits.max_bytes))
    if recipe.repro is not None:
        from .reproducers import ReproWriter

        folder, label = recipe.repro
        installed.repro = ReproWriter(folder, label=label)
        installed.repro.install(checked)
    if recipe.follow is not None:
        from .follow import Follower

        follow = recipe.follow
        follow.folder.mkdir(exist_ok=True)
        installed.follower = Follower(follow.folder, sanitizer, follow.settings, home=follow.home, active=follow.active)
        installed.follower.install()
    if recipe.serialise:
        from .follow import serialise_launches

        serialise_launches()
    freeze_installed_objects()
    return installed
