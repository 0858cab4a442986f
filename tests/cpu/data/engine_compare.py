"""What engine_diff.py and kernel_fuzz.py compare between the serial and the batched engine, in one process: a
scenario's outputs bit for bit (a NaN's payload apart), its findings (Finding.to_dict, sorted), its error string
and the store records."""

from __future__ import annotations

import json
import os

os.environ["TRITON_INTERPRET"] = "1"
# A kernel's launch replays its key's first (launch_replay.py): every second launch of a key in a scenario does.
os.environ.setdefault("TDEBUG_REPLAY", "eager")

import torch  # noqa: E402

from tdebug.catalogue.poison import poisoned_empty  # noqa: E402
from tdebug.interpreter.batched import grid_loop
from tdebug.interpreter.hooks import stores  # noqa: E402

KEYS = ("out", "findings", "error", "records")


def _bits(x):
    """A tensor's bytes, every NaN as one NaN: a NaN's sign and payload are not compared (numpy's scalar and vector
    loops pick different operands' NaNs for inf + -inf + nan; a GPU writes its one canonical NaN whatever they are)."""
    if isinstance(x, torch.Tensor):
        t = x.detach().reshape(-1).clone()
        if t.is_floating_point() and t.numel():
            t[torch.isnan(t)] = float("nan")
        return t.view(torch.uint8) if t.numel() else t
    if isinstance(x, (list, tuple)):
        return [_bits(v) for v in x]
    return x


def _same(a, b) -> bool:
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.shape == b.shape and torch.equal(a, b)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def _records():
    out = []
    for launch in stores.RECORDER.launches:
        for r in launch.records:
            out.append((launch.index, launch.kernel, r.pid, r.line, r.offsets.tolist(), r.lanes.tolist(), r.hit))
        out.append(("scalars", launch.index, sorted((k, sorted(v.items())) for k, v in launch.scalars.items())))
    return sorted(out, key=repr)


def run_scenario(fn, seed: int, session, executor: str):
    os.environ["TDEBUG_EXECUTOR"] = executor
    stores.RECORDER.clear()
    before = grid_loop.STATS.launches_batched
    replays, aborts = grid_loop.STATS.replays, grid_loop.STATS.replay_aborts
    session.begin_case()
    error, out = "", None
    try:
        with poisoned_empty():
            out = fn(seed)
    except Exception as e:  # noqa: BLE001 - a kernel's exception is part of what both engines must agree on
        error = f"{type(e).__name__}: {e}"
    findings = sorted(json.dumps(f.to_dict(), sort_keys=True, default=str) for f in session.end_case())
    return {"out": _bits(out), "findings": findings, "error": error, "records": _records(),
            "batched": grid_loop.STATS.launches_batched - before,
            "replays": grid_loop.STATS.replays - replays, "replay_aborts": grid_loop.STATS.replay_aborts - aborts}


def differences(a: dict, b: dict, keys=KEYS) -> list[str]:
    """The keys whose values differ between two runs (run_scenario's dicts)."""
    return [key for key in keys if not _same(a[key], b[key])]
