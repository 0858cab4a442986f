"""tdebug.interpreter.lean_ops: Triton's front end with its shortcuts gives the same outputs (bit for bit), the
same errors for kernels with type errors and an int32 overflow, and the same promoted types (the same objects,
the same errors, memoised or not) as without them."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(__file__).parent / "data" / "lean_ops_exact.py"


def run(lean: bool) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LEAN_OPS": "1" if lean else "0"}
    proc = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, cwd=ROOT, env=env,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_shortcuts_give_triton_s_results_and_errors():
    lean, full = run(lean=True), run(lean=False)
    assert lean["lean"] and not full["lean"]
    assert lean["digest"] == full["digest"]
    assert lean["errors"] == full["errors"]
    assert lean["errors"][0] and "IncompatibleTypeError" in lean["errors"][0]  # pointer + float
    assert "different signedness" in lean["errors"][1]
    assert "Cannot make_shape_compatible" in lean["errors"][2]
    assert "int32 overflow detected for operation mul" in lean["errors"][3]
    assert lean["types"] == full["types"]  # asked twice: the memo's answers and errors are Triton's
    half = len(lean["types"]) // 2
    assert lean["types"][:half] == lean["types"][half:]
    assert any(isinstance(t, str) and "TypeError" in t for t in lean["types"])
