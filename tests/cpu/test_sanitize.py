"""The interpreter sanitizer on small purpose-written kernels (tests/cpu/data/sanitize_scenarios.py)."""

from pathlib import Path

import pytest

from tdebug.sanitize import sanitize_file

SCENARIOS = Path(__file__).parent / "data" / "sanitize_scenarios.py"


def sanitize(name: str):
    result = sanitize_file(SCENARIOS, kind="script", argv=[name], timeout=120)
    assert not result.fatal, result.fatal
    assert len(result.cases) == 1
    return result.cases[0]


def by_check(case, check: str):
    return [f for f in case.findings if f.check == check]


@pytest.mark.parametrize("name", ["transposed_view", "sliced_view", "histogram", "atomic_sum", "autotuned"])
def test_correct_kernels_are_clean(name):
    result = sanitize_file(SCENARIOS, kind="script", argv=[name], timeout=120)
    assert not result.fatal, result.fatal
    assert len(result.cases) == (4 if name == "autotuned" else 1)  # a script runs once per autotune config
    for case in result.cases:
        assert case.status == "pass", [f.message for f in case.findings]
        assert case.findings == []


def test_gather_with_one_bad_index():
    case = sanitize("gather_bad_index")
    (f,) = by_check(case, "bounds")
    assert f.tensor == "w_ptr"
    assert f.kernel == "gather_kernel"
    assert f.pids == [(7, 0, 0)]  # only the program holding the bad token id
    assert f.count == 16  # one row of D=16 lanes
    assert "past the end of 'w_ptr'" in f.message
    assert f.indices[0] == "'w_ptr' element 800 (of 800)"
    assert Path(f.file).name == "sanitize_scenarios.py"
    assert "tl.load(w_ptr" in SCENARIOS.read_text().splitlines()[f.line - 1]


def test_read_one_element_before_the_tensor():
    case = sanitize("read_before_start")
    (f,) = by_check(case, "bounds")
    assert "before the start of 'x_ptr'" in f.message
    assert f.count == 1 and f.pids == [(0, 0, 0)]
    assert f.indices == ["'x_ptr' element -1 (of 300)"]
    assert f.masked is True  # the load had a mask; it let the bad lane through


def test_unmasked_2d_tile_is_reported_not_a_segfault():
    # Plain TRITON_INTERPRET=1 dies with SIGSEGV on this one; the sanitizer masks bad lanes off and reports.
    case = sanitize("unmasked_2d")
    bounds = by_check(case, "bounds")
    assert {f.tensor for f in bounds} == {"x_ptr", "out_ptr"}
    assert all(f.masked is False for f in bounds)
    assert by_check(case, "race")  # column overflow spills into the next row, written by another program


def test_uninitialised_read():
    case = sanitize("uninit")
    (f,) = by_check(case, "uninit")
    assert f.tensor == "out_ptr" and f.count == 1000
    assert list(f.indices[0]) == [0]


def test_write_write_race_between_programs():
    case = sanitize("store_race")
    (f,) = by_check(case, "race")
    assert f.tensor == "total_ptr"
    assert "write/write" in f.message
    assert f.count == 7  # programs 1..7 each overwrite program 0's element


def test_a_race_between_programs_past_16_bit_ids_names_them():
    # The program tables are int16 where every program id fits; 40000 programs need int32.
    case = sanitize("far_programs_race")
    (f,) = by_check(case, "race")
    assert f.tensor == "out_ptr" and "write/write" in f.message
    assert f.pids == [(39997, 0, 0), (39998, 0, 0), (39999, 0, 0)] and f.count == 3


def test_read_write_race_between_programs():
    case = sanitize("read_write_race")
    races = by_check(case, "race")
    assert races and all(f.tensor == "x_ptr" for f in races)
    assert any("read/write" in f.message for f in races)


def test_unwritten_output_when_the_grid_is_too_small():
    case = sanitize("grid_too_small")
    (f,) = by_check(case, "unwritten")
    assert f.tensor == "out_ptr" and f.count == 488
    assert "[512..999]" in f.message


def test_device_assert_fires_with_line_and_program():
    case = sanitize("assert")
    assert case.status == "assert"
    (f,) = by_check(case, "assert")
    assert "x too big" in f.message and "1 of 128 lanes" in f.message
    assert f.pids == [(4, 0, 0)]  # element 613 lives in program 613 // 128
    assert "tl.device_assert" in SCENARIOS.read_text().splitlines()[f.line - 1]


def test_int32_overflow_is_caught():
    case = sanitize("overflow")
    (f,) = by_check(case, "overflow")
    assert "int32 overflow" in f.message and f.pids == [(2, 0, 0)]
    assert "pid * row_stride" in SCENARIOS.read_text().splitlines()[f.line - 1]
