"""tdebug.interpreter.fast.launch_memo: the language is patched once per module per launch, not on every nested
@jit call, with the same outputs (bit for bit) and the same state of `tl` after the launches as without it."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(__file__).parent / "data" / "launch_memo_exact.py"


def run(memo: bool) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MEMO": "1" if memo else "0",
           "TDEBUG_EXECUTOR": "serial"}  # the per-op path of one program at a time (batches call helpers less)
    proc = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, cwd=ROOT, env=env,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_nested_jit_calls_patch_once_per_module_per_launch_with_identical_results():
    memo, full = run(memo=True), run(memo=False)
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
from tdebug.runtime.recipe import Recipe, install
install(Recipe(interpret=True))
import torch
import triton.language as tl
from triton.language import core
from triton.runtime import interpreter
from kernels.softmax import softmax
packages = (tl, tl.tensor, tl.math)
def builtins():
    return [{n: getattr(p, n) for n in dir(p) if core.is_builtin(getattr(p, n))} for p in packages]
before = builtins()
seen = []  # per launch: what the launch's own patching (its first _patch_lang call) set through _patch_attr
first_call = [False]
original = interpreter._patch_lang
def through_patch_attr(v):  # op_memo's wrapper (call) or Triton's own (<lambda>); other layers set the rest
    return getattr(getattr(v, "__code__", None), "co_name", "") in ("call", "<lambda>")
def _patch_lang(fn):
    scope = original(fn)
    if first_call[0]:
        first_call[0] = False
        seen.append([{n: getattr(p, n) for n in names if through_patch_attr(getattr(p, n))}
                     for p, names in zip(packages, before)])
    return scope
interpreter._patch_lang = _patch_lang
calls = []  # per launch: builtins handed to _patch_attr (none where the values of an earlier launch serve)
original_attr = interpreter._patch_attr
def _patch_attr(*args):
    calls[-1] += 1
    return original_attr(*args)
interpreter._patch_attr = _patch_attr
errors, restored = [], []
for executor in ("auto", "auto", "auto", "serial", "auto"):
    os.environ["TDEBUG_EXECUTOR"] = executor
    first_call[0] = True
    calls.append(0)
    x = torch.randn(5, 37)  # tl.max / tl.sum: device functions of Triton's standard library, patched in the launch
    errors.append((softmax(x).double() - torch.softmax(x.double(), -1)).abs().max().item())
    restored.append(all(a == b for a, b in zip(builtins(), before)))  # the very objects (== on functions: is)
first = seen[0]
def same(a, b):
    return all(x.keys() == y.keys() and all(x[n] is y[n] for n in x) for x, y in zip(a, b))
print(json.dumps({"errors": errors, "calls": calls, "restored": restored, "sizes": [len(b) for b in first],
                  "same_as_first": [same(s, first) for s in seen],
                  "kinds": [sorted({v.__code__.co_name for d in s for v in d.values()}) for s in seen]}))
'''


def test_builtins_listed_once_patch_every_launch_alike():
    """launch_memo's list of each module's builtins, made at a launch's own patching, serves every later launch, and so
    do the values patching set: launches in the same context set the very objects the first one did (op_memo's
    wrappers), a launch under the serial executor sets Triton's own, and the next batched launch op_memo's again.
    A kernel calling Triton's standard library (patched inside the launch, where the builtins are swapped) runs
    right launch after launch, and tl holds its own builtins after each."""
    proc = subprocess.run([sys.executable, "-c", LAUNCHES], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(out["errors"]) == 5 and max(out["errors"]) < 1e-6
    assert all(out["restored"]) and min(out["sizes"]) > 10
    assert out["same_as_first"] == [True, True, True, False, True]
    calls = out["calls"]
    assert calls[0] > 100 and calls[3] > 100 and calls[1] == calls[2] == calls[4] == 0
    kinds = out["kinds"]  # the code each builtin was swapped for: op_memo's wrapper (call); Triton's own (<lambda>)
    assert "call" in kinds[0] and "<lambda>" not in kinds[0] and "<lambda>" in kinds[3] and "call" not in kinds[3]


FILE_LINES = r'''
import importlib, inspect, json, pkgutil, sys
import tdebug.interpreter.fast.launch_memo as launch_memo
from triton.runtime import interpreter
import triton.language as tl
import kernels, bugs
from tests.cpu.data import engine_scenarios, predicated_scenarios

original = interpreter.FunctionRewriter._get_jit_fn_file_line
ours = launch_memo._file_line_from_source(original)
modules = [tl.standard, engine_scenarios, predicated_scenarios]
for package in (kernels, bugs):
    for info in pkgutil.iter_modules(package.__path__):
        modules.append(importlib.import_module(f"{package.__name__}.{info.name}"))
checked, differ = 0, []
for module in modules:
    for name, value in sorted(vars(module).items()):
        fn = value
        while hasattr(fn, "fn"):  # a jit function (JITFunction, or InterpretedFunction under TRITON_INTERPRET=1),
            fn = fn.fn  # through autotune / heuristics wrappers, to the Python function
        if fn is value or not inspect.isfunction(fn):
            continue
        rewriter = interpreter.FunctionRewriter(fn)
        want, got = original(rewriter), ours(rewriter)
        checked += 1
        if want != got:
            differ.append([module.__name__, name, want, got])
print(json.dumps({"checked": checked, "differ": differ}))
'''


def test_file_and_def_line_of_every_jit_function_as_triton_finds_them():
    """launch_memo's shortcut for the rewrite's file and `def` line gives Triton's own answer on every jit function of
    kernels/, bugs/, the test scenarios and Triton's standard library (decorators above the def, autotune and
    heuristics wrappers, multi-line signatures)."""
    proc = subprocess.run([sys.executable, "-c", FILE_LINES], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["checked"] > 40 and out["differ"] == [], out


TYPED = r'''
import os, json
os.environ["TRITON_INTERPRET"] = "1"
import torch
from triton.runtime import interpreter
from tdebug.interpreter.fast import launch_memo
from tdebug.interpreter.hooks import provenance
triton_own = interpreter._implicit_cvt
fast = launch_memo._typed_args(triton_own)
args = [0, 1, -1, 7, 2**31 - 1, -2**31, 2**31, -2**31 - 1, 2**40, 2**63 + 5, 1.5, None, "s"]  # (bools: scalars.py)
for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int8, torch.uint8, torch.int16,
              torch.int32, torch.int64, torch.uint32, torch.bool, torch.float8_e4m3fn, torch.float8_e5m2):
    t = torch.zeros(12, dtype=dtype)
    args += [t, t[3:], t.view(3, 4).t()]
same = []
for arg in args:
    a, b = triton_own(arg), fast(arg)
    if not hasattr(a, "handle"):
        same.append(a is b)
        continue
    same.append(type(a.type) is type(b.type) and a.type == b.type and a.handle.dtype == b.handle.dtype
                and a.handle.data.dtype == b.handle.data.dtype and a.handle.data.tolist() == b.handle.data.tolist()
                and provenance.origin(b.handle) == (arg.untyped_storage().data_ptr() if type(arg) is torch.Tensor
                                                    else provenance.origin(a.handle)))
print(json.dumps({"same": same, "args": len(args)}))
'''


def test_typed_args_are_tritons_own():
    """_implicit_cvt from the table: the same type, handle type and data as Triton's for tensors of every dtype
    (views, offsets, transposes), ints of every range, and whatever goes to Triton's own."""
    proc = subprocess.run([sys.executable, "-c", TYPED], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["args"] > 40 and all(report["same"]), report


EXECUTORS = r'''
import os, json
os.environ["TRITON_INTERPRET"] = "1"
import triton, triton.language as tl
from triton.runtime import interpreter
from tdebug.interpreter.fast import launch_memo

@triton.jit
def k1(x_ptr, n, BLOCK: tl.constexpr, flag: tl.constexpr = 1):
    pass

@triton.jit
def k2(x_ptr, y, z):
    pass

triton_own = interpreter.GridExecutor.__init__
memo = launch_memo._constexprs_once(triton_own)
same = []
for kernel in (k1, k2, k1, k2, k1):
    fn, names = kernel.fn, list(kernel.arg_names)
    a, b = object.__new__(interpreter.GridExecutor), object.__new__(interpreter.GridExecutor)
    triton_own(a, fn, names, (3,), [])
    memo(b, fn, names, (3,), [])
    same.append(vars(a) == vars(b))
print(json.dumps({"same": same, "constexprs": vars(b)["constexprs"]}))
'''


def test_constexprs_found_once_are_tritons_own():
    """GridExecutor.__init__ through the memo: the same fields as Triton's own, a kernel's second executor too."""
    proc = subprocess.run([sys.executable, "-c", EXECUTORS], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["same"] == [True] * 5 and report["constexprs"] == ["BLOCK", "flag"], report
