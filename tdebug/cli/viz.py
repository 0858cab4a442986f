"""`tdebug viz [TARGET]`: heatmaps of which program loaded and stored which element of each tensor."""

from __future__ import annotations

import importlib.util
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..catalogue.shapes import SHAPE
from ..catalogue.spec import LAYOUTS
from ..interpreter.hooks.breakpoints import BreakpointError, parse_pid
from ..interpreter.versions import triton_viz_problem
from ..runtime.files import writable_folder
from ..runtime.job import VizJob
from ..viz import outdir
from .common import SEED, TIMEOUT, CouldNotRun, TargetKind, classify_target, fresh_seed

if TYPE_CHECKING:
    from ..viz.trace_parent import TraceResult



@click.command("viz")
@click.argument("target", required=False, type=click.Path(dir_okay=False))
@click.argument("script_args", nargs=-1, type=click.UNPROCESSED)
@click.option("--shape", type=SHAPE, default=None,
              help="e.g. 129x127 (a catalogue file's; a 2-D shape on a matmul is M x N with a default K).")
@click.option("--dtype", type=click.Choice(["fp32", "fp16", "bf16"]), default="fp32", show_default=True)
@click.option("--layout", type=click.Choice(LAYOUTS), default="contiguous", show_default=True,
              help="Memory layout of the inputs.")
@click.option("--seed", type=SEED, default=None, help="Input seed (default: a fresh one, printed).")
@click.option("--config", type=click.IntRange(min=0), default=None,
              help="Autotuned kernels: this config (default: the one with the smallest tiles).")
@click.option("--variant", default=None, help="A kernel's code path (see the file's SPEC.variants).")
@click.option("--pid", default=None, help="Only this program, e.g. 3 or 1,0.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="tdebug-out/viz", show_default=True,
              help="Directory for the PNGs and the HTML page.")
@click.option("--serve", is_flag=True,
              help="Then open triton-viz's own interactive visualizer for the launch on 127.0.0.1.")
@click.option("--port", type=click.IntRange(1, 65535), default=5001, show_default=True, help="Port for --serve.")
@click.option("--timeout", type=TIMEOUT, default=300.0, show_default=True, help="Seconds allowed for tracing.")
def command(target, script_args, shape, dtype, layout, seed, config, variant, pid, out_dir, serve, port,
            timeout) -> None:
    """Draw, for each tensor argument of each launch of TARGET, who touched which element.

    \b
    Per tensor: loads and stores per element, the program that touched it, and what is wrong:
    out-of-bounds accesses (in red, in a margin around the tensor), masked-off lanes, output
    elements no program wrote, elements written by more than one program. One PNG per tensor and
    one self-contained HTML page (hover for details). TARGET is a catalogue file or any script
    (arguments after --); without TARGET, the exercise last started with `tdebug bugs start`,
    else kernels/matmul.py. Example: tdebug viz kernels/matmul.py --shape 129x127
    """
    from ..viz.target import default_target

    if target is None:
        chosen = default_target()
        click.echo(f"tdebug viz: {chosen.why}", err=True)
        target = str(chosen.path)
    kind = classify_target(target)
    if serve and (problem := triton_viz_problem()):
        raise click.UsageError(f"--serve {problem} (the heatmaps work without it: drop --serve)")
    try:
        wanted = parse_pid(pid)
    except BreakpointError as e:
        raise click.UsageError(str(e)) from None
    if kind == TargetKind.SCRIPT:
        given = [name for name, value in (("--shape", shape), ("--config", config), ("--variant", variant))
                 if value is not None]
        given += [name for name, value, default in (("--dtype", dtype, "fp32"), ("--layout", layout, "contiguous"))
                  if value != default]
        if given:
            raise click.UsageError(f"{', '.join(given)} appl{'ies' if len(given) == 1 else 'y'} to catalogue files "
                                   f"(with a SPEC); {target} is a script: pass its own arguments after --")
    elif script_args:
        raise click.UsageError(f"{target} is a catalogue file: it takes no script arguments")
    if kind == TargetKind.SPEC:  # a script makes its own inputs
        seed = fresh_seed() if seed is None else seed
    job = VizJob(kind=kind, target=str(Path(target).resolve()), argv=tuple(script_args), shape=shape or None,
                 dtype=dtype, layout=layout, seed=seed or 0, config=config, variant=variant,
                 pid=tuple(wanted) + (0,) * (3 - len(wanted)) if wanted else None)
    if not _installed("matplotlib"):  # an extra: a CI image that only sanitizes need not carry it
        raise CouldNotRun("tdebug viz draws with matplotlib, which is not installed here: "
                          "pip install matplotlib (or tdebug's extra: pip install -e '.[viz]' in tdebug's clone)")
    folder = _out_folder(Path(out_dir))
    if serve:
        _serve(job, target, port, timeout, folder)
        return
    from ..viz.draw import warm_up
    from ..viz.trace_parent import trace

    result = trace(job, timeout=timeout, meanwhile=warm_up)
    code = _report(result, target, folder)
    raise SystemExit(code)


