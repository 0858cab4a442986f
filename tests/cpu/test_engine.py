"""The batched engine against the serial one: the same outputs bit for bit and the same findings, on every kernel
the suite runs (catalogue, purpose-written scenarios, Liger-Kernel's ops); and which engine runs what."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).parent / "data"
DIFF = DATA / "engine_diff.py"


def _diff(*args: str, timeout: int = 900, **settings: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT), **settings}
    env.pop("TDEBUG_EXECUTOR", None)
    proc = subprocess.run([sys.executable, str(DIFF), *args], capture_output=True, text=True, timeout=timeout,
                          cwd=ROOT, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_scenarios_identical_under_both_engines():
    report = _diff("--scenarios", str(DATA / "engine_scenarios.py"))
    assert report["differences"] == [], report["differences"]
    runs = report["scenarios"]
    # Batched where it can: divergent loops, early returns, branches after stores, one atomic per program ...
    for name in ("divergent_loop", "early_return", "branch_after_store", "atomics", "reductions", "shapes",
                 "grid3d", "nan_origin", "out_of_bounds", "uninitialised", "bf16", "bf16_reductions",
                 "retyped_pointers", "atomic_tickets", "rows_in_place"):
        assert runs[f"scenario_{name}"]["batched_launches"] >= 1, name
    # Spin locks batched: a batch whose programs meet on a lock splits into runs of programs that hold distinct
    # locks; one lock for all (every run one program), a lock found taken, and the rest of a launch after a race
    # between programs, on the serial engine.
    for name in ("group_locks", "group_locks_uneven"):
        assert runs[f"scenario_{name}"]["batched_launches"] == 1 and runs[f"scenario_{name}"]["splits"] >= 1, name
    assert runs["scenario_group_locks"]["findings"] == [] and runs["scenario_ticket_then_lock"]["findings"] == []
    assert runs["scenario_spin_lock"]["batched_launches"] == 0
    assert runs["scenario_ticket_then_lock"]["batched_launches"] == 0
    assert "LockNeverReleased" in runs["scenario_group_lock_never_released"]["error"]
    assert runs["scenario_group_lock_never_released"]["batched_launches"] == 0
    assert set(runs["scenario_group_lock_race"]["findings"]) == {"race"}
    assert runs["scenario_races"]["batched_launches"] == 0
    # (shared_row: the last program's store races with the others' reads in the one batch its `if` no longer splits)
    assert runs["scenario_shared_row"]["batched_launches"] == 0 and runs["scenario_shared_row"]["findings"]
    assert runs["scenario_divergent_loop"]["predicated_loops"] >= 1  # one run to the largest trip count
    assert runs["scenario_divergent_loop"]["splits"] == 0
    # An early return (and an `if` on a per-program value) runs both sides in one batch, each for its programs.
    assert runs["scenario_early_return"]["predicated_ifs"] == 1 and runs["scenario_early_return"]["splits"] == 0
    assert runs["scenario_branch_after_store"]["predicated_ifs"] >= 1
    assert runs["scenario_ignored_rows"]["predicated_ifs"] >= 3 and runs["scenario_ignored_rows"]["splits"] == 0
    assert runs["scenario_labelled_rows"]["predicated_ifs"] >= 2 and runs["scenario_labelled_rows"]["splits"] == 0
    assert runs["scenario_return_only"]["error"] == "" and runs["scenario_return_only"]["predicated_ifs"] == 1
    assert runs["scenario_two_atomics"]["splits"] >= 1  # an atomic in each branch: split by the test's value
    assert set(runs["scenario_branch_findings"]["findings"]) == {"bounds", "nan"}
    assert runs["scenario_branch_findings"]["predicated_ifs"] >= 1
    # The checks still find what they find serially (the comparison above says: identically).
    assert runs["scenario_nan_origin"]["findings"] == ["nan"]
    assert runs["scenario_out_of_bounds"]["findings"] == ["bounds"]
    assert runs["scenario_uninitialised"]["findings"] == ["uninit"]
    assert runs["scenario_written_by_an_earlier_launch"]["findings"] == ["uninit"]
    assert set(runs["scenario_races"]["findings"]) == {"race"}
    # Reads kept as runs until a store reaches their tensor: in place without a race, and a race across batches.
    assert runs["scenario_rows_in_place"]["findings"] == []
    assert set(runs["scenario_read_then_spill"]["findings"]) == {"race"}
    assert runs["scenario_scalar_mask"]["error"] == "" and runs["scenario_scalar_mask"]["batched_launches"] == 1
    assert "program (5, 0, 0)" in runs["scenario_device_assert"]["error"]
    # Rows (a dense run of elements per program): done through strided views where nothing is found, lane by
    # lane where something may be (the same findings: the comparison above).
    # (dense_rows' loop runs its iterations as lanes, loop_lanes.py: its lanes are no evenly spaced runs, so row
    # blocks alone show Rows here; the head blocks below too.)
    assert runs["scenario_row_blocks"]["rows_accesses"] >= 2
    for name in ("dense_rows", "dense_rows_in_place", "dense_rows_uninitialised"):
        assert runs[f"scenario_{name}"]["lane_chunks"] >= 1, name
    assert runs["scenario_dense_rows"]["findings"] == [] and runs["scenario_dense_rows_in_place"]["findings"] == []
    assert runs["scenario_dense_rows_read_race"]["findings"] == ["race"]
    assert runs["scenario_dense_rows_write_race"]["findings"] == ["race"]
    assert "uninit" in runs["scenario_dense_rows_uninitialised"]["findings"]
    assert runs["scenario_dense_rows_past_the_end"]["findings"] == ["bounds", "bounds"]
    # Dense-row stores whose shadow writes wait aside: a later read or overlapping store still finds the race; an
    # output they cover whole is recorded as written whole (no marks), one covered in part keeps its unwritten rest.
    for name in ("row_blocks_read_next", "row_blocks_store_next", "row_blocks_written_whole"):
        assert runs[f"scenario_{name}"]["rows_accesses"] >= 2, name
    assert runs["scenario_dense_rows_read_next"]["findings"] == ["race", "uninit"]
    assert runs["scenario_row_blocks_read_next"]["findings"] == ["race", "uninit"]
    assert runs["scenario_row_blocks_store_next"]["findings"] == ["race"]
    assert runs["scenario_row_blocks_written_whole"]["findings"] == ["uninit", "uninit"]
    # Runs of consecutive programs of unequal length (one program too): what a predicated early return leaves of a
    # batch (Liger's cross entropy, its ignore_index rows), read and stored in place, and a race across them.
    assert runs["scenario_ce_rows"]["rows_accesses"] >= 3 and runs["scenario_ce_rows"]["findings"] == []
    assert runs["scenario_ce_rows_read_next"]["rows_accesses"] >= 1  # up to the race, then the serial engine
    assert runs["scenario_ce_rows_read_next"]["findings"] == ["race", "race"]
    # An element-wise kernel whose last program's row is cut short by `offs < n`: its programs as two groups of
    # Rows (the whole batch went lane by lane before), its outputs written whole or in part, and findings made.
    for name in ("ragged_tail", "ragged_tail_written_whole", "ragged_tail_written_in_part"):
        assert runs[f"scenario_{name}"]["rows_accesses"] >= 3 and runs[f"scenario_{name}"]["findings"] == [], name
    assert runs["scenario_ragged_tail_read_next"]["findings"] == ["race", "uninit"]
    assert runs["scenario_ragged_tail_uninitialised"]["findings"] == ["uninit"]
    assert runs["scenario_ragged_tail_past_the_end"]["findings"] == ["bounds"]
    # Rows per group of consecutive programs (a 2-D grid, its first axis outer): the same, group by group.
    for name in ("head_blocks", "head_blocks_in_place", "head_blocks_uninitialised", "head_blocks_shared_reads"):
        assert runs[f"scenario_{name}"]["rows_accesses"] >= 2, name
    assert runs["scenario_head_blocks"]["findings"] == [] and runs["scenario_head_blocks_in_place"]["findings"] == []
    assert runs["scenario_head_blocks_uninitialised"]["findings"] == ["uninit"]
    assert runs["scenario_head_blocks_write_race"]["findings"] == ["race"]  # groups that overlap: lane by lane
    assert runs["scenario_head_blocks_shared_reads"]["findings"] == []
    assert runs["scenario_head_blocks_read_race"]["findings"] == ["race"]
    assert runs["scenario_head_blocks_uneven_race"]["findings"] == ["race"]  # runs of unequal length overlap


def test_scenarios_identical_with_dense_rows_everywhere():
    """The dense-row paths for runs of programs (an early return's, a short last row) with no size threshold: the
    scenarios' short accesses take them too, and both engines still agree."""
    rows = {}
    for dense in ("16384", "1"):
        report = _diff("--scenarios", str(DATA / "engine_scenarios.py"), TDEBUG_DENSE_RUN_LANES=dense)
        assert report["differences"] == [], (dense, report["differences"])
        rows[dense] = sum(run["rows_accesses"] for run in report["scenarios"].values())
    assert rows["1"] > rows["16384"], rows


def test_predicated_loops_identical_under_both_engines():
    report = _diff("--scenarios", str(DATA / "predicated_scenarios.py"))
    assert report["differences"] == [], report["differences"]
    runs = report["scenarios"]
    for name in ("online_softmax", "own_bound", "silent_past_bound", "effects_in_loop", "strided_bound",
                 "python_number", "varlen_recurrence", "split_start", "ragged_start"):  # predicated, nothing given up
        assert runs[f"scenario_{name}"]["predicated_loops"] >= 1 and runs[f"scenario_{name}"]["splits"] == 0, name
        assert runs[f"scenario_{name}"]["batched_launches"] >= 1, name
    # Programs past their own bound make no access, assert or NaN report; the real out-of-bounds read does.
    assert runs["scenario_own_bound"]["findings"] == ["bounds"]
    assert runs["scenario_silent_past_bound"]["findings"] == []
    assert runs["scenario_ragged_start"]["findings"] == ["bounds"]  # the last program's start lies past x
    # A Python number changed by a nested loop: predication gives up, the batch splits by trip count.
    assert runs["scenario_nested"]["splits"] >= 1
    # A real error while other programs are past their bound: raised again by its own program.
    assert runs["scenario_late_error"]["splits"] >= 1
    assert "program (3, 0, 0)" in runs["scenario_late_error"]["error"]
    # Iterations with few programs left in the loop ran on those programs only (compacted), the same results.
    for name in ("online_softmax", "own_bound", "silent_past_bound", "effects_in_loop", "varlen_recurrence",
                 "nested_ragged", "ragged_start"):
        assert runs[f"scenario_{name}"]["compacted_iterations"] >= 1, name


def test_loop_lanes_identical_under_both_engines():
    report = _diff("--scenarios", str(DATA / "lane_scenarios.py"))
    assert report["differences"] == [], report["differences"]
    runs = report["scenarios"]
    # Run as lanes, nothing given up: accumulators folded in order (a bf16 product fused into its add), the counter
    # in int arithmetic, offsets and beside fp32; one program too (a launch of one runs as a batch of one then).
    # The counter beside bf16 / int8 tensors too: an int32 tensor there on both engines (loop_counters), as compiled.
    for name in ("one_program", "programs", "bf16_fused", "int_wrap", "nan_in_fold", "counter_offsets", "past_end",
                 "uninitialised", "counter_bf16", "counter_int8"):
        assert runs[f"scenario_{name}"]["lane_chunks"] >= 1 and runs[f"scenario_{name}"]["lanes_refused"] == 0, name
    # Given up, the batch run again with the loop as written: a dependence through memory, two store ops meeting,
    # an atomic, a Python `if` on the counter.
    for name in ("store_then_load", "two_stores", "atomic", "counter_if"):
        assert runs[f"scenario_{name}"]["lanes_refused"] >= 1, name
    # A recurrence `h = h * decay + term` as lanes; programs with different trip counts (varlen sequences) as one
    # ragged chunk: a sum, a gated recurrence. Given up there: a store in the loop, a NaN's origin in the tail.
    for name in ("decayed_state", "ragged_sum", "ragged_recurrence"):
        assert runs[f"scenario_{name}"]["lane_chunks"] >= 1 and runs[f"scenario_{name}"]["lanes_refused"] == 0, name
    for name in ("ragged_store", "ragged_overflow"):
        assert runs[f"scenario_{name}"]["lanes_refused"] >= 1, name
    assert runs["scenario_ragged_overflow"]["findings"] == ["nan"]
    # fp32 accumulators folded as whole numpy ops (lane_folds), a fused product's sums on a tie too; handed back to
    # the fold iteration by iteration: an Inf, sums below fp32's normal range, an accumulator that is a product.
    for name in ("one_program", "programs", "fold_plain_sum", "fold_product_subtracted", "fold_ties",
                 "fold_from_python_numbers"):
        assert runs[f"scenario_{name}"]["lane_folds"] >= 1, name
    for name in ("nan_in_fold", "fold_subnormal", "fold_from_product"):
        assert runs[f"scenario_{name}"]["lane_folds"] == 0, name
    # The findings made inside the lanes and the fold, as the serial engine makes them.
    assert "DeviceAssertError" in runs["scenario_int_wrap"]["error"]  # the wrap, in the fold's add
    assert runs["scenario_counter_int8"]["error"] == ""  # int8 + k * 20 is int32 arithmetic, as compiled
    assert runs["scenario_nan_in_fold"]["findings"] == ["nan"]
    assert runs["scenario_past_end"]["findings"] == ["bounds"]
    assert "uninit" in runs["scenario_uninitialised"]["findings"]


def test_catalogue_identical_under_both_engines():
    files = sorted(str(p.relative_to(ROOT)) for p in list((ROOT / "kernels").glob("*.py")) + list(
        (ROOT / "bugs").glob("*.py")) if p.name != "__init__.py")
    report = _diff(*files, "--max-cases", "2")
    assert report["differences"] == [], report["differences"]
    assert report["cases"] >= 2 * len(files)
    assert report["batched_launches"] >= len(files)


@pytest.mark.slow
def test_catalogue_identical_under_both_engines_every_quick_case():
    files = sorted(str(p.relative_to(ROOT)) for p in list((ROOT / "kernels").glob("*.py")) + list(
        (ROOT / "bugs").glob("*.py")) if p.name != "__init__.py")
    report = _diff(*files, timeout=3600)
    assert report["differences"] == [], report["differences"]


def test_liger_ops_identical_under_both_engines():
    pytest.importorskip("liger_kernel")
    # Each op called twice on fresh inputs of the same shapes: the batched engine's second launches of a kernel
    # replay the first's recording (launch_replay.py) where it was kept, and must still agree with the serial one.
    report = _diff("--liger", "--twice", "rms_norm", "softmax", "cross_entropy", "swiglu", "rope")
    assert report["differences"] == [], report["differences"]
    runs = report["scenarios"]
    assert all(r["batched_launches"] >= 1 for r in runs.values()), runs
    # Third-party kernels replayed, none given up: rms_norm's forward, softmax's, swiglu's and rope's both ways.
    assert all(runs[f"scenario_{op}"]["replays"] >= 1 for op in ("rms_norm", "softmax", "swiglu", "rope")), runs
    assert sum(r["replay_aborts"] for r in runs.values()) == 0, runs


@pytest.mark.slow
def test_every_liger_op_identical_under_both_engines():
    pytest.importorskip("liger_kernel")
    report = _diff("--liger", timeout=3600)
    assert report["differences"] == [], report["differences"]
    assert len(report["scenarios"]) >= 19


def _sanitize(target: str, executor: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TDEBUG_EXECUTOR": executor, "TDEBUG_VERBOSE": "1"}
    return subprocess.run([sys.executable, "-m", "tdebug", "sanitize", target, "--seed", "1", *args],
                          capture_output=True, text=True, timeout=600, cwd=ROOT, env=env)


def test_the_serial_engine_stays_selectable_and_says_so():
    serial = _sanitize("kernels/add.py", "serial", "--shape", "1000")
    batched = _sanitize("kernels/add.py", "batched", "--shape", "1000")
    assert serial.returncode == batched.returncode == 0, serial.stderr + batched.stderr
    assert "serial engine (TDEBUG_EXECUTOR=serial)" in serial.stderr
    assert "batched engine" in batched.stderr and "serial engine" not in batched.stderr


def test_findings_do_not_depend_on_where_tensors_lie(tmp_path):
    """bugs/04's unmasked lanes run past its tensors: judged against the tensor each pointer came from, the
    findings are the same run after run (they used to vary with where the allocator put the next tensor)."""
    runs = []
    for i in range(2):
        out = tmp_path / f"run{i}.json"
        proc = _sanitize("bugs/04_gelu_missing_masks.py", "auto", "--shape", "129x127", "--json", str(out))
        assert proc.returncode == 1, proc.stderr
        report = json.loads(out.read_text())
        runs.append([(c["label"], f["check"], f["message"], f["line"], f["count"], f["pids"], f["indices"])
                     for t in report["targets"] for c in t["cases"] for f in c["findings"]])
    assert runs[0] == runs[1]
    assert {f[1] for f in runs[0]} >= {"bounds"}


def test_lane_accumulators_take_a_linear_recurrence():
    """`acc = acc * scale + term` (either side of the product) carries a loop as lanes; a scale or a term that
    names a carried value does not."""
    import ast

    from tdebug.interpreter.batched.predicated_loops import lane_accumulators

    def loop(body: str) -> ast.For:
        return ast.parse(f"for i in range(n):\n    x = load(i)\n    {body}").body[0]

    assert lane_accumulators(loop("h = h * 0.9 + x")) == ("h",)
    assert lane_accumulators(loop("h = exp(x) * h + dot(x, x)")) == ("h",)
    assert lane_accumulators(loop("h = h * h + x")) is None
    assert lane_accumulators(loop("h = h * 0.9 + h")) is None
    assert lane_accumulators(loop("h = h * 0.9 - x")) is None
