"""A predicated loop (its trip count differs between programs) of TRIPS iterations, each binding large per-program
values; prints, as JSON, the launch's numpy peak (tracemalloc) for a short and a long loop over the same batch:
what an iteration keeps for the next (its state, the values it began with) must not pile up with the iterations."""

import json
import tracemalloc

import torch
import triton
import triton.language as tl


@triton.jit
def ragged_sums(x_ptr, out_ptr, trips_ptr, longest, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    trips = tl.load(trips_ptr + pid)
    acc = tl.zeros([BLOCK], tl.float32)
    for i in range(0, trips):
        row = tl.load(x_ptr + (pid * longest + i) * BLOCK + offs)  # a row of its own: no read kept aside
        scaled = row * (pid + 1).to(tl.float32)
        acc = acc * 0.5 + scaled
    tl.store(out_ptr + pid * BLOCK + offs, acc)


def peak(longest: int, programs: int = 64, block: int = 4096) -> int:
    x = torch.randn(programs, longest, block)
    out = torch.empty(programs, block)
    trips = torch.linspace(longest // 2, longest, programs).to(torch.int32)  # every program in the loop a while
    tracemalloc.start()
    ragged_sums[(programs,)](x, out, trips, longest, BLOCK=block)
    held = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    expect = torch.zeros(programs, block, dtype=torch.float64)
    for p in range(programs):
        for i in range(int(trips[p])):
            expect[p] = expect[p] * 0.5 + x[p, i].double() * (p + 1)
    assert torch.allclose(out.double(), expect, rtol=1e-4, atol=1e-3), (out - expect).abs().max()
    return held


print(json.dumps({"short": peak(4), "long": peak(32), "value_bytes": 64 * 4096 * 4}))
