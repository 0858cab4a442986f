"""Kernels as real code writes them (tests/cpu/data/reach_scenarios.py): builtin aliases, block pointers,
pointer tables, spin locks, and scripts that carry their own @triton_viz.trace, under the sanitizer."""

from pathlib import Path

import numpy as np
import pytest
from triton.runtime import interpreter

from tdebug.sanitize import sanitize_file
from tdebug.sanitize.locks import SPIN_LIMIT, LockNeverReleased, LockOrder

SCENARIOS = Path(__file__).parent / "data" / "reach_scenarios.py"
needs_block_pointers = pytest.mark.skipif(not hasattr(interpreter, "BlockPointerHandle"),
                                          reason="this Triton removed block pointers (3.9: make_block_ptr raises)")


def _triton_viz_imports() -> bool:
    try:
        import triton_viz  # noqa: F401
    except (ImportError, AttributeError):  # triton-viz 3.0 does not import on Triton 3.9
        return False
    return True


def sanitize(name: str):
    result = sanitize_file(SCENARIOS, kind="script", argv=[name], timeout=180)
    assert not result.fatal, result.fatal
    (case,) = result.cases
    return case


def by_check(case, check: str):
    return [f for f in case.findings if f.check == check]


def source_line(f) -> str:
    return SCENARIOS.read_text().splitlines()[f.line - 1]


@pytest.mark.parametrize("name", ["aliases", pytest.param("block_checked", marks=needs_block_pointers),
                                  "grouped_gemm", "lock_shared"])
def test_correct_kernels_are_clean(name):
    case = sanitize(name)
    assert case.status == "pass", [f.message for f in case.findings]
    assert case.findings == []


def test_libdevice_function_through_an_alias():
    case = sanitize("libdevice_alias")
    assert case.status == "pass", [f.message for f in case.findings]


@needs_block_pointers
def test_block_pointer_without_boundary_check_is_a_bounds_finding_not_a_crash():
    case = sanitize("block_unchecked")
    assert by_check(case, "exception") == []  # tdebug's own check used to raise on the block pointer's mask
    bounds = {f.tensor: f for f in by_check(case, "bounds")}
    assert set(bounds) == {"q_ptr", "k_ptr", "s_ptr"}
    q = bounds["q_ptr"]
    assert q.message.startswith("block-pointer load without boundary_check on dims 0, 1")
    assert q.masked is False and q.pids == [(2, 0, 0)]  # only the last row block runs past q
    assert q.indices[0] == "'q_ptr' element 720 (of 720)"
    assert "tl.load(q_block)" in source_line(q)
    assert bounds["s_ptr"].message.startswith("block-pointer store without boundary_check")


def test_stale_pointer_in_a_pointer_table_names_the_table_entry():
    case = sanitize("grouped_gemm_stale")
    (f,) = by_check(case, "bounds")  # the live tensors behind the other entries are in bounds
    assert f.tensor == "a_ptrs"
    assert "through the pointer 'a_ptrs'[1] = 0x" in f.message
    assert "points into no live tensor (freed, or never allocated)" in f.message
    assert "x = tl.load(a +" in source_line(f)
    assert case.findings == [f]


def test_tensors_reached_through_a_pointer_table_are_named_as_the_launcher_holds_them():
    case = sanitize("grouped_gemm_shared_output")
    races = by_check(case, "race")
    assert races and {f.tensor for f in races} == {"group_c[0]"}  # not an argument: found in the launcher
    assert all(tuple(f.tensor_shape) == (33, 20) for f in races)
    assert by_check(case, "bounds") == []


@pytest.mark.parametrize("name", ["lock_none", "lock_per_program"])
def test_accumulation_without_a_shared_lock_races(name):
    case = sanitize(name)
    races = by_check(case, "race")
    assert {f.tensor for f in races} == {"partial_ptr"}
    assert any("read/write race" in f.message for f in races)
    assert any("write/write race" in f.message for f in races)


def test_a_lock_never_released_is_the_kernels_finding_not_a_hang_nor_tdebugs_error():
    case = sanitize("lock_leak")
    (f,) = [f for f in case.findings if "spin lock never released" in f.message]
    assert "program 4 spins on a lock held by program 0" in f.message  # rows 0 and 4 share lock 0
    assert "tl.atomic_cas(lock, 0, 1)" in source_line(f)


def test_kernel_with_its_own_triton_viz_trace_is_sanitized_by_tdebug():
    if not _triton_viz_imports():
        pytest.skip("triton-viz does not import with this Triton")
    case = sanitize("triton_viz_traced")
    (f,) = by_check(case, "bounds")
    assert f.source == "tdebug" and f.tensor == "x_ptr" and f.masked is False
    assert f.count == 28  # 128 lanes over 100 elements
    assert case.status == "fail"


def test_lock_orders_only_what_it_protects():
    order = LockOrder()
    shadow = type("Shadow", (), {"elements": 4})()
    elems = np.arange(4)
    order.enter(0, 3)
    order.acquire(0x100)
    order.stamp(shadow, "writer", elems[:2])  # inside the critical section
    order.release(0x100)
    order.stamp(shadow, "writer", elems[2:])  # after the release
    order.enter(1, 3)
    order.acquire(0x100)
    ordered = order.ordered(shadow, "writer", elems, np.zeros(4, dtype=np.int32))
    assert ordered.tolist() == [True, True, False, False]
    order.release(0x100)
    order.enter(2, 3)
    order.acquire(0x200)  # another lock publishes nothing of programs 0 and 1
    assert not order.ordered(shadow, "writer", elems, np.zeros(4, dtype=np.int32)).any()


def test_spinning_on_a_lock_nobody_releases_is_a_deadlock_not_a_hang():
    order = LockOrder()
    order.enter(0, 2)
    lock = np.array([0x100], dtype=np.uint64)
    order.after_cas(lock, np.array([0]), np.array([1]), np.array([0]))  # program 0 takes it, never releases
    order.enter(1, 2)
    with pytest.raises(LockNeverReleased, match="program 1 spins on a lock held by program 0"):
        for _ in range(SPIN_LIMIT):
            order.after_cas(lock, np.array([0]), np.array([1]), np.array([1]))
