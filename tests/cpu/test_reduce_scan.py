"""interpreter/fast/reduce_scan.py: a kernel's own combine function in tl.reduce / tl.associative_scan run on lanes at
once gives Triton's per-element loop's values bit for bit (on both engines, fresh inputs every run), in far fewer
calls where it can (a verified parallel prefix, a fold over the other axes), and Triton's loop where it cannot
(a combine function that is not associative on the values, Python control flow on its scalars)."""

import json
import os
import random
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(__file__).parent / "data" / "reduce_scan_kernels.py"


def _run(mode: str, seed: int, executor: str = "auto") -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SEED": str(seed), "TDEBUG_EXECUTOR": executor}
    out = subprocess.run([sys.executable, str(SCRIPT), mode], capture_output=True, text=True, cwd=ROOT,
                         timeout=600, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_combine_functions_on_lanes_give_the_loops_values_in_fewer_calls():
    seed = random.randrange(1 << 30)
    loop = _run("tdebug-loop", seed, "serial")
    serial, batched = _run("tdebug", seed, "serial"), _run("tdebug", seed, "batched")
    digests = {name: case["digest"] for name, case in loop.items()}
    assert {name: case["digest"] for name, case in serial.items()} == digests, f"seed {seed}"
    assert {name: case["digest"] for name, case in batched.items()} == digests, f"seed {seed}"
    # Triton's loop: a call per element but the first along the axis.
    assert loop["keyed_sorted"]["calls"] == 511 and loop["argmax"]["calls"] == 4 * 16 * 31
    # A parallel prefix (log2 of the axis' length, + 1 to check it): the sorted keys' segmented count, the
    # argmax (exact), the integer scans and sums; 4 programs one after another on the serial engine.
    assert serial["keyed_sorted"]["calls"] == 10
    assert serial["argmax"]["calls"] == 4 * 6 and batched["argmax"]["calls"] == 6
    assert serial["reverse"]["calls"] == 7 and serial["whole_tile"]["calls"] == 8
    # Not the left fold on these values (a key that comes back, float rounding): checked, then Triton's loop
    # in one dimension, the fold over the other axes in two.
    assert serial["keyed_unsorted"]["calls"] == 10 + 511
    assert serial["float_scan"]["calls"] in (9, 9 + 255)
    assert serial["softmax_stats"]["calls"] in (4 * 6, 4 * (6 + 31))
    # Python control flow on the function's scalars: refused on lanes, Triton's loop.
    assert serial["branchy"]["calls"] == 1 + 63


def test_triton_itself_gives_the_same_values_where_tdebug_rounds_nothing_differently():
    """tdebug's interpreter rounds a * b + c once (fma.py): the online-softmax pair differs from plain Triton by
    that; every other case is plain Triton's bit for bit."""
    seed = random.randrange(1 << 30)
    plain, ours = _run("plain", seed), _run("tdebug", seed)
    assert {k: v["digest"] for k, v in plain.items() if k != "softmax_stats"} == \
        {k: v["digest"] for k, v in ours.items() if k != "softmax_stats"}, f"seed {seed}"
