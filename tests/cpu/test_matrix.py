"""The detection matrix against the bugs' expected detectors: every bug caught by what its BUG.caught_by
says, every fixed kernel clean under every detector this machine has. A detector that regresses fails here."""

from __future__ import annotations

from pathlib import Path

import pytest

from tdebug.catalogue.files import kernel_files
from tdebug.exercises.matrix import (
    CAUGHT,
    MISSED,
    NA,
    Cell,
    Matrix,
    Row,
    disagreements,
    expected,
    false_positives,
    run_matrix,
    to_markdown,
    to_text,
    unavailable_detectors,
)
from tdebug.exercises.workspace import find_bug, load_bugs

ROOT = Path(__file__).resolve().parents[2]
BUGS = load_bugs(ROOT)
KERNELS = kernel_files(ROOT)
CPU_DETECTORS = [d for d in ("check", "lint", "sanitize", "symbolic") if d not in unavailable_detectors()]
# triton-viz's symbolic sanitizer flags these correct kernels (their K loop's remainder mask, on a K that is
# not a multiple of BLOCK_K): a false positive of the tool, shown in the matrix, never counted as a catch.
KNOWN_SYMBOLIC_FALSE_POSITIVES = {"kernels/matmul.py", "kernels/matmul_bias_relu.py", "kernels/matmul_pruned.py"}


def _explain(matrix: Matrix) -> str:
    return "\n".join(disagreements(matrix)) + "\n\n" + to_text(matrix)


def test_every_bug_is_caught_by_its_expected_cpu_detectors():
    """Bugs only: each runs under the detectors its BUG.caught_by names (the cheap half of the matrix)."""
    matrix = run_matrix(BUGS, [], CPU_DETECTORS, quick=True, seed=0, expected_only=True)
    assert not disagreements(matrix), _explain(matrix)
    for row in matrix.rows:
        b = row.bug
        if b.gpu_only:
            assert all(c.status == NA for c in row.cells.values()), "a GPU-only bug is n/a on the CPU, and says why"
            assert all("GPU-only" in c.note for c in row.cells.values())
        elif not b.expects_clean:
            assert any(c.status == CAUGHT for c in row.cells.values()), f"{row.label}: no CPU detector caught it"


def test_fixed_kernels_of_symbolic_catches_are_clean_under_symbolic():
    """A bug's catch by triton-viz is evidence only if its fixed kernel is clean under triton-viz. (The check
    and the interpreter sanitizer on every fixed kernel: tests/cpu/test_catalogue.py; all of it: the slow
    tests below.)"""
    if "symbolic" not in CPU_DETECTORS:
        pytest.skip(unavailable_detectors()["symbolic"])
    bugs = [b for b in BUGS if "symbolic" in b.caught_by]
    kernels = sorted({b.fixes for b in bugs})
    matrix = run_matrix(bugs, kernels, ["symbolic"], quick=True, seed=0)
    assert not disagreements(matrix), _explain(matrix)
    assert not false_positives(matrix), _explain(matrix)


def _assert_matrix(matrix: Matrix) -> None:
    assert not disagreements(matrix), _explain(matrix)
    flagged = {row.label for row, _, _ in false_positives(matrix)}
    assert flagged <= KNOWN_SYMBOLIC_FALSE_POSITIVES, _explain(matrix)
    for row in matrix.rows:
        if row.kind == "kernel":
            own = [row.cells[d].status for d in CPU_DETECTORS if d in row.cells and d not in ("symbolic",)]
            assert set(own) <= {MISSED}, f"{row.label}: {own}\n" + _explain(matrix)


@pytest.mark.slow
def test_full_matrix_every_bug_and_fixed_kernel_under_every_detector():
    _assert_matrix(run_matrix(None, None, None, quick=True, seed=0))


@pytest.mark.slow
def test_full_matrix_with_the_full_case_matrix():
    _assert_matrix(run_matrix(None, None, CPU_DETECTORS, quick=False, seed=1))


# -- the bookkeeping, on made-up results -------------------------------------------------------------------

def _row(ident: str, **cells: Cell) -> Row:
    b = find_bug(ident, BUGS)
    return Row("bug", b.path, b, dict(cells))


def test_expectations_follow_caught_by():
    grid = _row("3")  # check, sanitize:unwritten, lint
    assert expected(grid, "check") == (CAUGHT, ())
    assert expected(grid, "sanitize") == (CAUGHT, ("unwritten",))
    assert expected(grid, "symbolic") is None  # a bonus catch would be fine
    kernel = Row("kernel", KERNELS[0])
    assert all(expected(kernel, d) == (MISSED, ()) for d in ("check", "sanitize", "symbolic", "gpu:memcheck"))
    clean = _row("13")
    assert expected(clean, "check") == (MISSED, ())


def test_disagreements_name_regressions_and_false_positives():
    rows = [
        _row("3", check=Cell("check", CAUGHT), sanitize=Cell("sanitize", CAUGHT, kinds=("bounds",)),
             lint=Cell("lint", MISSED)),
        Row("kernel", KERNELS[0], None, {"sanitize": Cell("sanitize", CAUGHT, kinds=("race",), note="x")}),
        _row("13", check=Cell("check", MISSED)),
        _row("16", check=Cell("check", NA, note="GPU-only bug")),
    ]
    problems = disagreements(Matrix(rows, ["check", "lint", "sanitize"], {}))
    text = "\n".join(problems)
    assert "03_matmul_hardcoded_grid.py: sanitize found bounds but not unwritten" in text
    assert "03_matmul_hardcoded_grid.py: lint missed it" in text
    assert f"kernels/{KERNELS[0].name}: sanitize flagged a fixed kernel: race" in text
    assert "13_" not in text and "16_" not in text
    assert len(problems) == 3


def test_markdown_table_marks_expected_detectors():
    rows = [_row("3", check=Cell("check", CAUGHT, 2.0), lint=Cell("lint", CAUGHT),
                 sanitize=Cell("sanitize", CAUGHT, 3.25, ("unwritten",))),
            Row("kernel", KERNELS[0], None, {"check": Cell("check", MISSED, 1.0), "lint": Cell("lint", MISSED),
                                             "sanitize": Cell("sanitize", MISSED, 1.5)})]
    md = to_markdown(Matrix(rows, ["check", "lint", "sanitize"], {"gpu:memcheck": "needs a CUDA GPU"}), ROOT)
    assert "| file | check | lint | sanitize |" in md
    assert "| `bugs/03_matmul_hardcoded_grid.py` | **caught** 2.0 s | **caught** | **caught (unwritten)** 3.2 s |" in md
    assert f"| `kernels/{KERNELS[0].name}` | clean 1.0 s | clean | clean 1.5 s |" in md
    assert "every cell agrees" in md and "DISAGREEMENTS" not in md
