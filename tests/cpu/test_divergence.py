"""The divergence check's CPU-testable parts (tdebug.sanitize.divergence): the dtype-aware comparison, the
compiled twin of an interpreted kernel (device functions and libdevice as compiled Triton has them), and a
kernel it could not compile becoming a NOT CHECKED note, never a finding. The GPU half: tests/gpu/."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import torch

from tdebug.report import Finding
from tdebug.runtime.results import CaseResult, JobResult
from tdebug.sanitize.combined import merge_engines
from tdebug.sanitize.divergence import compare

ROOT = Path(__file__).resolve().parents[2]


def test_integers_compare_bit_for_bit_and_floats_within_checks_tolerance():
    a = torch.tensor([1, 2, 3], dtype=torch.int32)
    differ, rtol, atol = compare(a, torch.tensor([1, 2, 4], dtype=torch.int32), atomic=False)
    assert differ.tolist() == [False, False, True] and rtol == 0 and atol == 0
    torch.manual_seed(0)
    x = torch.randn(1000)
    nudged = x * (1 + 1e-7)  # an fp32 sum in another order: within tolerance
    nudged[17] += 0.5  # a real divergence
    nudged[3] = x[3] = float("nan")  # NaN = NaN
    differ, rtol, atol = compare(nudged, x, atomic=False)
    assert differ.nonzero()[0].tolist() == [17] and rtol > 0 and atol > 0


def test_a_tensor_compared_chunk_by_chunk_is_judged_as_a_whole(monkeypatch):
    """compare() works CHUNK elements at a time (a 1 GiB tensor's float64 copies would take ten times its size):
    the same mask, tolerance and atol (scaled by the largest finite element of all chunks) as one piece, on a
    strided view with NaN, infinities and the largest element in the last chunk; integers too."""
    from tdebug.catalogue.compare import outside_tolerance, scaled_atol
    from tdebug.sanitize import divergence

    torch.manual_seed(0)
    want = torch.randn(40, 30)[:, ::2]  # not contiguous
    want[39, 14] = 1e4
    want[3, 3], want[5, 5] = float("nan"), float("inf")
    got = want * (1 + 1e-7)
    got[2, 2] += 0.5
    got[7, 1] += 0.05  # within atol only with the largest element (1e4, in the last chunk) counted
    got[5, 5] = float("-inf")
    monkeypatch.setattr(divergence, "CHUNK", 7)
    differ, rtol, atol = compare(got, want, atomic=False)
    assert atol == scaled_atol(want.double(), divergence._tolerance(torch.float32)[1]) and atol > 0.05
    whole = outside_tolerance(got.double(), want.double(), rtol, atol).numpy()
    assert differ.shape == (40, 15) and (differ == whole).all() and differ.sum() >= 2
    assert differ[5, 5] and differ[2, 2] and not differ[3, 3] and not differ[7, 1]
    ints = torch.randint(-5, 5, (33,), dtype=torch.int32)
    bumped = ints.clone()
    bumped[30] += 1
    bumped[31] += 2
    assert compare(bumped, ints, atomic=False)[0].nonzero()[0].tolist() == [30, 31]
    assert compare(bumped, ints, atomic=False, from_floats=True)[0].nonzero()[0].tolist() == [31]


def test_floats_of_a_launch_that_read_bf16_are_compared_at_bf16s_tolerance():
    """An fp32 rstd of bf16 rows (Liger's poly_norm): its sums are rounded to bf16 step by step, in an order the
    compiled reduction need not share; compared at bf16's tolerance, an fp32 kernel's at fp32's."""
    torch.manual_seed(0)
    want = torch.rand(300) + 0.5
    got = want * (1 + 3e-3)  # a bf16 sum ordered otherwise: 0.3 % apart
    assert compare(got, want, atomic=False)[0].all()
    differ, rtol, _ = compare(got, want, atomic=False, floor=torch.bfloat16)
    assert not differ.any() and rtol > 1e-3
    assert compare(got, want, atomic=False, floor=torch.float32)[0].all()
    got[7] += 1.0  # beyond bf16's tolerance too
    assert compare(got, want, atomic=False, floor=torch.bfloat16)[0].nonzero()[0].tolist() == [7]


def test_integers_converted_from_floats_may_part_by_one_code():
    a = torch.tensor([0, 127, -128, 5], dtype=torch.int8)
    differ, _, atol = compare(a, torch.tensor([1, 126, -127, 7], dtype=torch.int8), atomic=False, from_floats=True)
    assert differ.tolist() == [False, False, False, True] and atol == 1
    big = torch.tensor([2**64 - 1, 0], dtype=torch.uint64)
    differ, _, _ = compare(big, torch.tensor([0, 1], dtype=torch.uint64), atomic=False, from_floats=True)
    assert differ.tolist() == [False, False]  # 2**64 - 1 and 0 are one code apart in the type's wrap
    flags = torch.tensor([True, False])
    differ, _, _ = compare(flags, torch.tensor([False, False]), atomic=False, from_floats=True)
    assert differ.tolist() == [True, False]  # booleans stay bit for bit


ONE_CODE = textwrap.dedent('''
    import sys
    sys.path.insert(0, {root!r})
    from tdebug.interpreter import patches
    patches.install()
    import torch
    import triton
    import triton.language as tl
    from tdebug.sanitize import divergence

    @triton.jit
    def quantise(x_ptr, q_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(q_ptr + offs, (tl.load(x_ptr + offs) * 3.0).to(tl.int32))

    @triton.jit
    def copy(x_ptr, q_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(q_ptr + offs, tl.load(x_ptr + offs))

    class Compiled:  # the compiled side: the interpreter's result, one element moved by `by`
        def __init__(self, by):
            self.by = by

        def run(self, x, q, BLOCK, grid, warmup):
            q.copy_((x * 3).to(torch.int32) if x.is_floating_point() else x)
            q[5] += self.by

    for kernel, by, want in ((quantise, 1, 0), (quantise, 2, 1), (copy, 1, 1)):
        divergence.DEVICES = ("cpu",)
        divergence.compiled_function = lambda fn, kwargs=None, by=by: Compiled(by)
        found = []
        check = divergence.DivergenceCheck(found.append, "script")
        check.install()
        x = torch.randint(-50, 50, (64,)).to(torch.float32 if kernel is quantise else torch.int32)
        q = torch.full((64,), -7, dtype=torch.int32)
        kernel[(1,)](x, q, BLOCK=64)
        assert check.compared == 1 and len(found) == want, (kernel, by, found)
        assert torch.equal(q, (x * 3).to(torch.int32) if kernel is quantise else x)  # the interpreted side kept
        assert check.float_to_int == (kernel is quantise)
    print("ok")
''')


def test_a_launch_that_converts_floats_to_integers_is_compared_within_one_code():
    """The interpreted launch's float -> int conversions are seen (the builder's fp_to_si/fp_to_ui), and its
    integer outputs may then part from the compiled ones by one code (compiled fp32 `/`, `exp` are approximate);
    a kernel that converts nothing is compared bit for bit."""
    done = subprocess.run([sys.executable, "-c", ONE_CODE.format(root=str(ROOT))], capture_output=True, text=True,
                          env={**os.environ, "TRITON_INTERPRET": "1"}, timeout=300)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]


SCRIPT = textwrap.dedent('''
    import sys
    sys.path.insert(0, {root!r})
    from tdebug.interpreter import patches
    patches.install()
    import torch
    import triton
    import triton.language as tl
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.language.extra import libdevice
    from triton.runtime.jit import JITFunction
    from tdebug.sanitize.divergence import compiled_function, compiled_language, snapshot_language

    snapshot_language()
    my_tanh = libdevice.tanh

    @triton.jit
    def helper(x):
        return x * 2

    @triton.jit
    def kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
        total = tl.sum(x, axis=0) + x.sum(axis=0)
        tl.store(out_ptr + offs, my_tanh(helper(x)) + total + tl.cumsum(x, axis=0), mask=offs < n)

    x, out = torch.randn(100), torch.empty(100)
    kernel[(1,)](x, out, 100, BLOCK=128)  # interpreted: the language is left patched by Triton's interpreter
    first = out.clone()
    jit = compiled_function(kernel.fn)
    assert isinstance(jit, JITFunction) and isinstance(jit.fn.__globals__["helper"], JITFunction)
    assert jit.fn.__globals__["my_tanh"] is not my_tanh  # tdebug's numpy libdevice undone for the compiler
    assert compiled_function(kernel.fn) is jit
    with compiled_language():
        src = ASTSource(fn=jit, signature={{"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}},
                        constexprs={{"BLOCK": 128}})
        ptx = triton.compile(src, target=GPUTarget("cuda", 90, 32)).asm["ptx"]
    assert ".entry kernel" in ptx
    @triton.jit
    def tiles(x_ptr, H: tl.constexpr, BLOCK: tl.constexpr):
        for t in tl.static_range(triton.cdiv(H, BLOCK)):  # a constexpr only where Triton is not interpreting
            tl.store(x_ptr + t * BLOCK + tl.arange(0, BLOCK), tl.zeros((BLOCK,), tl.float32))

    with compiled_language():
        src = ASTSource(fn=compiled_function(tiles.fn), signature={{"x_ptr": "*fp32", "H": "constexpr",
                                                                   "BLOCK": "constexpr"}},
                        constexprs={{"H": 100, "BLOCK": 32}})
        assert ".entry tiles" in triton.compile(src, target=GPUTarget("cuda", 90, 32)).asm["ptx"]
    from triton import knobs
    assert knobs.runtime.interpret  # and back as it was
    kernel[(1,)](x, out, 100, BLOCK=128)  # and the interpreter still works afterwards
    assert torch.equal(out, first)
    print("ok")
''')


def test_compiled_twin_of_an_interpreted_kernel(tmp_path):
    script = tmp_path / "twin.py"
    script.write_text(SCRIPT.format(root=str(ROOT)))
    # a cache of its own: a compiled kernel found in the cache is not generated again (nor its errors met)
    env = dict(os.environ, TRITON_INTERPRET="1", PYTHONPATH=str(ROOT), TRITON_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stdout + proc.stderr


MODULE_HELPER = textwrap.dedent('''
    import sys
    sys.path.insert(0, {root!r})
    sys.path.insert(0, {here!r})
    from tdebug.interpreter import patches
    patches.install()
    import torch
    import triton
    import triton.language as tl
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.runtime.interpreter import InterpretedFunction
    from tdebug.sanitize.divergence import compiled_function, compiled_language, snapshot_language
    import helpers  # FlagGems style: jit helpers reached as attributes of another module

    snapshot_language()

    @triton.jit
    def kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        pid = helpers.program_id(0)
        offs = pid * BLOCK + tl.arange(0, BLOCK)
        mask = (offs < n) and (offs >= 0)
        x = tl.load(x_ptr + offs, mask=mask, other=0.0)
        tl.store(out_ptr + offs, helpers.twice(x) + tl.max(x, axis=0), mask=mask)

    x, out = torch.randn(100), torch.empty(100)
    kernel[(1,)](x, out, 100, BLOCK=128)
    jit = compiled_function(kernel.fn)
    with compiled_language():
        src = ASTSource(fn=jit, signature={{"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}},
                        constexprs={{"BLOCK": 128}})
        ptx = triton.compile(src, target=GPUTarget("cuda", 90, 32)).asm["ptx"]
    assert ".entry kernel" in ptx
    assert isinstance(helpers.twice, InterpretedFunction)  # the module as it was, after the compile
    kernel[(1,)](x, out, 100, BLOCK=128)
    torch.testing.assert_close(out, x * 2 + x.max())
    print("ok")
''')

HELPERS = textwrap.dedent('''
    import triton
    import triton.language as tl


    @triton.jit
    def program_id(axis: tl.constexpr):
        return tl.program_id(axis).to(tl.int64)


    @triton.jit
    def twice(x):
        return x * 2
''')


def test_compiled_twin_reaches_jit_helpers_through_a_module_attribute(tmp_path):
    (tmp_path / "helpers.py").write_text(HELPERS)
    script = tmp_path / "modhelper.py"
    script.write_text(MODULE_HELPER.format(root=str(ROOT), here=str(tmp_path)))
    env = dict(os.environ, TRITON_INTERPRET="1", PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stdout + proc.stderr


def test_a_kernel_not_compared_is_one_note_line_unless_divergence_is_asked_for():
    note = Finding(check="note", kernel="k", message="divergence not compared for k: ...",
                   extra={"unchecked": "divergence"})
    race = Finding(check="race", message="race", kernel="k", file="/x/s.py", line=3)

    def interp() -> JobResult:
        return JobResult(kernel="s.py", labels=["s.py", "t.py"],
                         cases=[CaseResult(0, "s.py", "fail", [note]), CaseResult(1, "t.py", "fail", [note, race])])

    result, notes, coverage = merge_engines(None, interp())
    assert [c.status for c in result.cases] == ["pass", "fail"]
    assert [f.check for f in result.cases[1].findings] == ["race"]
    assert notes == [] and len(coverage) == 2 and all("divergence not compared" in n for n in coverage)
    result, notes, coverage = merge_engines(None, interp(), strict_divergence=True)  # --check divergence
    assert [c.status for c in result.cases] == ["pass", "fail"]
    assert len(notes) == 2 and all("divergence not compared" in n for n in notes) and coverage == []


class _Kernel:
    __name__ = "k"
    arg_names = ["x_ptr", "out_ptr"]
    fn = None
    kwargs = None


class _Compiled:
    def run(self, x, out, grid=None, warmup=False):
        out.copy_(x * 2)
        out[3] += 1.0  # the compiled side parts from the interpreter at one element


def _interpreted(fn, x, out, grid=None, warmup=False):
    out.copy_(x * 2)


def test_each_launch_is_compared_and_the_script_goes_on_with_the_side_asked_for(monkeypatch):
    """DivergenceCheck.launch on host tensors standing in for CUDA ones: both sides start from the same snapshot,
    the differing element is the finding, and the tensor holds the compiled results (pytest --tdebug on a GPU) or
    the interpreted ones (sanitize's interpreter pass)."""
    from tdebug.sanitize import divergence

    monkeypatch.setattr(divergence, "DEVICES", ("cpu",))
    monkeypatch.setattr(divergence, "compiled_function", lambda fn, kwargs=None: _Compiled())
    torch.manual_seed(0)
    for keep in ("compiled", "interpreted"):
        found: list[Finding] = []
        check = divergence.DivergenceCheck(found.append, "pytest", keep=keep)
        x = torch.randn(8)
        out = torch.full((8,), float("nan"))
        check.launch(_interpreted, (_Kernel(), x, out), {"grid": (1,)})
        want = x * 2
        if keep == "compiled":
            want[3] += 1.0
        assert torch.equal(out, want), keep
        assert check.compared == 1
        (f,) = found
        assert f.check == "divergence" and f.tensor == "out_ptr" and f.count == 1 and f.indices == [[3]]
        assert f.extra["compiled"] == float(x[3] * 2 + 1) and f.extra["interpreted"] == float(x[3] * 2)


def test_check_divergence_without_the_gpus_interpreter_pass_is_refused(tmp_path):
    script = tmp_path / "s.py"
    script.write_text("print('never run')\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT), CUDA_VISIBLE_DEVICES="")
    for device, code in (("cpu", 2), ("auto", 3)):
        proc = subprocess.run([sys.executable, "-m", "tdebug", "sanitize", "--device", device, "--check", "divergence",
                               str(script)], capture_output=True, text=True, env=env, timeout=120)
        assert proc.returncode == code, proc.stdout + proc.stderr
        assert "--check divergence" in proc.stderr and "never run" not in proc.stdout
        assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


def test_a_launch_over_the_size_cap_runs_compiled_only_with_a_note(monkeypatch):
    """pytest --tdebug on a GPU: a launch whose tensors take more than the cap is not interpreted (its host copies
    and shadows would take several times its size): it runs compiled, the test sees its results, and a note (no
    failure of the test) says the interpreter did not check it."""
    from tdebug.pytest_plugin.sanitized_test import SanitizedTest
    from tdebug.sanitize import divergence

    monkeypatch.setattr(divergence, "DEVICES", ("cpu",))
    monkeypatch.setattr(divergence, "compiled_function", lambda fn, kwargs=None: _Compiled())

    def never(*args, **kwargs):
        raise AssertionError("interpreted although over the cap")

    found: list[Finding] = []
    check = divergence.DivergenceCheck(found.append, "pytest", keep="compiled", max_bytes=16)
    x = torch.randn(8)
    out = torch.full((8,), float("nan"))
    check.launch(never, (_Kernel(), x, out), {"grid": (1,)})
    want = x * 2
    want[3] += 1.0
    assert torch.equal(out, want) and check.compared == 0
    (note,) = found
    assert note.check == "note" and "run compiled only" in note.message and "--tdebug-max-mib" in note.message
    assert not SanitizedTest(findings=found).failed
    check = divergence.DivergenceCheck(found.append, "pytest", keep="compiled", max_bytes=1 << 20)  # under it
    check.launch(_interpreted, (_Kernel(), x, out), {"grid": (1,)})
    assert check.compared == 1
