"""tdebug.interpreter.versions: every Triton internal tdebug patches exists in the running Triton with the
parameters tdebug binds by name (the one test a changed internal fails), wrappers fit any parameter order,
and an error inside tdebug is tdebug's (exit 3, one line), never the kernel's."""

import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tdebug.cli import cli
from tdebug.interpreter import versions
from tdebug.interpreter.versions import InternalError, bind, patch

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).parent / "data"


def _install_all(*args: str) -> dict:
    out = subprocess.run([sys.executable, str(DATA / "versions_install_all.py"), *args], capture_output=True,
                         text=True, cwd=ROOT, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_every_internal_tdebug_patches_fits_the_running_triton():
    """Installs every patch (interpreter, sanitizer, viz guard and trace, symbolic where triton-viz works)
    in a fresh interpreter process, then compares versions.INTERNALS with the running Triton."""
    report = _install_all()
    assert report["version"] == versions.TRITON_VERSION
    assert report["problems"] == [], f"Triton {report['version']} changed internals tdebug uses: {report['problems']}"
    assert report["unregistered"] == [], f"patched but not listed in versions.INTERNALS: {report['unregistered']}"
    must = {"InterpreterBuilder.create_masked_load", "InterpreterBuilder.create_masked_store",
            "GridExecutor._init_args_hst", "Autotuner.run", "InterpretedFunction.run"}
    assert must <= set(report["patched"])


def test_the_layers_on_every_internal_do_not_depend_on_the_order_the_parts_were_installed_in():
    """Every part installed in the opposite order (the batched engine's layer first, the interpreter's last)
    gives the same stack on every internal as the usual order: versions.LAYERS decides, not install order."""
    first, second = _install_all(), _install_all("reversed")
    usual, reversed_ = first["layers"], second["layers"]
    assert usual == reversed_
    # The checks listen to the one wrapper of the memory ops (memory_events), outermost first, in LAYERS' order.
    assert first["listening"] == second["listening"]
    assert first["listening"]["create_masked_store"] == ["trace", "sanitizer", "nan", "stores", "safe_launch"]
    assert first["listening"]["create_atomic_cas"] == ["trace", "locks", "sanitizer", "safe_launch"]
    assert first["listening"]["create_masked_load"] == ["trace", "locks", "sanitizer", "safe_launch"]  # volatile flags
    # A launch's listeners (grid_loop.listen), outermost first, in LAYERS' order; what still wraps the launch.
    assert first["launching"] == second["launching"]
    assert first["launching"] == {"around_launch": ["serialise", "launch_clock", "follow", "repro", "sanitizer"],
                                  "on_launch": ["host_memory", "nan", "device_tables", "launch_record"],
                                  "host_args": ["sanitizer"],
                                  "before_host_args": ["limits"],
                                  "on_host_args": ["trace", "sanitizer", "stores", "safe_launch", "device_tables"],
                                  "on_launch_end": ["host_memory", "nan", "stores", "device_tables"]}
    assert usual["GridExecutor.__call__"] == ["grid_loop"]  # every other layer of a launch: a listener of it
    assert usual["InterpreterBuilder.create_masked_store"] == ["memory_guard", "batch_memory", "overflow",
                                                               "memory_events", "program_axis", "launch_replay"]
    for name, layers in usual.items():
        assert layers, f"{name}: replaced since tdebug patched it"
        assert [versions.LAYERS.index(x) for x in layers] == sorted(versions.LAYERS.index(x) for x in layers), name


class Calls:
    def op(self, x):
        return [x]


def layer(tag: str):
    def make(original):
        def op(self_or_x, *rest):
            return [*original(self_or_x, *rest), tag]

        return op

    return make


def test_a_layer_installed_late_goes_below_the_layers_above_it():
    """sanitizer first, then stores (below it), then follow (above both): the call runs stores' wrapper inside
    the sanitizer's inside the follower's, and each wrapper still binds by the original's signature."""
    try:
        patch(Calls, "op", layer("sanitizer"), layer="sanitizer")
        patch(Calls, "op", layer("stores"), layer="stores")
        patch(Calls, "op", layer("follow"), layer="follow")
        assert Calls().op(1) == [1, "stores", "sanitizer", "follow"]
        assert versions.layers_of(Calls, "op") == ["stores", "sanitizer", "follow"]
        assert list(inspect.signature(Calls.op).parameters) == ["self", "x"]
    finally:
        versions.unpatch_all()
    assert Calls().op(1) == [1]


def test_a_patch_names_a_known_layer():
    with pytest.raises(InternalError, match="tdebug has no layer 'nope'"):
        patch(Calls, "op", layer("x"), layer="nope")
    with pytest.raises(InternalError, match="tdebug has no layer 'nope'"):
        versions.patcher("nope")


class Builder36:
    def create_masked_load(self, ptrs, mask, other, cache_modifier, eviction_policy, is_volatile):
        return ("3.6", ptrs, mask, other, cache_modifier, eviction_policy, is_volatile)


class Builder38:
    def create_masked_load(self, ptrs, mask, other, cache_policy, is_volatile):
        return ("3.8", ptrs, mask, other, cache_policy, is_volatile)


def masking(original):
    def create_masked_load(*args, **kwargs):
        call = bind(original, args, kwargs)
        call.arguments["mask"] = f"safe({call.arguments['mask']})"
        return original(*call.args, **call.kwargs)

    return create_masked_load


@pytest.mark.parametrize("builder_class, cache_args", [(Builder36, (".ca", "evict_last")), (Builder38, (7,))])
def test_one_wrapper_fits_both_signatures_and_stacks(builder_class, cache_args):
    builder = builder_class()
    try:
        patch(builder, "create_masked_load", masking, layer="test")
        patch(builder, "create_masked_load", masking, layer="test")  # a second patch binds through the first
        out = builder.create_masked_load("p", "m", None, *cache_args, is_volatile=True)
        assert out == (out[0], "p", "safe(safe(m))", None, *cache_args, True)
    finally:
        versions.unpatch_all()
    assert builder.create_masked_load.__func__ is builder_class.create_masked_load


def test_a_wrapper_that_no_longer_fits_is_an_internal_error_naming_tdebug():
    with pytest.raises(InternalError, match=r"tdebug's wrapper of .*create_masked_load does not fit Triton"):
        bind(Builder38().create_masked_load, ("p", "m", None, None, None, False), {})


def test_patching_a_missing_internal_says_which_triton():
    with pytest.raises(InternalError, match=r"tdebug cannot patch Builder38.create_make_block_ptr: Triton .* no"):
        patch(Builder38(), "create_make_block_ptr", lambda original: original, layer="test")


@pytest.mark.parametrize("target", [["kernels/add.py", "--shape", "100"], [str(DATA / "swallows_errors.py")]])
def test_internal_error_in_the_sanitizer_exits_3_with_one_line(tmp_path, target):
    """A fault inside tdebug's sanitizer (its memory checker handed no addresses, through a sitecustomize
    the child process inherits) ends `tdebug sanitize` with exit code 3 and one line naming tdebug; the
    kernel is not blamed and nothing says 'clean', even when the script catches the exception."""
    (tmp_path / "sitecustomize.py").write_text(
        "from tdebug.sanitize import memory\n"
        "_access = memory.LaunchChecker.access\n"
        "def access(self, kind, ptrs, *rest):\n"
        "    return _access(self, kind, None, *rest)\n"
        "memory.LaunchChecker.access = access\n")
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"}
    out = subprocess.run([sys.executable, "-m", "tdebug", "sanitize", *target, "--device", "cpu"],
                         capture_output=True, text=True, cwd=ROOT, timeout=300, env=env)
    assert out.returncode == 3, (out.stdout, out.stderr)
    errors = [ln for ln in out.stderr.splitlines() if ln.startswith("tdebug: error:")]
    assert len(errors) == 1, out.stderr
    assert "internal error in tdebug" in errors[0] and f"Triton {versions.TRITON_VERSION}" in errors[0]
    assert "tdebug/sanitize/memory.py" in errors[0] and "not in the kernel" in errors[0]
    assert "Traceback" not in out.stderr + out.stdout
    assert "clean" not in out.stdout and "exception" not in out.stdout


@pytest.mark.parametrize("args, option", [(["sanitize", "kernels/add.py", "--engine", "symbolic"], "--engine symbolic"),
                                          (["viz", "kernels/add.py", "--serve"], "--serve")])
def test_triton_viz_features_name_the_tritons_they_work_with(monkeypatch, args, option):
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(versions, "TRITON", (3, 9, 0))
    monkeypatch.setattr(versions, "TRITON_VERSION", "3.9.0")
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and option in lines[0]
    assert f"Triton {versions.TRITON_VIZ_TRITONS} only; this is Triton 3.9.0" in lines[0]


def test_help_documents_the_exit_codes():
    for args in (["--help"], ["sanitize", "--help"], ["viz", "--help"], ["check", "--help"]):
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 0
        assert "Exit codes: 0 clean / all pass; 1 findings or failures; 2 usage error; 3 tdebug could not" in \
            " ".join(result.output.split())


def test_range_over_a_scalar_tensor_runs_with_any_numpy():
    """Triton 3.6's interpreter breaks on numpy >= 2.4 here; tdebug's patch (3.6 only) fixes it."""
    r = CliRunner().invoke(cli, ["run", str(DATA / "range_over_scalar.py")])
    assert r.exit_code == 0, r.output

