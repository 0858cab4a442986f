"""fp32 tl.dot at each input precision, against float64 references of the operands as the tensor cores read them:
the default (TF32: 13 low mantissa bits of each operand dropped), `ieee` and `tf32x3` (full fp32). The script
asserts; run under tdebug's interpreter (python tf32_dot.py)."""

import torch
import triton
import triton.language as tl


@triton.jit
def dot_kernel(A, B, C, PRECISION: tl.constexpr, N: tl.constexpr):
    r = tl.arange(0, N)
    a = tl.load(A + r[:, None] * N + r[None, :])
    b = tl.load(B + r[:, None] * N + r[None, :])
    if PRECISION == "default":
        c = tl.dot(a, b)
    else:
        c = tl.dot(a, b, input_precision=PRECISION)
    tl.store(C + r[:, None] * N + r[None, :], c)


def tf32(x: torch.Tensor) -> torch.Tensor:
    return (x.contiguous().view(torch.int32) & -0x2000).view(torch.float32)


def close(got: torch.Tensor, want: torch.Tensor) -> bool:
    return bool(torch.allclose(got.double(), want, rtol=1e-5, atol=1e-5))


a, b = torch.randn(32, 32), torch.randn(32, 32)
exact, truncated = a.double() @ b.double(), tf32(a).double() @ tf32(b).double()
assert not torch.allclose(exact, truncated, rtol=1e-5, atol=1e-5)  # the inputs tell the two apart
for precision, want in (("default", truncated), ("tf32", truncated), ("ieee", exact), ("tf32x3", exact)):
    c = torch.empty(32, 32)
    dot_kernel[(1,)](a, b, c, PRECISION=precision, N=32)
    assert close(c, want), (precision, float((c.double() - want).abs().max()))
print("ok")
