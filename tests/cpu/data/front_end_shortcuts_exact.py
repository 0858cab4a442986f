"""Runs kernels through Triton's front end under tdebug's patches, with front_end_shortcuts.py's shortcuts
(SHORTCUTS=1) or without them (SHORTCUTS=0), and prints as JSON what test_front_end_shortcuts.py compares: a
digest of the outputs (fp32, bf16, fp16 promotion, int32 index arithmetic, splats and broadcasts), the errors
that kernels with type errors and an int32 overflow raise, and computation_type_impl's answers (the type's name,
or the error) for pairs of dtypes, asked twice so the second answer comes from the memo."""

import hashlib
import json
import os
import sys

os.environ["TRITON_INTERPRET"] = "1"

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from tdebug.interpreter import patches, versions  # noqa: E402
from tdebug.interpreter.fast import front_end_shortcuts

if os.environ.get("SHORTCUTS") == "0":
    front_end_shortcuts.install = lambda: None
patches.install()


@triton.jit
def mixed(x_ptr, y_ptr, h_ptr, out_ptr, out16_ptr, n, stride, scale, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    for r in range(0, 3):
        row = pid * 3 + r
        cols = tl.arange(0, BLOCK)
        mask = cols < n
        x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0)
        y = tl.load(y_ptr + row * stride + cols, mask=mask, other=0.0)  # bf16
        h = tl.load(h_ptr + row * stride + cols, mask=mask, other=0.0)  # fp16
        s = tl.sum(x * x, axis=0) / n
        z = x * s + y.to(tl.float32) * scale - h  # scalar * block, fp16 promoted, fma shapes
        outer = x[:, None] * x[None, :]  # (BLOCK, 1) * (1, BLOCK)
        z += tl.sum(outer, axis=1) * 0.25
        q = (y * y + y).to(tl.bfloat16)  # bf16 arithmetic
        idx = row * stride + cols * 1 - 0
        tl.store(out_ptr + idx, z, mask=mask)
        tl.store(out16_ptr + idx, q, mask=mask)


@triton.jit
def ptr_plus_float(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + 1.5 + offs))


@triton.jit
def mixed_signedness_div(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(x_ptr + offs).to(tl.uint32)
    b = tl.load(x_ptr + offs).to(tl.int32)
    tl.store(out_ptr + offs, (a // b).to(tl.float32))


@triton.jit
def shapes_mismatch(x_ptr, out_ptr, BLOCK: tl.constexpr):
    a = tl.load(x_ptr + tl.arange(0, BLOCK))
    b = tl.load(x_ptr + tl.arange(0, 2 * BLOCK))
    tl.store(out_ptr + tl.arange(0, BLOCK), a + b)


@triton.jit
def int32_overflow(x_ptr, out_ptr, big, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    wrapped = offs * big  # int32 * int32 wraps for the upper lanes
    tl.store(out_ptr + offs, tl.load(x_ptr + wrapped - wrapped))  # right again: no finding
    tl.store(out_ptr + offs, tl.load(x_ptr + wrapped))  # the wrapped value reaches an address


g = torch.Generator().manual_seed(3)
n, BLOCK = 29, 32
x = torch.randn(6, 40, generator=g)
y = torch.randn(6, 40, generator=g).to(torch.bfloat16)
h = torch.randn(6, 40, generator=g).to(torch.float16)
out, out16 = torch.zeros(6, 40), torch.zeros(6, 40, dtype=torch.bfloat16)
mixed[(2,)](x, y, h, out, out16, n, 40, 0.75, BLOCK=BLOCK)
digest = hashlib.sha256(out.numpy().tobytes() + out16.view(torch.int16).numpy().tobytes()).hexdigest()

errors = []
small = torch.arange(64, dtype=torch.float32)
cases = ((ptr_plus_float, (small, torch.zeros(16))), (mixed_signedness_div, (small + 1, torch.zeros(16))),
         (shapes_mismatch, (small, torch.zeros(16))), (int32_overflow, (small, torch.zeros(16), 300000000)))
for kernel, args in cases:
    try:
        kernel[(1,)](*args, BLOCK=16)
        errors.append(None)
    except Exception as e:  # noqa: BLE001 - the error is what is compared
        errors.append(f"{type(e).__name__}: {e}")

from triton.language.semantic import TritonSemantic  # noqa: E402
from triton.runtime.interpreter import interpreter_semantic  # noqa: E402

kinds = [tl.int1, tl.int8, tl.int32, tl.uint32, tl.int64, tl.float16, tl.bfloat16, tl.float32, tl.float64,
         tl.float8e5, tl.float8e4nv, tl.pointer_type(tl.float32)]
types = []
for _ in range(2):
    for a in kinds:
        for b in kinds:
            for flags in ((False, False, False), (True, False, True), (False, True, False)):
                try:
                    got = interpreter_semantic.computation_type_impl(a, flags[0], b, flags[1], flags[2])
                    types.append([got.name, "a" if got is a else "b" if got is b else "other"])
                except Exception as e:  # noqa: BLE001
                    types.append(f"{type(e).__name__}: {e}")
print(json.dumps({"digest": digest, "errors": errors, "types": types,
                  "shortcuts": "TritonSemantic.computation_type_impl" in versions.PATCHED,
                  "wrapped": TritonSemantic.cast.__name__}))
sys.exit(0)
