"""The house mirrors the commands: packages named after them, layers that import downward only, no cycles."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "tdebug"

# Lower number = lower layer. A module may import its own package and any package of a lower layer.
LAYERS = {
    "report": 0, "settings": 0,
    "catalogue": 1,
    "interpreter": 2,
    "runtime": 3,
    "check": 4, "sanitize": 4, "bench": 4, "viz": 4,
    "exercises": 5,
    "cli": 6, "child": 6, "pytest_plugin": 6,
    "__main__": 7,
}
COMMAND_PACKAGES = {"cli", "check", "sanitize", "bench", "viz", "exercises"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _absolute(node: ast.ImportFrom, package: list[str]) -> str:
    """The module a `from ... import` names, a relative one resolved against the importing file's package."""
    if not node.level:
        return node.module or ""
    base = package[: len(package) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module) for every tdebug import in the file, lazy ones inside functions included."""
    name = _module_name(path)
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            target = _absolute(node, package)
            if not target.startswith("tdebug"):
                continue
            for alias in node.names:  # `from . import x` imports the module tdebug.<pkg>.x
                sub = f"{target}.{alias.name}"
                found.append((node.lineno, sub if _exists(sub) else target))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith("tdebug")]
    return found


def _exists(module: str) -> bool:
    path = PACKAGE.parent.joinpath(*module.split("."))
    return path.is_dir() or path.with_suffix(".py").exists()


def _layer(module: str) -> tuple[str, int]:
    parts = module.split(".")
    top = parts[1] if len(parts) > 1 else ""
    if top not in LAYERS:
        raise AssertionError(f"{module}: tdebug/{top} has no layer in test_layout.LAYERS")
    return top, LAYERS[top]


MODULES = sorted(p for p in PACKAGE.rglob("*.py"))


def test_few_loose_modules_and_packages_named_after_commands():
    loose = {p.name for p in PACKAGE.glob("*.py")} - {"__init__.py", "__main__.py"}
    assert len(loose) <= 4, loose
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    assert COMMAND_PACKAGES <= packages


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_module_says_what_lives_there_and_imports_downward(path: Path):
    tree = ast.parse(path.read_text())
    assert ast.get_docstring(tree), f"{path} opens with no docstring"
    if path == PACKAGE / "__init__.py":
        return  # the public names: re-exported from the catalogue
    source, rank = _layer(_module_name(path))
    for line, target in _imports(path):
        if target == "tdebug":
            continue
        top, target_rank = _layer(target)
        assert top == source or target_rank < rank, (
            f"{path.relative_to(PACKAGE.parent)}:{line} imports {target}: layer {top} ({target_rank}) is not "
            f"below {source} ({rank})")


def test_no_import_cycle_at_module_level():
    """Module-level imports between tdebug modules form no cycle (lazy imports inside functions may)."""
    graph: dict[str, set[str]] = {}
    for path in MODULES:
        name = _module_name(path)
        tree = ast.parse(path.read_text())
        top_level = {n.lineno for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))}
        graph[name] = {t for line, t in _imports(path) if line in top_level and t != name}
    state: dict[str, int] = {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for nxt in graph.get(node, ()):
            if state.get(nxt) == 1:
                raise AssertionError("import cycle: " + " -> ".join(stack[stack.index(nxt):] + [nxt]))
            if nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = 2

    for module in graph:
        if module not in state:
            visit(module, [module])


# -- the joins between the parts: typed jobs, one device decision -------------------------------------------

JOB_MODULE = PACKAGE / "runtime" / "job.py"
DEVICE_MODULE = PACKAGE / "runtime" / "device.py"
JOB_KEYS = {"target", "kind"}  # a dict with both is a job made by hand


def _dict_keys(node: ast.Dict) -> set[str]:
    return {k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}


def _source(path: Path) -> str:
    return str(path.relative_to(PACKAGE.parent))


def test_a_job_is_made_only_through_its_type():
    """No module builds a job as a dict, copies one with {**job, ...}, or reads one by key: Job / VizJob only."""
    bad = []
    for path in MODULES:
        if path == JOB_MODULE:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Dict):
                if JOB_KEYS <= _dict_keys(node):
                    bad.append(f"{_source(path)}:{node.lineno}: a job built as a dict")
                if any(k is None and isinstance(v, ast.Name) and v.id == "job" for k, v in zip(node.keys, node.values)):
                    bad.append(f"{_source(path)}:{node.lineno}: {{**job, ...}}")
            elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "job":
                bad.append(f"{_source(path)}:{node.lineno}: job[...]")
            elif (isinstance(node, ast.Attribute) and node.attr == "get" and isinstance(node.value, ast.Name)
                  and node.value.id == "job"):
                bad.append(f"{_source(path)}:{node.lineno}: job.get(...)")
    assert not bad, "\n".join(bad)


def test_the_child_reads_the_job_the_parent_wrote():
    from tdebug.catalogue.spec import Case
    from tdebug.runtime.job import Job, JobLimits, Plan, SanitizeOptions, VizJob

    job = Job(target="/t.py", kind="spec", plan=Plan(device="cpu", seed=7, shapes=[[3, 4]], dtypes=["fp16"]),
              sanitize=SanitizeOptions(checks=["bounds"]), limits=JobLimits(2, 3), breaks=["/t.py:4"], pid=[1, 0],
              executor="serial")
    assert Job.from_json(job.to_json()) == job
    assert job.plan.shapes == ((3, 4),) and job.pid == (1, 0)
    cased = Job(target="/t.py", kind="spec", cases=[Case((5,), "bf16")])
    assert Job.from_json(cased.to_json()) == cased
    viz = VizJob(target="/t.py", kind="script", argv=["a"], pid=(1, 0, 0), serve={"port": 1})
    assert VizJob.from_json(viz.to_json()) == viz
    with pytest.raises(AttributeError):
        job.target = "/other.py"  # frozen: a job never changes, a copy is made (Job.but, Job.for_gpu)
    for wrong in ({"kind": "notebook"}, {"engine": "fast"}, {"executor": "threads"}):
        with pytest.raises(ValueError):
            Job(**{"target": "/t.py", "kind": "script", **wrong})
    with pytest.raises(ValueError):
        Plan(device="gpu")


def test_the_executor_reaches_the_child_environment(tmp_path):
    """Job.executor travels to the child as TDEBUG_EXECUTOR (the engine reads it there)."""
    from tdebug.runtime.harness import run_job
    from tdebug.runtime.job import Job

    script = tmp_path / "show.py"
    script.write_text("import os\nprint('EXECUTOR=' + os.environ['TDEBUG_EXECUTOR'])\n")
    result = run_job(Job(target=str(script), kind="script", executor="serial"), capture=True, timeout=300)
    assert "EXECUTOR=serial" in result.logs[0].stdout, result.logs


def test_one_device_probe_and_no_module_rewrites_a_jobs_device():
    """The GPU is probed in runtime/device.py only (no torch import for it in the parent), and a job moves to
    the GPU only through Job.for_gpu: no module sets a plan's or a case's device by hand."""
    bad = []
    probes = ("cuInit", "cuDeviceGetCount", "is_available")
    for path in MODULES:
        if path in (DEVICE_MODULE, JOB_MODULE):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in probes and path.parent.name != "bench":
                bad.append(f"{_source(path)}:{node.lineno}: a GPU probe of its own ({node.attr})")
            keys = _dict_keys(node) if isinstance(node, ast.Dict) else set()
            if "device" in keys and keys & {"shape", "dtypes", "quick"}:
                bad.append(f"{_source(path)}:{node.lineno}: a case or plan's device set by hand")
            if isinstance(node, ast.Call):
                name = getattr(node.func, "attr", getattr(node.func, "id", ""))
                keywords = {k.arg for k in node.keywords}
                if name in ("but", "replace") and keywords & {"plan", "cases", "device"}:
                    bad.append(f"{_source(path)}:{node.lineno}: {name}({', '.join(sorted(keywords))}) moves a job")
    assert not bad, "\n".join(bad)


def test_device_resolves_once_for_every_command(monkeypatch):
    from tdebug.runtime import device

    monkeypatch.setattr(device, "gpu_visible", lambda: False)
    assert device.resolve("auto") is device.Device.CPU and device.resolve("cpu") is device.Device.CPU
    with pytest.raises(device.NoGpu):
        device.resolve("cuda")
    monkeypatch.setattr(device, "gpu_visible", lambda: True)
    assert device.resolve("auto") is device.Device.CUDA and device.resolve("cpu") is device.Device.CPU
    with pytest.raises(ValueError):
        device.resolve("tpu")
    from tdebug.cli import check, sanitize

    defaults = {cmd.name: next(p.default for p in cmd.params if p.name == "device")
                for cmd in (check.command, sanitize.command)}
    assert defaults == {"check": device.DEFAULT, "sanitize": device.DEFAULT}


def _device_decisions(source: str) -> list[str]:
    """`line: name` for every use of the GPU probes themselves (gpu_visible, gpu_visible_nvml) in `source`."""
    probes = ("gpu_visible", "gpu_visible_nvml")
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.Attribute):
            names = [node.attr]
        elif isinstance(node, ast.Name):
            names = [node.id]
        else:
            continue
        found += [f"{node.lineno}: {name}" for name in names if name in probes]
    return found


def test_every_command_decides_its_device_through_resolve():
    """cli/ (check, sanitize, run, bench), the pytest plugin and the exercises ask runtime.device.resolve where
    they run: no module but runtime/device.py uses the GPU probes itself."""
    found = {str(path.relative_to(PACKAGE)): uses for path in MODULES if path != DEVICE_MODULE
             for uses in [_device_decisions(path.read_text())] if uses}
    assert not found, found
    planted = ("from ..runtime.device import gpu_visible\nfrom ..runtime import device\n"
               "gpu = device.gpu_visible_nvml()\nok = device.resolve('auto')\n")
    assert _device_decisions(planted) == ["1: gpu_visible", "3: gpu_visible_nvml"]


def test_every_command_takes_its_exit_code_from_one_verdict():
    """run, check and sanitize end with Verdict.exit_code (runtime/verdict.py): no command decides 0/1/3 itself."""
    for name in ("run", "check", "sanitize"):
        text = (PACKAGE / "cli" / f"{name}.py").read_text()
        assert "Verdict.of(" in text and re.search(r"SystemExit\(\w+\.exit_code\)", text), name
        tree = ast.parse(text)
        literal_exits = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Call)
                         and getattr(n.func, "id", "") == "SystemExit" and n.args
                         and isinstance(n.args[0], ast.Constant) and n.args[0].value in (0, 1, 3)]
        assert not literal_exits, f"cli/{name}.py decides an exit code itself at lines {literal_exits}"
    assert "def exit_code" not in (PACKAGE / "cli" / "common.py").read_text()


def test_verdict_exit_codes_and_summary():
    from tdebug.report import Finding
    from tdebug.runtime.results import CaseResult
    from tdebug.runtime.verdict import COULD_NOT_RUN, Check, Status, Verdict

    def case(status: str, *checks: str, launches: int | None = 1) -> CaseResult:
        return CaseResult(index=0, label="x", status=status, findings=[Finding(check=c, message="m") for c in checks],
                          launch_count=launches)

    clean = Verdict.of([case("pass"), case("pass")])
    assert (clean.exit_code, clean.summary(), clean.clean) == (0, "clean", True)
    found = Verdict.of([case("pass"), case("fail", "bounds", "bounds", "race")])
    assert (found.exit_code, found.summary()) == (1, "2 bounds, 1 race")
    assert Verdict.of([case("pass", "unwritten")]).exit_code == 1  # never clean with a finding
    assert Verdict.of([case("weird-new-status")]).exit_code == 1  # an unknown status is never clean
    unchecked = Verdict.of([case("fail", "bounds"), case("unsupported", "unsupported")])
    assert unchecked.exit_code == 3  # part of the job not done: 3, whatever else was found
    assert Verdict.of([], fatal="cannot import x.py").exit_code == 3
    assert (Verdict.of([]).exit_code, Verdict.of([]).summary()) == (2, "nothing checked")
    assert Verdict.of([case("pass", launches=0)]).exit_code == 2  # a script that launched no kernel
    assert Verdict.of([case("quit")]).exit_code == 0  # the person quit the debugger, as they may
    assert Verdict.of([case("pass")], unchecked_notes=["a size cap stopped it"]).exit_code == 3
    assert Verdict.of([case("pass")], lint=1).exit_code == 1
    total = clean + found + Verdict.of([], fatal="x")
    assert (total.passed, total.failed, total.not_checked, total.exit_code) == (3, 1, 1, 3)
    assert total.to_json()["findings"] == {"bounds": 2, "race": 1} and total.to_json()["exit_code"] == 3
    assert {Status(s) for s in ("unsupported", "internal", "not-checked")} == COULD_NOT_RUN
    assert Check("bounds") is Check.BOUNDS and str(Check.NO_KERNEL) == "no-kernel"


def test_an_event_is_made_only_through_its_type():
    """No module writes or reads a pipe event as a dict with an "event" key: runtime/events.Event only."""
    events = PACKAGE / "runtime" / "events.py"
    bad = []
    for path in MODULES:
        if path == events:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Dict) and "event" in _dict_keys(node):
                bad.append(f"{_source(path)}:{node.lineno}: an event built as a dict")
            if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and node.slice.value == "event":
                bad.append(f"{_source(path)}:{node.lineno}: an event read as a dict")
    assert not bad, "\n".join(bad)
    from tdebug.runtime.events import Event, EventKind

    event = Event(EventKind.RESULT, {"index": 2, "status": "pass"})
    assert Event.parse(event.line()) == event and event["index"] == 2 and event.get("nope") is None
    with pytest.raises(ValueError):
        Event("progress")  # no such kind: the parent would not read it
    with pytest.raises(TypeError):
        event.data["index"] = 3  # frozen


MUTATORS = {"append", "extend", "insert", "pop", "remove", "update", "setdefault", "popitem", "add", "discard"}


def _foreign_writes(source: str, path: Path, libraries: bool = False) -> list[str]:
    """`line: target` for every assignment, augmented assignment, `del` or setattr() in `source` (the module at
    `path`) that writes into another tdebug module: an attribute or item of a module it imports, or of a name
    it imports from one (`from .patches import STATE; STATE.x = ...`); and every call of a list, dict or set
    mutator on a module's global (`grid_loop.FORCE_SERIAL.append(...)`). Such state is set through a function
    of the module that owns it. With `libraries`, the same writes into modules outside tdebug (torch, triton,
    os, ...) instead."""
    name = _module_name(path)
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    foreign = set()
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            target = _absolute(node, package)
            if target.startswith("tdebug") != libraries:
                foreign |= {a.asname or a.name for a in node.names}
        elif isinstance(node, ast.Import):
            foreign |= {a.asname or a.name.split(".")[0] for a in node.names
                        if a.name.startswith("tdebug") != libraries}

    def root(t: ast.expr) -> ast.expr:
        while isinstance(t, (ast.Attribute, ast.Subscript)):
            t = t.value
        return t

    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.Delete)):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("setattr", "delattr"):
            targets = [ast.Attribute(node.args[0], "?")] if node.args else []
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MUTATORS \
                and isinstance(node.func.value, ast.Attribute) and isinstance(node.func.value.value, ast.Name):
            targets = [node.func.value]  # module.GLOBAL.append(...); an object's own methods (RECORDER.clear()) pass
        else:
            continue
        flat = [e for t in targets for e in (t.elts if isinstance(t, (ast.Tuple, ast.List)) else [t])]
        for t in flat:
            r = root(t)
            if t is not r and isinstance(r, ast.Name) and r.id in foreign:
                found.append(f"{node.lineno}: {ast.unparse(t)}")
    return found


def test_no_module_writes_another_modules_global():
    """A module's state is written by that module only (its functions: overflow.set_strict(), ...; a launch's
    state lives on its launch.Launch): a launch can be followed through the engine by reading who calls them.
    versions.py alone patches other modules (Triton's, by its declared table)."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "versions.py" and path.parent.name == "interpreter":
            continue
        writes = _foreign_writes(path.read_text(), path)
        if writes:
            found[str(path.relative_to(PACKAGE.parent))] = writes
    assert not found, found


# Every write into a module outside tdebug (its attribute or item, setattr included) that is not made by
# interpreter/versions.py's declared patches, with why it stays: patches of torch and triton-viz scoped to a
# `with` block, the engine's program index. The process's own state (PROCESS_STATE: its environment, argv,
# import path and modules) is not listed: every program sets it. A new one fails
# test_library_writes_are_the_listed_ones: patch a Triton internal through versions.patch instead, or list it
# here with its reason.
LIBRARY_WRITES = {
    # a launch's allocations poisoned (NaN / 0xA5 bytes) and guarded, for the duration of a run
    "catalogue/poison.py": {"torch.?", "torch.Tensor.new_empty"},
    "sanitize/guard_bands.py": {"torch.?", "torch.Tensor.new_empty"},
    # a failed assert_close names the elements, for the duration of a test
    "pytest_plugin/testrun.py": {"torch.testing.assert_close"},
    # a worker the script spawns is followed (its command line starts tdebug's child first)
    "runtime/follow.py": {"spawn.get_command_line"},
    # pdb's condition, evaluated in the kernel's frame, reaches the pid filter through builtins
    "interpreter/hooks/breakpoints.py": {"builtins.__tdebug_pid_matches__"},
    # the engine names the program it runs, as Triton's own grid loop does (tl.program_id reads it)
    "interpreter/batched/grid_loop.py": {"interpreter_builder.grid_idx"},
    "interpreter/batched/program_axis.py": {"builder.grid_idx"},
    # the probe past the grid: the session's set_grid_idx / set_grid_dim (a versions.patch) name its program
    "sanitize/session.py": {"interpreter_builder.?"},
    # the divergence check's compiled run: Triton's constexpr functions as compiled Triton has them, in its knob scope
    "sanitize/divergence.py": {"knobs.runtime.interpret"},
    # triton-viz's own configuration, the way its commands set it
    "sanitize/symbolic.py": {"viz_config.enable_sanitizer"},
    "viz/trace.py": {"viz_config.num_sms"},
}


PROCESS_STATE = re.compile(r"(os\.environ|sys\.(argv|path|meta_path|modules))\b")


def _library_writes() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "versions.py" and path.parent.name == "interpreter":
            continue
        writes = {w.split(": ", 1)[1] for w in _foreign_writes(path.read_text(), path, libraries=True)}
        writes = {w for w in writes if not PROCESS_STATE.match(w)}
        if writes:
            found[str(path.relative_to(PACKAGE))] = writes
    return found


def test_library_writes_are_the_listed_ones():
    """No module patches or sets another library's attribute by hand but the ones LIBRARY_WRITES lists with
    their reason (and each listed write still exists): Triton's internals are patched through versions.patch."""
    assert _library_writes() == LIBRARY_WRITES


def test_a_write_into_another_module_is_caught():
    path = PACKAGE / "sanitize" / "session.py"
    planted = ("from ..interpreter import memory_guard, overflow, program_axis\n"
               "from ..interpreter.patches import STATE\n"
               "import tdebug.interpreter.batched.grid_loop as grid_loop\n"
               "def f(batch):\n"
               "    program_axis.CURRENT = batch\n"
               "    memory_guard.STANDS_ASIDE[0] = True\n"
               "    overflow.STRICT += 1\n"
               "    STATE.clamp_config, x = True, 1\n"
               "    setattr(grid_loop, 'FORCE_SERIAL', True)\n"
               "    del program_axis.PER_LANE\n"
               "    grid_loop.FORCE_SERIAL.append('why')\n"
               "    overflow.set_strict(True)\n"  # through the owner's function: allowed
               "    y = program_axis.CURRENT\n")
    assert sorted(_foreign_writes(planted, path)) == [
        "10: program_axis.PER_LANE", "11: grid_loop.FORCE_SERIAL", "5: program_axis.CURRENT",
        "6: memory_guard.STANDS_ASIDE[0]", "7: overflow.STRICT", "8: STATE.clamp_config", "9: grid_loop.?"]
    library = ("import torch\nfrom triton.runtime.interpreter import interpreter_builder as b\n"
               "from ..interpreter import program_axis\n"
               "torch.testing.assert_close = None\nb.grid_idx = (1, 0, 0)\nprogram_axis.CURRENT = None\n")
    assert _foreign_writes(library, path, libraries=True) == ["4: torch.testing.assert_close", "5: b.grid_idx"]


# Who wraps a launch: grid_loop alone (issue 50). Everything else around a launch is a listener of grid_loop's:
# what used to wrap it (the sanitizer's probe past the grid, repro, follow, launch_clock, serialise) offers
# around_launch, which grid_loop calls outermost first, in versions.LAYERS' order.
LAUNCH_WRAPPERS = {
    "GridExecutor.__call__": {"interpreter/batched/grid_loop.py"},
    "GridExecutor._init_args_hst": {"interpreter/batched/grid_loop.py"},
}


def _launch_patches() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {key: set() for key in LAUNCH_WRAPPERS}
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text()
        for key in LAUNCH_WRAPPERS:
            owner, name = key.split(".")
            if re.search(rf'{owner}, "{name}"', text):
                found[key].add(str(path.relative_to(PACKAGE)))
    return found


def test_a_check_listens_to_the_launch_instead_of_wrapping_it():
    """A check, recorder, tracer, limit or lock reads a launch through grid_loop's listener hooks (around_launch,
    on_launch, host_args, before_host_args, on_host_args, on_launch_end) on the Launch grid_loop makes once: no
    module but grid_loop wraps GridExecutor.__call__ or _init_args_hst."""
    assert _launch_patches() == LAUNCH_WRAPPERS
