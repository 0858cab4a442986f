"""The size caps (interpreter/hooks/limits.py) stop a launch over them, naming its kernel, on both engines: the
kernel's name and tensors come from the launch grid_loop makes once (grid_loop.current_launch())."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import sys
import torch, triton, triton.language as tl
from tdebug.interpreter.hooks import limits
from tdebug.interpreter import patches

@triton.jit
def add_one(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=m) + 1, mask=m)

patches.install()
limits.install(limits.Limits(max_programs=int(sys.argv[1]), max_bytes=int(sys.argv[2])))
x = torch.randn(4096)
y = x.clone()
add_one[(4,)](x, 4096, BLOCK=1024)  # 4 programs, 16 KiB: under both caps
assert torch.equal(x, y + 1)
try:
    add_one[(64,)](torch.randn(65536), 65536, BLOCK=1024)  # 64 programs, 256 KiB
except limits.LaunchTooLarge as e:
    print("STOPPED", e.kernel, e.what, e.size)
else:
    print("RAN")
"""


@pytest.mark.parametrize("executor", ["batched", "serial"])
@pytest.mark.parametrize("caps, said", [((16, 0), "STOPPED add_one grid of programs 64"),
                                        ((0, 100_000), "STOPPED add_one tensor-argument bytes 262144"),
                                        ((0, 0), "RAN")])
def test_a_launch_over_a_cap_stops_naming_its_kernel(executor, caps, said):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TRITON_INTERPRET": "1", "TDEBUG_EXECUTOR": executor}
    out = subprocess.run([sys.executable, "-c", SCRIPT, *map(str, caps)], capture_output=True, text=True,
                         timeout=120, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == said
