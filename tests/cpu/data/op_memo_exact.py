"""Runs kernels whose builtins are called again and again (loops) under tdebug's patches, with the front-end memo
(OP_MEMO=1: interpreter/fast/op_memo.py replays a builtin's builder calls) or without it (OP_MEMO=0), and prints as
JSON what test_op_memo.py compares: a digest of the outputs (fp32/bf16/fp16 arithmetic, Python int and float
operands that change every iteration, -0.0 and 0.0 and NaN constants, one tensor used as both operands and then
two, casts, where/maximum/exp/sqrt, broadcasts, fused multiply-adds, masked loads and stores, atomics), the
errors of a kernel whose int32 product overflows only in a late iteration and of one with a type error, and how
many calls the memo answered."""

import hashlib
import json
import os
import sys

os.environ["TRITON_INTERPRET"] = "1"

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from tdebug.interpreter import patches  # noqa: E402
from tdebug.interpreter.fast import op_memo

if os.environ.get("OP_MEMO") == "0":
    op_memo.install = lambda: None
patches.install()


@triton.jit
def rows(x_ptr, b_ptr, h_ptr, out_ptr, out16_ptr, total_ptr, n, stride, R, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    mask = cols < n
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for r in range(R):
        x = tl.load(x_ptr + r * stride + cols, mask=mask, other=0.0)
        b = tl.load(b_ptr + r * stride + cols, mask=mask, other=-0.0)  # bf16
        h = tl.load(h_ptr + r * stride + cols, mask=mask, other=float("nan"))  # fp16
        sq = x * x  # one tensor twice
        xb = x * b.to(tl.float32)  # then two
        f = r * 0.5 - 1.0  # a Python float that changes every iteration
        z = sq * f + xb * (r + 1) - h.to(tl.float32) * -0.0
        z = tl.where(z > 0, tl.sqrt(tl.abs(z)), tl.exp(z * 0.0625))
        z = tl.maximum(z, x) + tl.sum(sq, axis=0) / n
        outer = x[:, None] * b[None, :].to(tl.float32)
        z += tl.sum(outer, axis=1) * 0.25
        q = (b * b + b).to(tl.bfloat16)
        acc = acc * 0.5 + z
        tl.store(out_ptr + r * stride + cols, z, mask=mask)
        tl.store(out16_ptr + r * stride + cols, q.to(tl.float16) + h, mask=mask)
        tl.atomic_add(total_ptr + r % 3, tl.sum(tl.where(mask, z, 0.0), axis=0))
    tl.store(out_ptr + R * stride + cols, acc, mask=mask)


@triton.jit
def late_overflow(out_ptr, k, R):
    acc = tl.full((4,), 1, tl.int32)
    for r in range(R):
        acc = acc * k  # fits for the first iterations, overflows later
        tl.store(out_ptr + r * 4 + tl.arange(0, 4), acc)


@triton.jit
def late_overflow_python_ints(out_ptr, R):
    acc = tl.full((4,), 1, tl.int32)
    for r in range(R):
        acc = acc * 3 + r  # a Python int operand that changes every iteration; the product overflows late
        tl.store(out_ptr + r * 4 + tl.arange(0, 4), acc - (r - 2))


@triton.jit
def type_error(x_ptr, out_ptr, R):
    for r in range(R):
        p = x_ptr + r * 4 + tl.arange(0, 4)
        tl.store(out_ptr + tl.arange(0, 4), tl.load(p + 1.5))  # pointer + float


def main() -> None:
    torch.manual_seed(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
    R, n, BLOCK = 12, 100, 128
    x = torch.randn(R + 1, BLOCK)
    b = torch.randn(R + 1, BLOCK).to(torch.bfloat16)
    h = torch.randn(R + 1, BLOCK).to(torch.float16)
    out = torch.full((R + 1, BLOCK), float("nan"))
    out16 = torch.full((R + 1, BLOCK), float("nan"), dtype=torch.float16)
    total = torch.zeros(3)
    rows[(1,)](x, b, h, out, out16, total, n, BLOCK, R, BLOCK=BLOCK)
    digest = hashlib.sha256()
    for t in (out, out16, total):
        digest.update(t.contiguous().view(torch.uint8).numpy().tobytes())
    errors = []
    for kernel, args in ((late_overflow, (torch.zeros(40 * 4, dtype=torch.int32), 7, 40)),
                         (late_overflow_python_ints, (torch.zeros(40 * 4, dtype=torch.int32), 40)),
                         (type_error, (torch.randn(64), torch.zeros(4), 3))):
        try:
            kernel[(1,)](*args)
            errors.append(None)
        except Exception as exc:  # noqa: BLE001 - the error is what is compared
            errors.append(f"{type(exc).__name__}: {exc}"[:300])
    print(json.dumps({"memo": os.environ.get("OP_MEMO") != "0", "digest": digest.hexdigest(), "errors": errors,
                      "hits": op_memo.MEMO.hits, "traces": len(op_memo.MEMO.traces),
                      "families": sum(1 for f in op_memo.MEMO.families.values() if f.fn is not None)}))


if __name__ == "__main__":
    main()
