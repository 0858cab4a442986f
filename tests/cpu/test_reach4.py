"""Issue 48 on kernels in the style of real code (tests/cpu/data/reach4_scenarios.py), on both engines: decoupled
look-back through volatile loads, `~x` on unsigned keys, a multi-line atomic_add whose value is broadcast, a loop
counter cast with `.to`, int8 tl.dot, fp8 casts to every fp8 type."""

from pathlib import Path

import pytest

from tdebug.interpreter.batched import prescan
from tdebug.interpreter.versions import TRITON
from tdebug.sanitize.jobs import sanitize_job
from tdebug.sanitize.sweep import sanitize_script

SCENARIOS = Path(__file__).parent / "data" / "reach4_scenarios.py"
ENGINES = ["serial", "batched"]


def sanitize(name: str, executor: str):
    job = sanitize_job(SCENARIOS, "script", argv=[name]).but(executor=executor)
    result = sanitize_script(job, 240, None)
    assert not result.fatal, result.fatal
    (case,) = result.cases
    return case


def line_of(text: str) -> int:
    return next(i for i, line in enumerate(SCENARIOS.read_text().splitlines(), 1) if text in line)


def checks(case) -> list[tuple[str, str | None, int]]:
    return sorted((f.check, f.tensor, f.line) for f in case.findings)


@pytest.mark.parametrize("executor", ENGINES)
def test_correct_kernels_are_clean(executor):
    """Look-back scan, descending radix counts on uint8..uint64, multi-line broadcast atomics, `i.to(tl.int64)`,
    int8 GEMM exact, fp8 e4nv/e5/e4b8/e5b16 casts from fp32/fp16/bf16 as torch's (saturating), e4b15 as compiled
    Triton on sm_90 (ties away from zero, saturating at 1.75), fp8 quantisation: all checked against references
    inside the script."""
    case = sanitize("clean", executor)
    assert case.status == "pass", [f.message for f in case.findings] or case.error
    assert case.findings == []


@pytest.mark.parametrize("executor", ENGINES)
def test_lookback_flag_stored_before_its_value_is_a_race_on_the_value(executor):
    case = sanitize("lookback_flag_first", executor)
    assert checks(case) == [("race", "INCL", line_of("exclusive += tl.load(INCL + look)"))]
    assert "read/write race" in case.findings[0].message


@pytest.mark.parametrize("executor", ENGINES)
def test_a_flag_published_by_an_atomic_before_the_sum_it_guards_is_a_race(executor):
    case = sanitize("chained_sum_flag_first", executor)
    assert checks(case) == [("race", "PARTIAL", line_of("s += tl.load(PARTIAL + pid - 1)"))]


@pytest.mark.parametrize("executor", ENGINES)
def test_lookback_waiting_on_a_flag_nothing_set_is_a_hang_at_the_spin(executor):
    case = sanitize("lookback_waits_on_next", executor)
    (f,) = case.findings
    assert f.line == line_of("flag = tl.load(FLAGS + look, volatile=True)") + 2  # the inner spin's load
    assert "hang: program 0 spins on a volatile load of 'FLAGS' element 1" in f.message
    assert f.check != "race"


@pytest.mark.parametrize("executor", ENGINES)
@pytest.mark.parametrize("name, tensor, line", [
    ("radix_wide_digit", "COUNTS", "tl.atomic_add(COUNTS + pid * 256 + digit"),
    ("atomic_unmasked", "DB", "sem='relaxed')\n"),
    ("counter_unmasked", "X", "v = tl.load(X + row * row_stride + offs)"),
])
def test_seeded_bounds_bugs(executor, name, tensor, line):
    case = sanitize(name, executor)
    if name == "atomic_unmasked":  # the unmasked multi-line call: reported at its first line
        lines = SCENARIOS.read_text().splitlines()
        at = max(i for i, text in enumerate(lines, 1) if "tl.atomic_add(DB" in text)
    else:
        at = line_of(line)
    assert checks(case) == [("bounds", tensor, at)]


