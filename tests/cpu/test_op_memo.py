"""tdebug.interpreter.fast.op_memo: builtins answered by replaying their recorded builder calls give the same outputs
(bit for bit) and the same errors (an int32 overflow that only a later iteration hits, a type error) as Triton's
own front end, on fresh random inputs; and the memo does answer most of a loop's calls."""

import json
import os
import random
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(__file__).parent / "data" / "op_memo_exact.py"


def run(memo: bool, seed: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OP_MEMO": "1" if memo else "0"}
    proc = subprocess.run([sys.executable, str(SCRIPT), str(seed)], capture_output=True, text=True, cwd=ROOT,
                          env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_replayed_builtins_give_triton_s_results_and_errors():
    seed = random.randrange(1 << 30)
    memo, plain = run(memo=True, seed=seed), run(memo=False, seed=seed)
    assert memo["memo"] and not plain["memo"]
    assert memo["digest"] == plain["digest"], f"seed {seed}"
    assert memo["errors"] == plain["errors"]
    assert "int32 overflow detected for operation mul" in memo["errors"][0]
    assert "int32 overflow detected for operation mul" in memo["errors"][1]
    assert "IncompatibleTypeError" in memo["errors"][2] or "TypeError" in memo["errors"][2]
    assert plain["hits"] == 0 and memo["hits"] > 200  # the loop's calls came from the memo
    assert memo["families"] > 0  # and those with the loop's Python scalars from a family's code


def test_pointers_into_global_memory_are_keyed_on_every_triton():
    """A pointer type's address space is 1 up to Triton 3.8 and "global" from 3.9: both are global memory, so
    pointer arithmetic, loads and stores replay (before, Triton 3.6 ran every pointer op through its front end)."""
    from types import SimpleNamespace

    import triton.language as tl

    from tdebug.interpreter.fast import op_memo

    assert op_memo._global(tl.pointer_type(tl.float32))
    assert op_memo._global(tl.block_type(tl.pointer_type(tl.int64), [4]).scalar)
    assert not op_memo._global(SimpleNamespace(address_space=3))  # shared memory: its name says nothing of it
