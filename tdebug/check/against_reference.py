"""`tdebug check` as a function: a catalogue file against its reference over the adversarial case matrix."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..runtime.harness import run_job
from ..runtime.job import Job, Plan, fresh_seed
from ..runtime.results import JobResult


def check_file(path: str | Path, *, quick: bool = False, device: str = "cpu", seed: int | None = None,
               timeout: float = 120.0, reference_from: str | Path | None = None,
               on_event: Callable[[str, dict], None] | None = None, guard: bool | None = None,
               dtypes: list[str] | None = None, layouts: list[str] | None = None,
               shapes: list[tuple[int, ...]] | None = None, repro: str | None = None) -> JobResult:
    """Run every case of the file's SPEC (every autotune config separately) with poisoned outputs.

    device: "cpu" runs under the interpreter with tdebug's patches; "cuda" runs the compiled kernels
    (guard bands on by default there). reference_from: a file whose reference and make_inputs judge
    this one (an exercise copy is judged by its fixed kernel's reference, not its own).
    """
    job = Job(
        target=str(Path(path).resolve()), kind="spec", lint=True,
        plan=Plan(quick=quick, device=device, seed=fresh_seed() if seed is None else seed,
                  dtypes=dtypes, layouts=layouts, shapes=shapes),
        reference_from=str(Path(reference_from).resolve()) if reference_from else None,
        guard=(device == "cuda") if guard is None else guard,
        # On a GPU too, each case runs its own autotune config (a config that does not fit is skipped).
        pin_autotune=device == "cuda",
        repro=repro,  # a folder (runtime/reproducers.prepare_root): a reproducer per failing launch
    )
    mode = "interpret" if device == "cpu" else "gpu"
    return run_job(job, mode=mode, timeout=timeout, on_event=on_event)
