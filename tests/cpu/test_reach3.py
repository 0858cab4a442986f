"""Issue 26 on kernels in the style of real code (tests/cpu/data/reach3_scenarios.py): `and`/`not` masks and
dtype.value in jit helpers, written-ness tracked across launches and torch ops, overflow where it reaches an
address."""

from pathlib import Path

import pytest

from tdebug.interpreter.versions import TRITON
from tdebug.sanitize import sanitize_file

SCENARIOS = Path(__file__).parent / "data" / "reach3_scenarios.py"


def sanitize(name: str, checks=None):
    result = sanitize_file(SCENARIOS, kind="script", argv=[name], timeout=240, checks=checks)
    assert not result.fatal, result.fatal
    (case,) = result.cases
    return case


def by_check(case, check: str):
    return [f for f in case.findings if f.check == check]


def line_of(text: str) -> int:
    return next(i for i, line in enumerate(SCENARIOS.read_text().splitlines(), 1) if text in line)


def test_and_masks_dtype_value_quantisation_and_packed_scan_are_clean():
    """FlagGems-style masks with `and`/`not`, a helper reading dtype.value, 8- and 16-bit quantise/dequantise over
    12 seeds with codes equal to the poison pattern, a packed-key scan that wraps: all correct, all clean."""
    case = sanitize("clean")
    assert case.status == "pass", [f.message for f in case.findings]
    assert case.findings == []


def test_and_mask_with_a_wrong_bound_is_a_bounds_finding_at_the_right_elements():
    case = sanitize("wrong_bound")
    (bounds,) = by_check(case, "bounds")
    assert bounds.line == line_of("acc += _to_acc(tl.load(")
    assert bounds.tensor == "X"
    assert bounds.count == 37 * 5  # columns 40..44 of each of the 37 rows
    assert bounds.indices[0] == "element offset 40 from 'X'[0]"


def test_reads_of_what_nothing_wrote_by_a_kernel_and_by_a_torch_op():
    case = sanitize("uninit_reads")
    findings = by_check(case, "uninit")
    kernel = [f for f in findings if f.tensor == "Q"]
    torch_op = [f for f in findings if f.tensor == "Y"]
    assert len(kernel) == 1 and kernel[0].count == 300 and kernel[0].line == line_of("q = tl.load(Q + offs")
    (read,) = torch_op
    assert "scaled_dot_product" in read.message and "rope_kernel" in read.message
    assert read.line == line_of("F.scaled_dot_product_attention(")
    assert read.count == 3 * 16  # the three padding rows of batch 0
    assert all(i[0] == 0 and i[2] < 3 for i in read.indices)


def test_int32_offset_that_overflows_into_an_address_is_reported_with_its_line():
    case = sanitize("offset_overflow")
    (overflow,) = by_check(case, "overflow")
    assert overflow.line == line_of("offs = row * row_stride")
    assert f"line {line_of('tl.store(Y + row * BLOCK')}" in overflow.message
    assert overflow.pids == [(2, 0, 0)]
    assert "address" in overflow.message


@pytest.mark.slow
def test_overflow_all_reports_the_intentional_wrap():
    case = sanitize("clean", checks=["overflow-all"])
    (overflow,) = by_check(case, "overflow")
    assert overflow.line == line_of("return x + y - kx")


def test_comparison_chain_as_the_compiler_reads_it():
    case = sanitize("chained")
    if TRITON >= (3, 9):
        assert case.status == "pass", [f.message for f in case.findings]
        return
    (rejected,) = by_check(case, "unsupported")
    assert "simultaneous multiple comparison" in rejected.message
    assert rejected.line == line_of("lo < x < hi")


@pytest.mark.parametrize("source, expected", [("a and b", "bool_op"), ("not a", "not_op"), ("a or b or c", "bool_op")])
def test_rewrite_replaces_python_operators(source, expected):
    import ast

    from tdebug.interpreter.semantics import boolops

    tree = boolops.rewrite(ast.parse(source))
    assert expected in ast.unparse(tree)
    assert not any(isinstance(n, ast.BoolOp) or (isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not))
                   for n in ast.walk(tree))
