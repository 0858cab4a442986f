"""The batched engine sizes a kernel's batches and loop lanes by that kernel's own blocks: a kernel with large
blocks launched earlier in the process leaves another kernel's batches and lanes as they are."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = r'''
import json, os
os.environ["TRITON_INTERPRET"] = "1"
from tdebug.runtime.recipe import Recipe, install
install(Recipe(interpret=True))
import torch
import triton
import triton.language as tl
from tdebug.interpreter.batched.grid_loop import STATS


@triton.jit
def wide(x_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) * 2)


@triton.jit
def row_sums(x_ptr, out_ptr, steps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for i in range(0, steps):
        acc += tl.load(x_ptr + (row * steps + i) * BLOCK + tl.arange(0, BLOCK))
    tl.store(out_ptr + row * BLOCK + tl.arange(0, BLOCK), acc)


rows, steps, block = 256, 8, 16
x = torch.randn(rows, steps, block)
ref = x.double().sum(1)


def launch_row_sums():
    before = (STATS.batches, STATS.lane_chunks)
    out = torch.empty(rows, block)
    row_sums[(rows,)](x, out, steps, BLOCK=block)
    assert (out.double() - ref).abs().max().item() < 1e-4
    return {"batches": STATS.batches - before[0], "lane_chunks": STATS.lane_chunks - before[1]}


first = launch_row_sums()
second = launch_row_sums()
big = torch.randn(4 * (1 << 17))
wide[(4,)](big, BLOCK=1 << 17)
after_wide = launch_row_sums()
print(json.dumps({"first": first, "second": second, "after_wide": after_wide}))
'''


def test_a_wide_kernel_leaves_another_kernels_batches_as_they_are(tmp_path):
    script = tmp_path / "sizing.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TDEBUG_EXECUTOR": "batched"}
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=ROOT, env=env,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    first, second, after = report["first"], report["second"], report["after_wide"]
    # The kernel's own launches: its loop as lanes, and the later launch in batches sized by its blocks (the first
    # launch's first batch is FIRST_BATCH programs, before any block is seen)
    assert first["lane_chunks"] >= 1 and second["lane_chunks"] >= 1, report
    assert second["batches"] <= first["batches"], report
    # After a kernel of 128K-element blocks: the same batches and lanes as before it
    assert after == second, report