@pytest.mark.parametrize("executor", ENGINES)
def test_int8_gemm_without_a_k_mask_and_fp8_quant_with_an_extra_row(executor):
    case = sanitize("int8_k_tail", executor)
    assert {(c, t) for c, t, _ in checks(case)} == {("bounds", "A"), ("bounds", "B")}
    case = sanitize("fp8_extra_row", executor)
    # the extra row reads X past its end too
    assert {(c, t) for c, t, _ in checks(case)} == {("bounds", "X"), ("bounds", "Q"), ("bounds", "S")}


@pytest.mark.parametrize("executor", ENGINES)
def test_int8_dot_into_an_int32_accumulator_without_out_dtype(executor):
    """Triton 3.9 runs it (exact int32); Triton 3.6's front end, compiled alike, stops on an assert: the message
    now says what to write."""
    case = sanitize("int8_dot_into_acc", executor)
    if TRITON >= (3, 9):
        assert case.status == "pass" and case.findings == []
        return
    (f,) = case.findings
    assert "tl.dot of int8 operands into an int32 accumulator needs out_dtype=triton.language.int32" in f.message
    assert f.line == line_of("acc = tl.dot(a, b, acc)  # no out_dtype")


def test_prescan_sends_volatile_loads_to_the_serial_engine():
    import importlib.util

    spec = importlib.util.spec_from_file_location("reach4_scenarios", SCENARIOS)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert prescan.serial_only(module.lookback_scan_kernel) == prescan.VOLATILE
    assert prescan.uses_volatile(module.lookback_scan_kernel)
    assert not prescan.uses_volatile(module.chunked_copy_kernel)
    assert prescan.serial_only(module.int8_gemm_kernel) is None


FAMILIES = Path(__file__).parent / "data" / "reach4_families.py"


def sanitize_family(name: str, executor: str):
    job = sanitize_job(FAMILIES, "script", argv=[name]).but(executor=executor)
    result = sanitize_script(job, 240, None)
    assert not result.fatal, result.fatal
    (case,) = result.cases
    return case


def family_line(text: str) -> int:
    return next(i for i, line in enumerate(FAMILIES.read_text().splitlines(), 1) if text in line)


@pytest.mark.parametrize("executor", ENGINES)
def test_families_paged_kv_moe_align_topk_sorts_dequant_gemms_persistent_descriptors_are_clean(executor):
    case = sanitize_family("clean", executor)
    assert case.status == "pass", [f.message for f in case.findings] or case.error
    assert case.findings == []


@pytest.mark.slow
@pytest.mark.parametrize("executor", ENGINES)
@pytest.mark.parametrize("name, check, tensor, line", [
    ("paged_kv_bug", "bounds", "BLOCK_TABLE", "page = tl.load(BLOCK_TABLE"),
    ("moe_align_bug", "bounds", "COUNTS", "tl.store(COUNTS + tl.arange(0, E + 1), hist)"),
    ("topk_bug", "bounds", "VALS", "tl.store(VALS +"),
    ("int4_gemm_bug", "bounds", "SCALES", "s = tl.load(SCALES +"),
    ("persistent_bug", "race", "C", "tl.store(C + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn"),
    ("radix_sort_bug", "bounds", "KEYS", "k = tl.load(KEYS + o)"),
])
def test_families_seeded_bugs(executor, name, check, tensor, line):
    case = sanitize_family(name, executor)
    (f,) = case.findings
    assert (f.check, f.tensor) == (check, tensor)
    if name == "persistent_bug":  # the second of the file's two such stores: the persistent kernel's
        lines = FAMILIES.read_text().splitlines()
        assert f.line == max(i for i, text in enumerate(lines, 1) if line in text)
    else:
        assert f.line == family_line(line)


@pytest.mark.parametrize("executor", ENGINES)
def test_gather_index_outside_its_source_is_reported_at_the_line(executor):
    case = sanitize_family("gather_bug", executor)
    (f,) = case.findings
    assert "tl.gather index 32 outside the source's 32 elements" in f.message
    assert f.line == family_line("tl.store(Y + o, tl.gather(x, i, 0))")
