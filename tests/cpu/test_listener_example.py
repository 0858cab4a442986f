"""Adding a check is one listener class in one file (bytes_loaded.py, under 60 lines, no patch): it counts the
bytes each program loads, the same under the serial and the batched engine, whose batch splits it survives."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

SCRIPT = """
import json, sys
import numpy as np
import torch, triton, triton.language as tl
from tdebug.interpreter.batched import grid_loop
from tdebug.interpreter import patches
import bytes_loaded

@triton.jit
def varlen_row_sum(x_ptr, cu_seqlens_ptr, out_ptr, BLOCK: tl.constexpr):  # FLA-style jagged rows
    i = tl.program_id(0)
    bos = tl.load(cu_seqlens_ptr + i).to(tl.int32)
    eos = tl.load(cu_seqlens_ptr + i + 1).to(tl.int32)
    if eos == bos:  # an empty sequence: nothing to do (the programs of a batch disagree: it splits)
        tl.store(out_ptr + i, 0.0)
        return
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(bos, eos, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + offs, mask=offs < eos, other=0.0)
    tl.store(out_ptr + i, tl.sum(acc))

patches.install()
listener = bytes_loaded.install()
g = torch.Generator().manual_seed(int(sys.argv[1]))
lengths = torch.randint(0, 300, (37,), generator=g)
lengths[torch.randperm(37, generator=g)[:6]] = 0
cu = torch.cat([torch.zeros(1, dtype=torch.int64), lengths.cumsum(0)])
x = torch.randn(int(cu[-1]), generator=g)
out = torch.full((37,), float("nan"))
varlen_row_sum[(37,)](x, cu, out, BLOCK=64)
want = torch.stack([x[a:b].double().sum() for a, b in zip(cu[:-1].tolist(), cu[1:].tolist())])
assert torch.allclose(out.double(), want, atol=1e-4), (out, want)
s = grid_loop.STATS
print(json.dumps({"bytes": {str(k[0]): v for k, v in sorted(listener.by_program.items())},
                  "lengths": lengths.tolist(), "launches": listener.launches, "batched": s.launches_batched,
                  "splits": s.splits}))
"""


def _run(executor: str, seed: int) -> dict:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{HERE}", "TRITON_INTERPRET": "1",
           "TDEBUG_EXECUTOR": executor}
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(seed)], capture_output=True, text=True, timeout=300,
                         env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_one_listener_counts_bytes_per_program_alike_on_both_engines():
    seed = int.from_bytes(os.urandom(2), "little")
    serial, batched = _run("serial", seed), _run("batched", seed)
    assert serial["batched"] == 0 and batched["batched"] == 1 and batched["splits"] > 0, (serial, batched)
    # Every program loads its two int64 offsets, and its row's float32 elements (masked-off lanes load nothing).
    want = {str(i): 2 * 8 + 4 * n for i, n in enumerate(serial["lengths"])}
    assert serial["bytes"] == want, seed
    assert batched["bytes"] == want, seed
    assert serial["launches"] == batched["launches"] == [["varlen_row_sum", 3, "ok"]], (serial, batched)


def test_the_listener_is_one_short_file_without_a_patch():
    text = (HERE / "bytes_loaded.py").read_text()
    assert len(text.splitlines()) < 60
    assert "patch" not in text.replace("No patch", "")
    assert text.count("\nclass ") == 1
