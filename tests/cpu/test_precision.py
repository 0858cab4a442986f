"""Sanitizer precision on scripts (tests/cpu/data/precision_scenarios.py): where a NaN/Inf was born, every
surviving autotune config, unwritten outputs only where the kernel's own masks admit them."""

from pathlib import Path

import pytest

from tdebug.sanitize import sanitize_file

SCENARIOS = Path(__file__).parent / "data" / "precision_scenarios.py"
LINES = SCENARIOS.read_text().splitlines()


def sanitize(*names: str, **options):
    result = sanitize_file(SCENARIOS, kind="script", argv=[",".join(names)], timeout=300, **options)
    assert not result.fatal, result.fatal
    return result


def findings(result, check: str, kernel: str | None = None):
    return [f for c in result.cases for f in c.findings if f.check == check and kernel in (None, f.kernel)]


@pytest.fixture(scope="module")
def nan_run():
    return sanitize("nan_fp16_overflow", "nan_exp_overflow", "nan_zero_div", "nan_intentional", "nan_from_input")


def test_nan_origin_fp16_overflow_points_at_the_multiplication(nan_run):
    (f,) = findings(nan_run, "nan", "square_fp16_kernel")
    assert "sq = x * x" in LINES[f.line - 1]  # the producing line, not the store two lines below
    assert f.message.startswith("Inf first produced here, by a multiplication in float16")
    assert f"store at line {f.line + 2}" in f.message and f.tensor == "y_ptr"
    assert f.pids == [(2, 0, 0)] and f.count == 1  # element 700 lives in program 700 // 256
    assert f.indices == ["lane 188: 300 * 300 = inf"]


def test_nan_origin_exp_overflow_points_at_the_exp(nan_run):
    (f,) = findings(nan_run, "nan", "softmax_no_max_kernel")
    assert "tl.exp(x)" in LINES[f.line - 1]
    assert "Inf first produced here, by tl.exp in float32" in f.message
    assert "as NaN" in f.message  # inf / inf in the division below: stored as NaN
    assert f.pids == [(2, 0, 0)] and f.indices == ["lane 7: exp(100) = inf"]


def test_nan_origin_zero_over_zero_points_at_the_division(nan_run):
    (f,) = findings(nan_run, "nan", "normalize_kernel")
    assert "y = x / total" in LINES[f.line - 1]
    assert f.message.startswith("NaN first produced here, by a division in float32")
    assert f.pids == [(1, 0, 0)] and f.count == 100
    assert f.indices[0] == "lane 0: 0 / 0 = nan"


def test_intentional_infinities_and_input_nans_are_not_reported(nan_run):
    # -inf padding consumed by max/exp, log(0) in masked-off lanes, a NaN that came from the input.
    assert {f.kernel for f in findings(nan_run, "nan")} == {
        "square_fp16_kernel", "softmax_no_max_kernel", "normalize_kernel"}
    assert [f for c in nan_run.cases for f in c.findings if f.check != "nan"] == []


def test_grid_sized_for_the_largest_block_is_caught_under_smaller_configs():
    result = sanitize("grid_for_largest_block")
    assert len(result.cases) == 3  # one run per config
    assert result.cases[0].status == "pass" and "#0 BLOCK=256" in result.cases[0].label
    by_config = {f.config: f for f in findings(result, "unwritten")}
    assert set(by_config) == {"#1 BLOCK=128 warps=4 stages=3", "#2 BLOCK=64 warps=4 stages=3"}
    assert by_config["#1 BLOCK=128 warps=4 stages=3"].count == 1000 - 4 * 128
    f = by_config["#2 BLOCK=64 warps=4 stages=3"]
    assert f.count == 1000 - 4 * 64 and "[256..999]" in f.message
    assert "program (4), just past the grid (4,)" in f.message
    assert "tl.store" in LINES[f.line - 1]
    assert result.notes == []


def test_grid_sized_for_the_smallest_block_is_a_note():
    result = sanitize("grid_for_smallest_block")
    assert [c.status for c in result.cases] == ["pass"] * 3
    (note,) = result.notes
    assert note.check == "note" and note.kernel == "scale_autotuned_kernel"
    assert "grid (16,)" in note.message and "does not depend on its autotune config" in note.message


def test_config_option_runs_one_config_of_a_script():
    result = sanitize("grid_for_largest_block", config=2)
    (case,) = result.cases
    (f,) = findings(result, "unwritten")
    assert f.config.startswith("#2 ") and "#2 BLOCK=64" in case.label


def test_pruned_configs_are_not_run():
    result = sanitize("grid_pruned")
    assert [c.status for c in result.cases] == ["pass", "pass"]  # config #0 (BLOCK=256) is pruned away
    assert ["#1 BLOCK=128" in result.cases[0].label, "#2 BLOCK=64" in result.cases[1].label] == [True, True]


def test_unwritten_tail_is_caught_and_an_unaddressed_scratch_tail_is_not():
    result = sanitize("grid_misses_tail", "scratch_partly_used")
    (f,) = findings(result, "unwritten")
    assert f.kernel == "scale_kernel" and f.count == 1000 - 7 * 128 and "[896..999]" in f.message
    assert [x for x in result.cases[0].findings if x is not f] == []  # the scratch buffer: nothing
