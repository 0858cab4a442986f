"""A launch's fixed cost cut without changing what it does: Triton's copy of the host copies home is skipped only
where every copy it would make is of a storage onto itself; a launch's arguments bound as inspect.getcallargs binds
them; plain CPU tensors are their own host copies, anything else gets Triton's; torch.empty poisoned by numpy."""

from __future__ import annotations

import torch
from triton.runtime import interpreter

from tdebug.interpreter import versions
from tdebug.interpreter.batched import grid_loop


def _home_after(restore, args_dev: list, args_hst: list, kwargs: dict, kwargs_hst: dict) -> list[list[float]]:
    restore(None, args_dev, args_hst, kwargs, kwargs_hst)
    return [t.tolist() for t in args_dev + list(kwargs.values()) if isinstance(t, torch.Tensor)]


def _arrangements():
    """(args_dev, args_hst, kwargs, kwargs_hst) made fresh: own host copies, other host copies, aliases of both."""
    def fresh():
        x, y = torch.arange(4.0), torch.arange(4.0) + 10
        return x, y, x.clone() + 100, y.clone() + 100
    x, y, cx, cy = fresh()
    yield "own", [x, y], [x, y], {}, {}
    x, y, cx, cy = fresh()
    yield "copies", [x, y], [cx, cy], {}, {}
    x, y, cx, cy = fresh()
    yield "one copy", [x, y], [x, cy], {}, {}
    x, y, cx, cy = fresh()
    yield "alias, copy last", [x, x], [x, cx], {}, {}
    x, y, cx, cy = fresh()
    yield "alias, own last", [x, x], [cx, x], {}, {}  # Triton copies x onto itself last: cx never goes home
    x, y, cx, cy = fresh()
    yield "tuple and kwarg", [(x, 3)], [(x, 3)], {"out": y}, {"out": cy}
    x, y, cx, cy = fresh()
    yield "view", [x[1:]], [x[1:]], {}, {}


def test_copy_home_same_as_triton_in_every_arrangement():
    triton_restore = versions.original_of(interpreter.GridExecutor._restore_args_dev)  # Triton's, not tdebug's
    calls: list[int] = []

    def counted(*args):
        calls.append(1)
        return triton_restore(*args)

    ours = grid_loop._restore_home(counted)
    skipped = set()
    for (name, *ours_args), (_, *triton_args) in zip(_arrangements(), _arrangements()):
        before = len(calls)
        assert _home_after(ours, *ours_args) == _home_after(triton_restore, *triton_args), name
        if len(calls) == before:
            skipped.add(name)
    assert skipped == {"own", "alias, own last", "view"}


def _kernel_like(x_ptr, y_ptr, n, BLOCK=128, FLAG=False):
    pass


def test_call_args_are_getcallargs_in_the_same_order():
    import inspect

    import pytest

    calls = [((1, 2, 3), {}), ((1, 2), {"n": 3}), ((1, 2, 3, 64), {"FLAG": True}), ((), {"y_ptr": 2, "x_ptr": 1,
             "n": 3, "FLAG": 1}), ((1, 2, 3, 4, 5), {}), ((1,), {"FLAG": 0, "n": 3, "y_ptr": 2})]
    for args, kwargs in calls:
        want = inspect.getcallargs(_kernel_like, *args, **kwargs)
        got = grid_loop._call_args(_kernel_like, args, kwargs)
        assert got == want and list(got) == list(want), (args, kwargs)
    for args, kwargs in [((1, 2), {}), ((1, 2, 3, 4, 5, 6), {}), ((1, 2, 3), {"x_ptr": 1}), ((1, 2, 3), {"z": 1})]:
        with pytest.raises(TypeError) as triton_error:
            inspect.getcallargs(_kernel_like, *args, **kwargs)
        with pytest.raises(TypeError) as ours:
            grid_loop._call_args(_kernel_like, args, kwargs)
        assert str(ours.value) == str(triton_error.value)


def test_plain_cpu_tensors_are_their_own_host_copies():
    x, y = torch.arange(4.0), torch.empty(4)
    args, kwargs = grid_loop._cpu_host_args(None, (x, y, 4), {"scale": 2.0, "out": y[1:]})
    assert args[0] is x and args[1] is y and args[2] == 4 and kwargs["out"].data_ptr() == y[1:].data_ptr()
    needs_grad = torch.ones(4, requires_grad=True)
    for others in [(needs_grad,), ((x, y),), (torch.nn.Parameter(torch.ones(2)),)]:
        assert grid_loop._cpu_host_args(None, (x, *others), {}) is None, others
    assert grid_loop._cpu_host_args(None, (x,), {"t": (x,)}) is None
    import triton
    import triton.language as tl

    reinterpreted = triton.reinterpret(x, tl.int32)  # a TensorWrapper: Triton unwraps and rewraps it
    assert grid_loop._cpu_host_args(None, (reinterpreted,), {}) is None


