"""The child process of `tdebug viz`: runs a target's launches traced, writes one LaunchMap per launch.

Started by tdebug.viz.trace_parent with TRITON_INTERPRET=1 already in its environment, so Triton reads it at
import. A kernel that still crashes the interpreter kills only this process; the launches finished
before it are on disk already.

Usage: python -m tdebug.viz.trace_child JOB.json
Job keys: kind ("spec" | "script"), target, argv, shape, dtype, layout, seed, config, variant, pid, out,
serve (null, or {"port": N}: afterwards, serve triton-viz's visualizer on 127.0.0.1:N until killed).
Writes out/launchNNN.{npz,json} per launch and out/result.json at the end.
"""

from __future__ import annotations

import json
import os
import runpy
import sys
import traceback
from pathlib import Path

from ..runtime.job import VizJob
from .model import save_launch


def _write_result(out: Path, result: dict) -> None:
    tmp = out / "result.json.tmp"
    tmp.write_text(json.dumps(result, default=str))
    tmp.replace(out / "result.json")


MAX_BUG_SHAPE_ELEMENTS = 1 << 24  # a BUG.shape larger than this (e.g. an int32-overflow one) is not drawn


def default_config(configs: list) -> int:
    """The autotune config to draw when none is asked for: the smallest tiles (the most programs).

    The picture then shows the tiling, and a grid computed for one tile size shows its unwritten region.
    """
    def tile(i: int) -> tuple[int, int]:
        size = 1
        for name, value in configs[i].kwargs.items():
            if name.upper().startswith("BLOCK") and isinstance(value, int):
                size *= value
        return size, i

    return min(range(len(configs)), key=tile) if configs else 0


def case_shape(target, requested: list[int] | None) -> tuple[int, ...]:
    """--shape (completed by the spec), else the bug's own shape when it has one, else the spec's default."""
    spec, bug = target.spec, target.bug
    if requested:
        return spec.normalize_shape(tuple(requested))
    if bug is not None and bug.shape:
        shape = spec.normalize_shape(tuple(bug.shape))
        n = 1
        for d in shape:
            n *= d
        if n <= MAX_BUG_SHAPE_ELEMENTS:
            return shape
    return tuple(spec.default_shape)


def run_spec(job: VizJob, result: dict) -> None:
    from ..catalogue.cases import autotune_configs
    from ..catalogue.spec import Case, load_target
    from ..interpreter.patches import begin_case
    from ..runtime.worker import snapshot

    target = load_target(job.target)
    spec = target.spec
    result["kernel"] = spec.name
    try:
        shape = case_shape(target, job.shape)
    except ValueError as e:
        result["usage_error"] = str(e)
        return
    if job.dtype not in spec.dtypes:
        result["usage_error"] = f"{spec.name} runs in {', '.join(spec.dtypes)} on the CPU, not {job.dtype}"
        return
    if job.layout not in spec.layouts:
        result["usage_error"] = f"{spec.name} takes layouts {', '.join(spec.layouts)}, not {job.layout}"
        return
    configs = autotune_configs(spec.kernel)
    config = job.config
    if config is None and configs:
        config = default_config(configs)
    if config is not None and configs and not 0 <= config < len(configs):
        result["usage_error"] = f"--config {config}: {spec.name} has configs 0..{len(configs) - 1}"
        return
    variant = job.variant or list(spec.variants)[0]
    case = Case(shape, job.dtype, job.layout, job.seed, "cpu", config, variant)
    result["case"], result["seed"] = case.label(), case.seed
    result["shape"] = list(shape)
    begin_case(config)
    inputs = spec.make_inputs(case)
    before = snapshot(inputs)  # the reference sees the inputs as they were: a kernel may work in place
    out = spec.launch(*inputs)
    if job.pid is None:  # every program ran: draw the error of a wrong output
        save_errors(target, case, before, out, Path(job.out))


def save_errors(target, case, inputs, out, directory: Path) -> None:
    """The error maps of the outputs that differ from the reference (viz/errors.py), next to the launches."""
    import torch

    from ..catalogue.compare import TOLERANCES
    from ..runtime.localise import run_command
    from .errors import error_maps, save_error_maps

    spec = target.spec
    ref = spec.reference(*[x.to(torch.float64) if isinstance(x, torch.Tensor) and x.is_floating_point() else x
                           for x in inputs])
    tol = spec.tolerances.get(case.dtype) or TOLERANCES[case.dtype]
    maps = error_maps(out, ref, tol, command=lambda file, line, pid: run_command(str(target.path), case.__dict__,
                                                                                 file, line, pid))
    save_error_maps(maps, directory)


def run_script(job: VizJob, result: dict) -> None:
    target = job.target
    result["kernel"] = Path(target).name
    sys.argv = [target] + list(job.argv)
    sys.path.insert(0, str(Path(target).parent))
    try:
        runpy.run_path(target, run_name="__main__")
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if code:
            result["exit_code"] = code


def serve(port: int) -> None:
    """triton-viz's own visualizer for the traced launches, on the loopback interface only (no tunnel).

    triton_viz.launch(share=False) would bind 0.0.0.0 with Flask's debugger on; run its app directly.
    """
    from triton_viz.visualizer import interface

    interface._server_state.set_local_port(port)
    interface.app.run(host="127.0.0.1", port=port, debug=False, use_reloader=False)


def main(argv: list[str]) -> int:
    job = VizJob.from_json(Path(argv[0]).read_text())
    out = Path(job.out)
    out.mkdir(parents=True, exist_ok=True)
    if os.environ.get("TRITON_INTERPRET") != "1":
        raise SystemExit("tdebug.viz.trace_child needs TRITON_INTERPRET=1 in its environment")
    os.environ["TRITON_VIZ_NUM_SMS"] = "1"  # programs one after another: the maps count writers per program
    from ..runtime.recipe import Recipe, install
    from . import safe_launch, trace

    pid = job.pid
    session = trace.TraceSession(sink=lambda launch: save_launch(launch, out), pid=pid,
                                 keep_for_server=job.serve is not None)
    # store records: who stored each element, at which line (the error picture's tiles)
    install(Recipe(interpret=True, store_records=True), listeners=[safe_launch, session])
    result: dict = {"kind": job.kind, "error": "", "launches": 0}
    try:
        if job.kind == "spec":
            run_spec(job, result)
        else:
            run_script(job, result)
    except BaseException as exc:  # noqa: BLE001 - reported to the parent
        if isinstance(exc, KeyboardInterrupt):
            raise
        from ..runtime.worker import exception_finding

        finding = exception_finding(exc)
        where = f" ({finding.file}:{finding.line})" if finding.file else ""
        result["error"] = finding.message + where
        result["internal"] = finding.check == "internal"
        result["traceback"] = traceback.format_exc()
    result["launches"] = session.count
    result["blocked_lanes"] = safe_launch.GUARD.blocked_lanes
    _write_result(out, result)
    if job.serve is not None and session.count:
        serve(int(job.serve["port"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
