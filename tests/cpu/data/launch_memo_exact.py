"""Runs kernels that call @jit helpers (their own module's, tl.max / tl.sum / tl.cdiv from Triton's standard
library, and a builtin through a module-level alias) in a loop, under tdebug's patches, and prints as JSON: a
digest of the outputs, how often Triton's _patch_lang ran, and which tl names hold Triton's builtins after the
launches. With MEMO=0 tdebug's launch_memo.py is left out (test_launch_memo.py compares the two)."""

import hashlib
import json
import os
import sys

os.environ["TRITON_INTERPRET"] = "1"

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.runtime import interpreter  # noqa: E402

from tdebug.interpreter import patches, versions  # noqa: E402
from tdebug.interpreter.fast import launch_memo

CALLS = []


def counting(original):
    def _patch_lang(fn):
        CALLS.append(fn.__module__)
        return original(fn)

    return _patch_lang


versions.patch(interpreter, "_patch_lang", counting, layer="probe")  # innermost: what really patches tl
if os.environ.get("MEMO") == "0":
    launch_memo.install = lambda: None
patches.install()

as_float = tl.cast  # a builtin through a module-level alias (aliases.py patches it per launch)


@triton.jit
def scaled(x, s):
    return x * s


@triton.jit
def row_stats(x_ptr, out_ptr, n_cols, stride, scale, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    best = tl.full((BLOCK,), -float("inf"), tl.float32)
    for start in range(0, tl.cdiv(n_cols, BLOCK)):
        cols = start * BLOCK + tl.arange(0, BLOCK)
        x = as_float(tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=0.0), tl.float32)
        acc += scaled(x, scale)
        best = tl.maximum(best, tl.where(cols < n_cols, x, -float("inf")))
    tl.store(out_ptr + row * 3, tl.sum(acc, axis=0))
    tl.store(out_ptr + row * 3 + 1, tl.max(best, axis=0))
    tl.store(out_ptr + row * 3 + 2, tl.sum(acc * acc, axis=0) + tl.max(acc, axis=0))


def builtin_names():
    """Which names of tl, tl.core and tl.math hold Triton's builtins (restored) and which an interpreted stand-in."""
    return {mod.__name__: sorted(n for n in dir(mod) if tl.core.is_builtin(getattr(mod, n, None)))
            for mod in (tl, tl.core, tl.math)}


before = builtin_names()
g = torch.Generator().manual_seed(1)
x = torch.randn(6, 77, generator=g)
outs = []
for launch in range(2):
    out = torch.empty(6, 3)
    row_stats[(6,)](x, out, 77, x.stride(0), 0.5 + launch, BLOCK=16)
    outs.append(out)
digest = hashlib.sha256(b"".join(o.numpy().tobytes() for o in outs)).hexdigest()
ref = torch.stack([(x.double() * 0.5).sum(1), x.double().amax(1)], 1)
print(json.dumps({"digest": digest, "patch_lang_calls": len(CALLS), "modules": sorted(set(CALLS)),
                  "restored_after": builtin_names() == before, "after": builtin_names(),
                  "err": (outs[0][:, :2].double() - ref).abs().max().item(),
                  "np_dtypes": [str(interpreter._get_np_dtype(t)) for t in (
                      tl.float32, tl.bfloat16, tl.int1, tl.pointer_type(tl.float16), tl.block_type(tl.float8e5, [4]),
                      tl.block_type(tl.pointer_type(tl.int8), [2, 2]), tl.block_type(tl.int64, [8]), tl.float32)]}))
sys.exit(0)
