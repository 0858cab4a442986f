"""The detection matrix: every bug and every fixed kernel against every detector this machine has.

A cell says what a detector reported for a file (caught / missed / n/a / error, the kinds of findings,
the seconds it took). For a bug the expectation is its BUG.caught_by; for a fixed kernel it is silence
from every detector (no false positives). `disagreements` lists where the two differ, so a detector
that regresses fails the test that asserts the matrix.

How each detector runs a bug: first on the bug's own case (BUG.shape/dtype/layout, every autotune
config for the check), then, when that shows nothing, on the quick case matrix; a bug with
story_inputs (inputs a correct kernel must refuse) also gets a story launch. A fixed kernel runs the
quick case matrix (or the full one).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from ..catalogue.files import kernel_files, repo_root
from ..runtime import device as device_mod
from ..runtime.files import write_output
from .detectors import CAUGHT, ERROR, MISSED, Options, Run, lint_of, run_check, run_sanitizer, story_job
from .workspace import BugEntry, load_bugs

DETECTORS = ("check", "lint", "sanitize", "symbolic", "bench",
             "gpu:memcheck", "gpu:initcheck", "gpu:racecheck", "gpu:debug", "gpu:guard", "gpu:sanitize")
GPU_ONLY_DETECTORS = ("bench", "gpu:memcheck", "gpu:initcheck", "gpu:racecheck", "gpu:debug", "gpu:guard",
                      "gpu:sanitize")
NA, SKIPPED = "n/a", "skipped"
# Third-party detectors: their false positives on correct kernels are reported, not counted as disagreements.
ADVISORY = ("symbolic",)


@dataclass
class Cell:
    detector: str
    status: str  # caught, missed, n/a, error, skipped
    seconds: float = 0.0
    kinds: tuple[str, ...] = ()  # e.g. ("bounds", "unwritten") for the sanitizers, ("fail",) for check
    note: str = ""


@dataclass
class Row:
    kind: str  # "bug" or "kernel"
    path: Path
    bug: BugEntry | None = None
    cells: dict[str, Cell] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"{self.path.parent.name}/{self.path.name}"


@dataclass
class Matrix:
    rows: list[Row]
    detectors: list[str]
    unavailable: dict[str, str]  # detector -> why it cannot run here
    seed: int = 0
    quick: bool = True
    seconds: float = 0.0
    device: str = "cpu"


# -- what this machine offers -----------------------------------------------------------------------------

def unavailable_detectors() -> dict[str, str]:
    """detector -> the reason it cannot run on this machine (absent: it can)."""
    out: dict[str, str] = {}
    gpu = device_mod.resolve() is device_mod.Device.CUDA
    for d in GPU_ONLY_DETECTORS:
        if not gpu:
            out[d] = "needs a CUDA GPU"
    if gpu:
        from ..sanitize.compute_sanitizer import find_compute_sanitizer

        if find_compute_sanitizer() is None:
            for d in ("gpu:memcheck", "gpu:initcheck", "gpu:racecheck", "gpu:sanitize"):
                out[d] = "compute-sanitizer not found"
        out["bench"] = "not automated in the matrix: compare with tdebug bench FILE and its fixed kernel"
    from ..interpreter.versions import triton_viz_problem

    problem = triton_viz_problem()
    if problem:
        out["symbolic"] = problem
    return out


# -- expectations ---------------------------------------------------------------------------------------

def expected(row: Row, detector: str) -> tuple[str, tuple[str, ...]] | None:
    """(status, kinds) a detector should report for a row, or None where nothing is expected (a bonus
    catch is fine: a bug may be caught by more detectors than it lists)."""
    if row.kind == "kernel" or (row.bug is not None and row.bug.expects_clean):
        return MISSED, ()
    bug = row.bug
    assert bug is not None
    if detector == "sanitize":
        kinds = tuple(d.split(":", 1)[1] for d in bug.caught_by if d.startswith("sanitize:"))
        return (CAUGHT, kinds) if kinds else None
    if detector in bug.caught_by:
        return CAUGHT, ()
    return None


def _kernel_row(matrix: Matrix, bug: BugEntry) -> Row | None:
    return next((r for r in matrix.rows if r.kind == "kernel" and r.path == bug.fixes), None)


def false_positives(matrix: Matrix) -> list[tuple[Row, str, tuple[str, ...]]]:
    """(row, detector, kinds) for every correct kernel an advisory (third-party) detector flagged."""
    out = []
    for row in matrix.rows:
        correct = row.kind == "kernel" or (row.bug is not None and row.bug.expects_clean)
        for detector, cell in row.cells.items():
            if correct and detector in ADVISORY and cell.status == CAUGHT:
                out.append((row, detector, cell.kinds))
    return out


def not_evidence(matrix: Matrix, row: Row, detector: str) -> bool:
    """A bug 'caught' by an advisory detector that flags its fixed kernel too: the catch proves nothing."""
    if row.bug is None or detector not in ADVISORY:
        return False
    fixed = _kernel_row(matrix, row.bug)
    return fixed is not None and detector in fixed.cells and fixed.cells[detector].status == CAUGHT


def disagreements(matrix: Matrix) -> list[str]:
    """Every cell that contradicts its expectation, as a sentence. An advisory detector's flag on a correct
    kernel is a false positive of that tool (see false_positives), not a disagreement, unless a bug counts
    on that detector to catch it."""
    problems: list[str] = []
    for row in matrix.rows:
        for detector, cell in row.cells.items():
            want = expected(row, detector)
            if want is None or cell.status in (NA, SKIPPED):
                continue
            status, kinds = want
            if cell.status == ERROR:
                problems.append(f"{row.label}: {detector} could not run: {cell.note}")
            elif status == CAUGHT and cell.status != CAUGHT:
                problems.append(f"{row.label}: {detector} missed it (expected by BUG.caught_by)")
            elif status == CAUGHT and not set(kinds) <= set(cell.kinds):
                problems.append(f"{row.label}: {detector} found {', '.join(cell.kinds) or 'nothing'} but not "
                                f"{', '.join(sorted(set(kinds) - set(cell.kinds)))}")
            elif status == CAUGHT and not_evidence(matrix, row, detector):
                problems.append(f"{row.label}: {detector} flags its fixed kernel {row.bug.kernel} too, so its "
                                "catch is no evidence")
            elif status == MISSED and cell.status == CAUGHT and detector not in ADVISORY:
                what = "fixed kernel" if row.kind == "kernel" else "correct kernel (caught_by: clean)"
                problems.append(f"{row.label}: {detector} flagged a {what}: {', '.join(cell.kinds)}"
                                + (f" ({cell.note})" if cell.note else ""))
    for row in matrix.rows:
        if row.kind != "bug" or row.bug is None or row.bug.expects_clean or row.bug.gpu_only:
            continue
        if any(d not in row.cells for d in DETECTORS if d not in GPU_ONLY_DETECTORS):
            continue  # a subset of the CPU detectors ran (--detector): the cells above say it all
        ran = [c for d, c in row.cells.items() if d not in GPU_ONLY_DETECTORS and c.status in (CAUGHT, MISSED)
               and not not_evidence(matrix, row, d)]
        if ran and not any(c.status == CAUGHT for c in ran):
            problems.append(f"{row.label}: no CPU detector caught it")
    return problems


# -- running detectors ----------------------------------------------------------------------------------

def _cell(run: Run) -> Cell:
    return Cell(run.detector, run.status, run.seconds, run.kinds, run.note)


def _gpu_cell(detector: str, row: Row, opts: Options) -> Cell:
    """compute-sanitizer tools, TRITON_DEBUG asserts and guard bands, on a GPU."""
    from ..sanitize import sanitize_job

    started = time.perf_counter()
    bug = row.bug
    single = bug is not None and bug.shape is not None
    job_kwargs = ({"single": True, "shape": bug.shape, "dtype": bug.dtype, "layout": bug.layout,
                   "config": bug.config} if single else {"quick": opts.quick})
    job = sanitize_job(row.path, "spec", seed=opts.the_seed(), **job_kwargs)
    if bug is not None and bug.has_story_inputs and detector != "gpu:guard":
        job = story_job(row.path, bug, opts, "tdebug")  # the story's bad inputs, on the GPU
    if detector in ("gpu:memcheck", "gpu:initcheck", "gpu:racecheck"):
        from ..sanitize.compute_sanitizer import SOURCE, find_compute_sanitizer, run_tool

        run = run_tool(job, detector.split(":", 1)[1], find_compute_sanitizer() or "compute-sanitizer",
                       timeout=opts.timeout)
        kinds = tuple(sorted({f.check for c in run.result.cases for f in c.findings if f.source == SOURCE}))
        return Cell(detector, CAUGHT if kinds else MISSED, time.perf_counter() - started, kinds)
    if detector == "gpu:sanitize":  # what `tdebug sanitize --device cuda` runs: both engines, merged
        from ..sanitize.combined import RUN_FAILURES, sanitize_combined

        combined = sanitize_combined(job, ["memcheck", "initcheck"], timeout=opts.timeout)
        kinds = tuple(sorted({f.check for c in combined.result.cases for f in c.findings
                              if f.source in ("compute-sanitizer", "tdebug") and f.check not in RUN_FAILURES}))
        note = combined.notes[0][:200] if combined.notes else ""
        return Cell(detector, CAUGHT if kinds else MISSED, time.perf_counter() - started, kinds, note)
    if detector == "gpu:debug":
        from ..sanitize.gpu_debug import run_debug

        result = run_debug(job, timeout=opts.timeout, tee=False)
        kinds = tuple(sorted({c.status for c in result.cases if c.status in ("assert", "overflow")}))
        return Cell(detector, CAUGHT if kinds else MISSED, time.perf_counter() - started, kinds)
    if detector == "gpu:guard":
        from ..check.against_reference import check_file

        kwargs = ({"shapes": [bug.shape], "dtypes": [bug.dtype], "layouts": [bug.layout]} if single
                  else {"quick": opts.quick})
        result = check_file(row.path, device="cuda", guard=True, seed=opts.the_seed(), timeout=opts.timeout,
                            **kwargs)
        kinds = tuple(sorted({f.check for c in result.cases for f in c.findings if f.source == "guard"}))
        return Cell(detector, CAUGHT if kinds else MISSED, time.perf_counter() - started, kinds)
    return Cell(detector, NA, 0.0, (), "not automated in the matrix")


def run_cell(row: Row, detector: str, opts: Options) -> list[Cell]:
    """One detector on one row (the check also yields the lint cell)."""
    try:
        if detector in ("check", "lint"):
            check = run_check(row.path, row.bug, opts)
            return [_cell(check), _cell(lint_of(check))]
        if detector == "sanitize":
            return [_cell(run_sanitizer(row.path, row.bug, opts, "tdebug"))]
        if detector == "symbolic":
            return [_cell(run_sanitizer(row.path, row.bug, opts, "symbolic"))]
        return [_gpu_cell(detector, row, opts)]
    except Exception as e:  # noqa: BLE001 - one broken cell must not take the matrix down
        return [Cell(detector, ERROR, 0.0, (), f"{type(e).__name__}: {e}")]


# -- the whole matrix -----------------------------------------------------------------------------------

def build_rows(bugs: Sequence[BugEntry] | None = None, kernels: Sequence[Path] | None = None) -> list[Row]:
    rows = [Row("bug", b.path, b) for b in (load_bugs() if bugs is None else bugs)]
    rows += [Row("kernel", Path(k).resolve()) for k in (kernel_files() if kernels is None else kernels)]
    return rows


def planned_detectors(row: Row, detectors: Sequence[str], expected_only: bool) -> list[str]:
    """The detectors to run for a row; with expected_only, a bug runs only the ones its BUG.caught_by names."""
    if not expected_only or row.kind == "kernel" or row.bug is None or row.bug.expects_clean:
        return list(detectors)
    return [d for d in detectors if expected(row, d) is not None]


def run_matrix(bugs: Sequence[BugEntry] | None = None, kernels: Sequence[Path] | None = None,
               detectors: Sequence[str] | None = None, *, quick: bool = True, seed: int = 0,
               jobs: int | None = None, timeout: float = 120.0, expected_only: bool = False,
               on_cell: Callable[[Row, Cell], None] | None = None) -> Matrix:
    """Run the matrix (or the subset given). jobs: cells run at once (each is a child process)."""
    started = time.perf_counter()
    detectors = list(detectors or DETECTORS)
    unknown = [d for d in detectors if d not in DETECTORS]
    if unknown:
        raise ValueError(f"unknown detector(s) {', '.join(unknown)}; choose from {', '.join(DETECTORS)}")
    if "lint" in detectors and "check" not in detectors:
        detectors.insert(detectors.index("lint"), "check")  # lint comes with the check's run
    rows = build_rows(bugs, kernels)
    missing = unavailable_detectors()
    opts = Options(quick=quick, seed=seed, timeout=timeout, stop_early=True)
    tasks: list[tuple[Row, str]] = []
    for row in rows:
        wanted = planned_detectors(row, detectors, expected_only)
        for d in detectors:
            if d in missing:
                row.cells[d] = Cell(d, NA, 0.0, (), missing[d])
            elif row.bug is not None and row.bug.gpu_only and d not in GPU_ONLY_DETECTORS:
                row.cells[d] = Cell(d, NA, 0.0, (), "GPU-only bug: " + row.bug.symptom)
            elif d not in wanted:
                row.cells[d] = Cell(d, SKIPPED)
            elif d == "bench":
                row.cells[d] = Cell(d, NA, 0.0, (), missing.get(d, "not automated in the matrix"))
            elif d == "lint" and "check" in wanted:
                continue  # filled by the check's run
            else:
                tasks.append((row, "check" if d == "lint" else d))
    unique: dict[tuple[int, str], tuple[Row, str]] = {(id(r), d): (r, d) for r, d in tasks}
    tasks = list(unique.values())

    def work(task: tuple[Row, str]) -> None:
        row, detector = task
        for cell in run_cell(row, detector, opts):
            if cell.detector in detectors:
                row.cells[cell.detector] = cell
                if on_cell is not None:
                    on_cell(row, cell)

    workers = max(1, jobs or os.cpu_count() or 1)
    # Long cells first, so the pool does not end waiting on one of them.
    tasks.sort(key=lambda t: (t[1] not in ("check", "sanitize"), t[0].kind != "bug"))
    pool = ThreadPoolExecutor(max_workers=workers)
    try:
        list(pool.map(work, tasks))
    except KeyboardInterrupt:
        pool.shutdown(wait=False, cancel_futures=True)  # cells in flight finish on their own
        raise
    pool.shutdown()
    for row in rows:
        row.cells = {d: row.cells[d] for d in detectors if d in row.cells}
    return Matrix(rows=rows, detectors=detectors, unavailable=missing, seed=seed, quick=quick,
                  seconds=time.perf_counter() - started, device=device_mod.resolve().value)


# -- rendering -----------------------------------------------------------------------------------------

def cell_text(row: Row, cell: Cell, markdown: bool = False, matrix: Matrix | None = None) -> str:
    if cell.status in (NA, SKIPPED):
        return cell.status
    if cell.status == ERROR:
        return "error"
    if cell.status == CAUGHT:
        word = "flagged" if row.kind == "kernel" or (row.bug and row.bug.expects_clean) else "caught"
    else:
        word = "clean" if row.kind == "kernel" or (row.bug and row.bug.expects_clean) else "missed"
    if cell.status == CAUGHT and matrix is not None and not_evidence(matrix, row, cell.detector):
        word += "†"
    kinds = [k for k in cell.kinds if cell.detector in ("sanitize", "symbolic", "gpu:sanitize")]
    text = word + (f" ({', '.join(kinds)})" if kinds else "")
    want = expected(row, cell.detector)
    if markdown and want is not None and want[0] == CAUGHT:
        text = f"**{text}**"
    if cell.seconds >= 0.05:
        text += f" {cell.seconds:.1f} s"
    return text


NAN_SYMPTOM = re.compile(r"\bnan\b|\binf\b|infinit", re.IGNORECASE)


def nan_note(matrix: Matrix) -> str:
    """Whether the sanitizer's nan check caught the bugs whose symptom is a NaN or an Inf."""
    parts = []
    for row in matrix.rows:
        if row.bug is None or not NAN_SYMPTOM.search(row.bug.symptom):
            continue
        cell = row.cells.get("sanitize")
        kinds = cell.kinds if cell is not None else ()
        parts.append(f"`{row.label}`: " + ("caught by the nan check" if "nan" in kinds else
                                           "missed by the nan check" + (f" (`sanitize` catches it as "
                                                                        f"{', '.join(kinds)})" if kinds else "")))
    return ("- NaN/Inf symptoms: " + "; ".join(parts) + "." if parts else
            "- NaN/Inf symptoms: none in `bugs/`.") + (" The nan check's own cases (an fp16 overflow, an exp "
                                                        "overflow, a 0/0, intentional infinities) are in "
                                                        "tests/cpu/test_precision.py.")