REPATCHED = r'''
import json, os, sys
os.environ["TRITON_INTERPRET"] = "1"
from tdebug.runtime.recipe import Recipe, install
install(Recipe(interpret=True))
import torch
import triton
import triton.language as tl


@triton.jit
def apply_exp(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.exp(tl.load(x_ptr + offs)))


x = torch.rand(64) + 0.5
outs, same = [], []
original_exp = tl.exp
for step in range(4):
    if step == 2:
        tl.exp = tl.log  # the language changed between launches (another builtin under the name)
    y = torch.empty_like(x)
    apply_exp[(2,)](x, y, BLOCK=32)
    outs.append(torch.allclose(y, torch.log(x)) if step >= 2 else torch.allclose(y, torch.exp(x)))
    same.append(tl.exp is (tl.log if step >= 2 else original_exp))
print(json.dumps({"outs": outs, "same": same}))
'''


def test_language_changed_between_launches_is_patched_anew(tmp_path):
    """The builtins listed once per process (lean.py) are listed again when one of them is no longer the
    package's attribute: the launch after the change runs the new builtin and leaves it in place."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    script = tmp_path / "repatched.py"
    script.write_text(REPATCHED)
    for executor in ("batched", "serial"):
        env = {**os.environ, "PYTHONPATH": str(root), "TDEBUG_EXECUTOR": executor}
        proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=root, env=env,
                              timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        report = json.loads(proc.stdout.strip().splitlines()[-1])
        assert report == {"outs": [True] * 4, "same": [True] * 4}, (executor, report)


REBOUND = r'''
import json, os
os.environ["TRITON_INTERPRET"] = "1"
from tdebug.runtime.recipe import Recipe, install
install(Recipe(interpret=True))
import torch
import triton
import triton.language as tl

my_op = None  # a module-level alias: no builtin at first, then one, then another


@triton.jit
def apply(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, my_op(tl.load(x_ptr + offs)))


x = torch.rand(64) + 0.5
outs = []
for op, ref in ((tl.exp, torch.exp), (tl.log, torch.log), (tl.exp, torch.exp)):
    my_op = op
    y = torch.empty_like(x)
    apply[(2,)](x, y, BLOCK=32)
    outs.append(torch.allclose(y, ref(x)))
print(json.dumps({"outs": outs, "restored": my_op is tl.exp}))
'''


def test_alias_rebound_between_launches_is_patched_anew(tmp_path):
    """aliases.py remembers which objects are builtins, not which names hold them: a module-level alias bound to
    another builtin between launches runs that builtin at the next launch, and holds it again after."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    script = tmp_path / "rebound.py"
    script.write_text(REBOUND)
    for executor in ("batched", "serial"):
        env = {**os.environ, "PYTHONPATH": str(root), "TDEBUG_EXECUTOR": executor}
        proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=root, env=env,
                              timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert json.loads(proc.stdout.strip().splitlines()[-1]) == {"outs": [True] * 3, "restored": True}, executor


def test_poison_through_numpy_sets_the_bits_fill_sets():
    """poison_ of a contiguous CPU tensor writes its bytes with numpy (no torch op); the bits are fill_'s, for
    every dtype with a pattern, views at an offset included; a dtype without one is left alone."""
    from tdebug.catalogue import poison

    dtypes = [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int8, torch.uint8, torch.int16,
              torch.int32, torch.int64, torch.uint16, torch.uint32, torch.uint64, torch.bool]
    for dtype in dtypes:
        base = torch.zeros(37, dtype=dtype)
        view = base[3:29]
        poison.poison_(view)  # the numpy path
        want = torch.zeros(37, dtype=dtype)
        bits = poison._bits_view(want[3:29])
        if bits is not None:
            bits[0].fill_(bits[1])
        assert torch.equal(base.view(torch.uint8), want.view(torch.uint8)), dtype
        if bits is not None:
            assert poison.poison_mask(base[3:29]).all() and not poison.poison_mask(base[:3]).any(), dtype
