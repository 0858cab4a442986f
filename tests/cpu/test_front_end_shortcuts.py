"""tdebug.interpreter.fast.front_end_shortcuts: Triton's front end with its shortcuts gives the same outputs (bit
for bit), the same errors for kernels with type errors and an int32 overflow, and the same promoted types (the
same objects, the same errors, memoised or not) as without them."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(__file__).parent / "data" / "front_end_shortcuts_exact.py"


def run(shortcuts: bool) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SHORTCUTS": "1" if shortcuts else "0"}
    proc = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, cwd=ROOT, env=env,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_shortcuts_give_triton_s_results_and_errors():
    fast, full = run(shortcuts=True), run(shortcuts=False)
    assert fast["shortcuts"] and not full["shortcuts"]
    assert fast["digest"] == full["digest"]
    assert fast["errors"] == full["errors"]
    assert fast["errors"][0] and "IncompatibleTypeError" in fast["errors"][0]  # pointer + float
    assert "different signedness" in fast["errors"][1]
    assert "Cannot make_shape_compatible" in fast["errors"][2]
    assert "int32 overflow detected for operation mul" in fast["errors"][3]
    assert fast["types"] == full["types"]  # asked twice: the memo's answers and errors are Triton's
    half = len(fast["types"]) // 2
    assert fast["types"][:half] == fast["types"][half:]
    assert any(isinstance(t, str) and "TypeError" in t for t in fast["types"])


def test_overflow_shortcut_with_a_scalar_side_answers_as_every_lane_would():
    """_in_range with one operand of one element reads only the other's extremes: the same answer as computing
    every lane in int64, on fresh random operands near and far from int32's limits, for add, sub and mul."""
    import types

    import numpy as np
    import triton.language as tl

    from tdebug.interpreter.fast.front_end_shortcuts import _in_range

    class Semantic:
        builder = types.SimpleNamespace(options=types.SimpleNamespace(sanitize_overflow=True))

        def add(self): ...
        def sub(self): ...
        def mul(self): ...

    def operand(data):
        return types.SimpleNamespace(type=types.SimpleNamespace(scalar=tl.int32), handle=types.SimpleNamespace(
            data=np.asarray(data, dtype=np.int32)))

    sem = Semantic()
    rng = np.random.default_rng()
    limit = 2**31 - 1
    ufuncs = {"add": np.add, "sub": np.subtract, "mul": np.multiply}
    checked = {True: 0, False: 0}
    for _ in range(3000):
        scale = int(rng.choice([100, 50_000, 2**16, 2**30, limit]))
        arr = rng.integers(-scale, scale, size=int(rng.integers(1, 64)), endpoint=True)
        one = rng.integers(-scale, scale, size=(1,), endpoint=True)
        for name, ufunc in ufuncs.items():
            for a, b in ((arr, one), (one, arr), (one, one[::-1].copy())):
                out = ufunc(a.astype(np.int64), b.astype(np.int64))  # int32 x int32 fits int64
                expected = bool(((out <= limit) & (out >= -limit - 1)).all())
                got = _in_range(sem, operand(a), operand(b), getattr(sem, name))
                assert got == expected, (name, a, b)
                checked[got] += 1
    assert checked[True] and checked[False]  # both answers were exercised
