"""A script that sets torch's default device: its own tensors must land where it asked (`with torch.device(...)`,
torch.set_default_device), and tdebug's own tensors must not follow it. On a CPU the other device is `meta` (no data):
the script's real tensors say device="cpu". Usage: python default_device.py {context|whole_script|internals}"""

import sys

import torch
import triton
import triton.language as tl


@triton.jit
def scale_2d(X, Y, M, N, sxm, sxn, sym, syn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(X + rm[:, None] * sxm + rn[None, :] * sxn, mask=mask)
    tl.store(Y + rm[:, None] * sym + rn[None, :] * syn, x * 2.0, mask=mask)


def scale_into_views() -> None:
    """Strided views in and out (the output a transposed view of a torch.empty buffer), and torch ops writing a
    strided view of a torch.empty buffer: tdebug's write tracking and unwritten check build index tensors."""
    base = torch.randn(40, 70, device="cpu")
    for x in (base[:, 3:40], base[:33, :37].t()):
        M, N = x.shape
        buffer = torch.empty(N, M, device="cpu")
        out = buffer.t()  # M x N, column-major
        scale_2d[(triton.cdiv(M, 16), triton.cdiv(N, 16))](x, out, M, N, x.stride(0), x.stride(1), out.stride(0),
                                                            out.stride(1), BLOCK_M=16, BLOCK_N=16)
        assert torch.equal(out, x * 2.0)
        half = torch.empty(M, 2 * N, device="cpu")[:, ::2]  # a torch op writes a strided view of an empty buffer
        half.copy_(out)
        assert torch.equal(half, out)


def context() -> None:
    with torch.device("meta"):
        probe = torch.empty(4)
        probe_like = torch.zeros(2, 3)
    assert probe.device.type == "meta" and probe_like.device.type == "meta", (probe.device, probe_like.device)
    scale_into_views()


def whole_script() -> None:
    torch.set_default_device("meta")
    assert torch.empty(3).device.type == "meta"
    scale_into_views()


def internals() -> None:
    """No probe of the script's own allocations: tdebug's tensors alone (they must stay on the CPU)."""
    torch.set_default_device("meta")
    scale_into_views()


if __name__ == "__main__":
    {"context": context, "whole_script": whole_script, "internals": internals}[sys.argv[1]]()
    print("ok")