def to_markdown(matrix: Matrix, root: Path | None = None) -> str:
    root = root or repo_root()
    problems = disagreements(matrix)
    machine = "a CUDA GPU" if matrix.device == "cuda" else "a CPU-only machine (no GPU)"
    lines = [
        "# Detection matrix",
        "",
        f"Generated by `tdebug bugs matrix` on {machine}, {time.strftime('%Y-%m-%d')}, seed {matrix.seed}, "
        f"{'quick' if matrix.quick else 'full'} case matrix, {matrix.seconds:.0f} s in all.",
        "",
        "Rows: every bug in `bugs/` and every fixed kernel in `kernels/`. Columns: the detectors. A cell says what "
        "the detector reported and how long it took: for a bug, *caught* or *missed* (**bold**: the bug's "
        "expected detectors, its `BUG.caught_by`); for a fixed kernel (and bug 13, whose kernel is right), "
        "*clean* or *flagged* (a false positive); *n/a*: the detector cannot run here; *skipped*: not run.",
        "",
        "Detectors: `check`: the reference check with poisoned outputs and adversarial shapes, layouts and "
        "configs; `lint`: the autotune lint (from the check's run); `sanitize`: tdebug's interpreter sanitizer "
        "(bounds, uninit, race, unwritten, assert, overflow, nan: where a NaN/Inf that reaches memory was "
        "first made from finite values); `symbolic`: triton-viz's z3 sanitizer; `bench`: "
        "speed against the fixed kernel (GPU); `gpu:*`: compute-sanitizer tools, TRITON_DEBUG asserts and "
        "guard bands (GPU); `gpu:sanitize`: what `tdebug sanitize --device cuda` runs (memcheck, initcheck and "
        "tdebug's interpreter pass, merged).",
        "",
        "| file | " + " | ".join(matrix.detectors) + " |",
        "|---|" + "---|" * len(matrix.detectors),
    ]
    for row in matrix.rows:
        cells = [cell_text(row, row.cells[d], True, matrix) if d in row.cells else "" for d in matrix.detectors]
        lines.append(f"| `{row.label}` | " + " | ".join(cells) + " |")
    notes = []
    for row in matrix.rows:
        if row.bug is not None and row.bug.gpu_only:
            notes.append(f"- `{row.label}` is GPU-only: {row.bug.symptom}; the CPU detectors cannot reach it "
                         "(it needs tensors of over 2**31 elements).")
        if row.bug is not None and row.bug.expects_clean:
            notes.append(f"- `{row.label}`: the kernel is right (caught_by: clean); the exercise's bug is in "
                         "its user_check, which `tdebug bugs check` judges.")
    notes.append(nan_note(matrix))
    for row, detector, kinds in false_positives(matrix):
        notes.append(f"- `{row.label}`: `{detector}` (a third-party tool) flags this correct kernel "
                     f"({', '.join(kinds)}): a false positive of the tool; † marks the bugs copied from it whose "
                     "catch by the same tool is therefore no evidence.")
    if matrix.unavailable:
        notes += [f"- `{d}`: n/a here, {why}." for d, why in matrix.unavailable.items() if d in matrix.detectors]
    if matrix.device != "cuda" and (root / "docs" / "detection-matrix-h100.md").is_file():
        notes.append("- The GPU columns, measured on an H100: [detection-matrix-h100.md](detection-matrix-h100.md).")
    if notes:
        lines += ["", "Notes:", "", *notes]
    if not problems:
        verdict = "every cell agrees with the bugs' `caught_by`, and tdebug's own detectors flag no correct kernel"
        if false_positives(matrix):
            verdict += " (the third-party tool's false positives are in the notes)"
        verdict += "."
    else:
        verdict = "DISAGREEMENTS:"
    lines += ["", "Expectations: " + verdict, ""]
    lines += [f"- {p}" for p in problems]
    return "\n".join(lines).rstrip() + "\n"


def to_text(matrix: Matrix) -> str:
    """A fixed-width table for the terminal."""
    headers = ["file"] + matrix.detectors
    table = [[row.label] + [cell_text(row, row.cells[d], False, matrix) if d in row.cells else ""
                            for d in matrix.detectors]
             for row in matrix.rows]
    widths = [max(len(r[i]) for r in [headers] + table) for i in range(len(headers))]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in table]
    return "\n".join(lines)


def write_markdown(matrix: Matrix, path: Path) -> Path:
    write_output(path, to_markdown(matrix), "--markdown")
    return path

