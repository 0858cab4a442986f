"""The one recipe that wires tdebug into a process (tdebug.runtime.recipe): what a job's recipe installs, the
`Installed` it gives back, and that every process which sanitizes gets the same parts (pytest --tdebug included)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tdebug.interpreter.versions import triton_viz_problem
from tdebug.runtime.job import Job, JobLimits, SanitizeOptions
from tdebug.runtime.recipe import Follow, Recipe

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[2]


def test_a_jobs_recipe_follows_its_kind_engine_and_options(monkeypatch, tmp_path):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    script = Job(target="a/b.py", kind="script", sanitize=SanitizeOptions(("bounds",)), limits=JobLimits(8, 0),
                 repro=str(tmp_path / "r"))
    recipe = Recipe.for_job(script, follow_folder=tmp_path / "f")
    assert recipe.interpret and recipe.exact_values and recipe.store_records and recipe.serialise
    assert recipe.limits == JobLimits(8, 0) and recipe.repro == (tmp_path / "r", "b.py")
    assert recipe.follow == Follow(tmp_path / "f", {"sanitize": {"checks": ("bounds",), "max_findings": 50},
                                                     "engine": "tdebug", "limits": {"max_programs": 8,
                                                                                    "max_bytes": 0}})
    # a spawned worker's settings go through JSON: they must make the same recipe there
    assert json.loads(json.dumps(recipe.follow.settings))["limits"] == {"max_programs": 8, "max_bytes": 0}

    spec = Recipe.for_job(Job(target="k.py", kind="spec", engine="symbolic"))
    assert spec.follow is None and not spec.serialise  # a catalogue case has no children to follow
    assert not spec.exact_values and not spec.store_records  # symbolic values: nothing exact to round or store

    monkeypatch.setenv("TRITON_INTERPRET", "0")
    gpu = Recipe.for_job(Job(target="k.py", kind="script").for_gpu(), follow_folder=tmp_path / "f")
    assert not gpu.interpret and gpu.pin_autotune and gpu.follow is None and not gpu.serialise


ENGINE_SCRIPT = """
import os, sys
os.environ["TRITON_INTERPRET"] = "1"
import torch, triton, triton.language as tl
from tdebug.runtime.recipe import Recipe, install
from tdebug.sanitize.session import SanitizerSession

@triton.jit
def add(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs) + 1.0, mask=offs < n)  # the load has no mask

installed = install(Recipe(interpret=True, store_records=sys.argv[1] == "records"), SanitizerSession(["bounds"]))
installed.sanitizer.begin_case()
x = torch.randn(100)
y = torch.empty_like(x)
add[(2,)](x, y, 100, BLOCK=64)
findings = installed.sanitizer.end_case()
print(len(installed.launches), installed.launches[0].grid, installed.recorder is not None,
      sorted({f.check for f in findings}), installed.faults())
"""


@pytest.mark.parametrize("records", ["records", "none"])
def test_the_engine_holds_what_its_recipe_installed(tmp_path, records):
    script = tmp_path / "engine_script.py"
    script.write_text(ENGINE_SCRIPT)
    out = subprocess.run([sys.executable, str(script), records], capture_output=True, text=True, timeout=300,
                         env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[-2] == f"1 (2, 1, 1) {records == 'records'} ['bounds'] []"


VIZ_TRACED_TEST = textwrap.dedent("""
    import torch
    import triton
    import triton.language as tl
    import triton_viz


    @triton_viz.trace("sanitizer")
    @triton.jit
    def scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs)  # no mask: the last block reads past x
        tl.store(y_ptr + offs, x * 3.0, mask=offs < n)


    def test_scale():
        x = torch.randn(100)
        y = torch.empty_like(x)
        scale_kernel[(2,)](x, y, 100, BLOCK=64)
        torch.testing.assert_close(y, 3 * x)
""")


@pytest.mark.skipif(triton_viz_problem() is not None, reason=str(triton_viz_problem()))
def test_pytest_tdebug_checks_a_kernel_that_carries_its_own_triton_viz_trace(pytester: pytest.Pytester):
    """The recipe gives pytest's worker what `tdebug sanitize` has: triton-viz's trace set aside, so the kernel
    runs under tdebug's sanitizer instead of hiding its accesses in triton-viz's launch path."""
    pytester.makepyfile(test_traced=VIZ_TRACED_TEST)
    report = pytester.path / "tdebug.json"
    result = pytester.runpytest_subprocess("--tdebug", "--tdebug-json", str(report), "-p", "no:cacheprovider",
                                           timeout=300)
    result.assert_outcomes(failed=1)
    (test,) = json.loads(report.read_text())["tests"]
    assert [f["check"] for f in test["findings"]] == ["bounds"], test
