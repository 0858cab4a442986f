"""tdebug.interpreter.lean: the language is patched once per module per launch, not on every nested @jit call,
with the same outputs (bit for bit) and the same state of `tl` after the launches as without it."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(__file__).parent / "data" / "lean_memo.py"


def run(lean: bool) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LEAN": "1" if lean else "0",
           "TDEBUG_EXECUTOR": "serial"}  # the per-op path of one program at a time (batches call helpers less)
    proc = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, cwd=ROOT, env=env,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_nested_jit_calls_patch_once_per_module_per_launch_with_identical_results():
    memo, full = run(lean=True), run(lean=False)
    assert full["err"] < 1e-4 and memo["err"] < 1e-4
    assert memo["digest"] == full["digest"]
    assert memo["after"] == full["after"] and memo["restored_after"] == full["restored_after"]
    assert memo["np_dtypes"] == full["np_dtypes"]
    assert memo["np_dtypes"] == ["float32", "uint16", "bool", "uint64", "uint8", "uint64", "int64", "float32"]
    # 2 launches x 6 programs x (5 loop steps x 1 helper + tl.cdiv + 4 reductions): Triton re-patches on each
    # call; once per module per launch is the kernel's module and Triton's standard library, twice.
    assert full["patch_lang_calls"] > 100
    assert memo["patch_lang_calls"] == 4, memo["modules"]


LAUNCHES = r'''
import os, sys, json
os.environ["TRITON_INTERPRET"] = "1"
from tdebug.runtime.engine import Recipe, install
install(Recipe(interpret=True))
import torch
import triton.language as tl
from triton.language import core
from kernels.softmax import softmax
before = sorted(n for n in dir(tl.tensor) if core.is_builtin(getattr(tl.tensor, n)))
errors = []
for _ in range(4):  # tl.max / tl.sum: device functions of Triton's standard library, patched inside the launch
    x = torch.randn(5, 37)
    errors.append((softmax(x).double() - torch.softmax(x.double(), -1)).abs().max().item())
after = sorted(n for n in dir(tl.tensor) if core.is_builtin(getattr(tl.tensor, n)))
print(json.dumps({"errors": errors, "same_builtins": before == after and len(before) > 20}))
'''


def test_builtins_listed_once_patch_every_launch_alike():
    """lean's list of each module's builtins, made at a launch's own patching, serves every later launch: a
    kernel calling Triton's standard library (patched inside the launch, where the builtins are swapped) runs
    right launch after launch, and tl holds its own builtins after."""
    proc = subprocess.run([sys.executable, "-c", LAUNCHES], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(out["errors"]) == 4 and max(out["errors"]) < 1e-6
    assert out["same_builtins"]