def _installed(module: str) -> bool:
    """Whether `module` can be imported, without importing it (matplotlib's import is slow)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package missing; a module set to None in sys.modules
        return False


def _check_result(result: TraceResult, target: str) -> None:
    """Raise the one-line error for a run that gave nothing to draw."""
    info = result.info
    if info.get("usage_error"):
        raise click.UsageError(info["usage_error"])
    if result.launches:
        return
    if result.crashed:
        tail = _tail(result.output)
        raise click.ClickException(f"{result.crashed} before any launch finished{tail}")
    if info.get("error"):
        raise click.ClickException(f"{target}: {info['error']} (before any Triton kernel launched)")
    raise click.UsageError(f"{target} launched no Triton kernel: nothing to draw")


def _tail(output: str) -> str:
    lines = [ln for ln in output.strip().splitlines() if ln.strip()]
    return f": {lines[-1].strip()[:200]}" if lines else ""


def _show(result: TraceResult, target: str, out_dir: Path) -> None:
    """Check what was traced, draw it, print the summary and the paths of the pictures."""
    _check_result(result, target)
    paths = _render(result, target, out_dir)
    for line in _summary(result, target):
        click.echo(line)
    for path in paths:
        click.echo(str(path))


def _report(result: TraceResult, target: str, out_dir: Path) -> int:
    """Draw what was traced, print the summary and the paths; the exit code."""
    _pid_ran(result)
    if result.output.strip():
        click.echo(result.output.rstrip(), err=True)
    _show(result, target, out_dir)
    problem = result.crashed or result.info.get("error", "")
    if problem:
        click.echo(f"tdebug viz: {problem} (the pictures show what ran until then)", err=True)
        return 3 if result.info.get("internal") else 1
    if result.errors or any(launch.stray_lanes or any(t.problems() for t in launch.tensors)
                            for launch in result.launches):
        return 1  # what the summary calls a PROBLEM (or WRONG VALUES) is a finding: exit 1, as in sanitize
    return 0


def _pid_ran(result: TraceResult) -> None:
    """A --pid outside every launch's grid drew nothing of that program: said (exit 2), not drawn as if it ran."""
    asked = [launch for launch in result.launches if launch.pid is not None]
    if not asked or len(asked) != len(result.launches):
        return
    pid = tuple(asked[0].pid)
    if any(all(p < g for p, g in zip(pid, tuple(launch.grid) + (1, 1, 1))) for launch in asked):
        return
    grids = sorted({"x".join(map(str, (tuple(launch.grid) + (1, 1, 1))[:3])) for launch in asked})
    raise click.UsageError(f"program ({','.join(map(str, pid))}) never ran: the grid was {', '.join(grids)} "
                           "(--pid takes a program inside the launch's grid)")


