"""launch_replay.py: a kernel launched again with the same key replays its recorded launch, with the serial engine's
outputs (bit for bit), findings and store records; a replay that meets what a check reports gives up and the batch
runs the ordinary way; a launch whose recording could not replay it right is never recorded."""

from __future__ import annotations

from pathlib import Path

from test_engine import _diff

DATA = Path(__file__).parent / "data"


def test_replays_agree_with_the_serial_engine():
    report = _diff("--scenarios", str(DATA / "replay_scenarios.py"), TDEBUG_REPLAY="eager")
    assert report["differences"] == [], report["differences"]
    runs = report["scenarios"]

    def replays(name: str) -> tuple[int, int]:
        run = runs[f"scenario_{name}"]
        return run["replays"], run["replay_aborts"]

    # Recorded at the first launch of a key, replayed from the second on (add_kernel's key was recorded by an
    # earlier scenario already: every launch of this one replays).
    assert replays("repeated_add") == (5, 0)
    assert replays("in_place") == (3, 0)
    assert replays("bf16_fma") == (2, 0)
    assert replays("softmax_rows") == (3, 0)  # (reductions, their combine functions run again)
    # A replay that meets what a check reports gives up; the ordinary run reports it (the comparison above: the
    # same findings as the serial engine's).
    assert replays("uninitialised_at_replay") == (3, 1)
    assert runs["scenario_uninitialised_at_replay"]["findings"] == ["uninit"]
    assert replays("nan_made_at_replay") == (2, 1)
    assert runs["scenario_nan_made_at_replay"]["findings"] == ["nan"]
    assert replays("overflow_at_replay")[1] == 1
    assert "overflow" in runs["scenario_overflow_at_replay"]["error"]
    # Not recorded: a choice or an address from memory's values, an integer local from memory at a store.
    for name in ("branch_on_memory", "loop_bound_from_memory", "gather_rows", "scalar_from_memory"):
        assert runs[f"scenario_{name}"]["recordings"] == 0, name
        assert replays(name) == (0, 0), name
    # A global the kernel reads is part of the key: a new value, a new recording.
    assert runs["scenario_global_changed"]["recordings"] == 2 and replays("global_changed") == (2, 0)
    # Unwritten elements: the replays' marks leave the same unwritten part, the probe past the grid the same finding.
    assert replays("unwritten_output") == (2, 0)
    assert runs["scenario_unwritten_output"]["findings"] == ["unwritten"]