def _summary(result: TraceResult, target: str) -> list[str]:
    info = result.info
    what = info.get("kernel") or Path(target).name
    case = f" {info['case']}, seed {info['seed']}" if info.get("case") else ""  # the seed: to repeat the run
    lines = [f"tdebug viz: {what}{case} ({target})"]
    for launch in result.launches:
        extra = f", {launch.config}" if launch.config else ""
        pid = f", program {launch.pid_text(launch.pid_linear)} only" if launch.pid is not None else ""
        lines.append(f"launch {launch.index}: {launch.kernel}, {launch.grid_text}{extra}{pid}")
        width = max((len(t.label()) for t in launch.tensors), default=0)
        for t in launch.tensors:
            problems = t.problems()
            verdict = ("PROBLEM: " + "; ".join(problems)) if problems else "ok"
            lines.append(f"  {t.label():<{width}}  {t.access_summary()}  {verdict}")
        if launch.stray_lanes:
            lines.append(f"  PROBLEM: {launch.stray_lanes:,} lanes accessed memory of no tensor argument, far out "
                         "of bounds (not drawn)")
        if launch.error:
            lines.append(f"  the launch raised {launch.error}")
    for m in result.errors:  # a wrong case: where its wrong values came from (tdebug.viz.errors)
        lines.append(f"WRONG VALUES: {m.summary()}")
        lines += ["  " + ln for ln in m.lines] + (["  " + m.command] if m.command else [])
    return lines


def _render(result: TraceResult, target: str, out_dir: Path) -> list[Path]:
    from ..viz.draw import draw_all, png_name
    from ..viz.errors import draw_error
    from ..viz.errors import png_name as error_png_name
    from ..viz.html import write_page

    error_names = [error_png_name(m, i + 1) for i, m in enumerate(result.errors)]
    names = error_names + [png_name(launch, t) for launch in result.launches for t in launch.tensors] + ["viz.html"]
    try:
        outdir.prepare(out_dir, names)
    except (outdir.OutDirError, OSError) as e:
        raise click.UsageError(f"--out {out_dir}: {e}") from None
    try:
        errors = [(m, draw_error(m, out_dir / name)) for m, name in zip(result.errors, error_names)]
        paths = [png for _, png in errors] + [d.path for d in draw_all(result.launches, out_dir)]
        info = result.info
        title = f"tdebug viz: {info.get('kernel') or Path(target).name} {info.get('case', '')}".strip()
        paths.append(write_page(result.launches, out_dir / "viz.html", title, subtitle=str(target), errors=errors))
    except BaseException:  # Ctrl-C, SIGTERM: no temporary file of a worker left in the user's --out
        outdir.remove_temporaries(out_dir, names)
        raise
    outdir.record(out_dir, paths)
    return paths


def _out_folder(out: Path) -> Path:
    """The folder to draw into, checked before any work: --out itself, or a fresh subfolder of it when it
    holds files tdebug did not write (said on stderr)."""
    try:
        folder, note = outdir.choose(out)
    except (outdir.OutDirError, OSError) as e:
        raise click.UsageError(str(e)) from None
    why = writable_folder(folder)
    if why:
        raise click.UsageError(f"--out {out}: cannot write there ({why})")
    if note:
        click.echo(f"tdebug viz: {note}", err=True)
    return folder


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _serve(job: VizJob, target: str, port: int, timeout: float, out_dir: Path) -> None:
    from ..viz.trace_parent import Server

    if not _port_free(port):
        raise click.UsageError(f"port {port} on 127.0.0.1 is in use: pick another with --port")
    server = Server(job, port)
    try:
        result = server.wait_traced(timeout)
        _show(result, target, out_dir)
        click.echo(f"triton-viz visualizer: http://127.0.0.1:{port}/ (Ctrl-C to stop; its page loads three.js "
                   "from esm.sh, so the browser needs the network)")
        sys.stdout.flush()
        server.wait()
    finally:
        server.stop()
