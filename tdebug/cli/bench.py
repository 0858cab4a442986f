"""`tdebug bench [TARGET ...] [--all]`: correctness first, then GPU speed against a strong baseline."""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path

import click

from ..catalogue.shapes import SHAPE
from ..catalogue.spec import DTYPES, TargetError, has_spec, load_target
from ..runtime import device
from ..runtime.files import write_output
from .common import SEED, fresh_seed, output_file

ROOT = Path(__file__).resolve().parent.parent.parent
KERNELS = ROOT / "kernels"
NO_GPU = ("tdebug bench needs a CUDA GPU and none is visible here (the CUDA driver reports no device); "
          "correctness without one: tdebug check")


def resolve_target(text: str) -> Path:
    """A catalogue file, or a kernel's name (matmul -> kernels/matmul.py)."""
    path = Path(text)
    if path.is_file():
        if path.suffix != ".py" or not has_spec(path):
            raise click.UsageError(f"{text} is not a catalogue file (no SPEC = KernelSpec(...))")
        return path
    named = KERNELS / f"{text}.py"
    if path.suffix != ".py" and named.is_file():
        return named
    raise click.UsageError(f"no such file or kernel: {text}")


def all_targets() -> list[Path]:
    return [p for p in sorted(KERNELS.glob("*.py")) if p.name != "__init__.py" and has_spec(p)]


def gpu_available() -> bool:
    """bench times compiled kernels on the GPU: --device cuda, decided by runtime.device as for every command."""
    try:
        device.resolve("cuda")
    except device.NoGpu:
        return False
    return True


def bench_shapes(target, shapes: tuple) -> list[tuple[int, ...]]:
    """--shape as given (completed by the spec), else the spec's bench shapes (a bug file: its kernel's)."""
    spec = target.spec
    if shapes:
        try:
            return [spec.normalize_shape(tuple(s)) for s in shapes]
        except ValueError as e:
            raise click.UsageError(f"{target.path}: {e}") from None
    if spec.bench_shapes:
        return [tuple(s) for s in spec.bench_shapes]
    bug = target.bug
    if bug is not None and getattr(bug, "fixes", ""):
        fixes = Path(bug.fixes)
        candidates = [ROOT / fixes, KERNELS / fixes, KERNELS / f"{bug.fixes}.py"]
        for path in candidates:
            if path.is_file() and has_spec(path):
                try:
                    fixed = load_target(path)
                except TargetError:
                    break
                if fixed.spec is not None and fixed.spec.bench_shapes:
                    return [tuple(s) for s in fixed.spec.bench_shapes]
                break
    return []


@click.command("bench")
@click.argument("targets", nargs=-1)
@click.option("--all", "all_", is_flag=True, help="Every kernels/*.py whose SPEC has bench_shapes.")
@click.option("--shape", "shapes", type=SHAPE, multiple=True, help="Bench this shape instead (repeatable).")
@click.option("--dtype", type=click.Choice(DTYPES), default="fp16", show_default=True)
@click.option("--json", "json_file", type=click.Path(dir_okay=False), default=None,
              help="Write the full results (every statistic, the device, versions, date) here.")
@click.option("--seed", type=SEED, default=None, help="Input seed (default: a fresh one, printed).")
@click.option("--warmup-ms", type=float, default=100.0, show_default=True, help="Warm-up time per measurement.")
@click.option("--rep-ms", type=float, default=400.0, show_default=True,
              help="Time spent repeating each measurement (at least 25 repetitions).")
def command(targets, all_, shapes, dtype, json_file, seed, warmup_ms, rep_ms) -> None:
    """Correctness check, then median time with its spread for TARGET kernels and their baselines.

    \b
    Each kernel and shape is first checked against its float64 reference, then timed (warm-up, the L2
    flushed before every repetition, many repetitions) next to its PyTorch baseline: median, p20/p80,
    coefficient of variation, the ratio baseline/ours, and the achieved TFLOP/s or GB/s as a fraction
    of the device's peaks, measured once per run (copy bandwidth, a large cuBLAS matmul).
    TARGET: a catalogue file or a kernel's name (matmul). Needs a CUDA GPU.
    """
    if not targets and not all_:
        raise click.UsageError("name a kernel file or a kernel (e.g. tdebug bench matmul), or use --all")
    if not (0 <= warmup_ms < math.inf and 0 < rep_ms < math.inf):
        raise click.UsageError("--warmup-ms must be >= 0 and --rep-ms > 0 (finite)")
    paths = [resolve_target(t) for t in targets]
    named = set(paths)
    if all_:
        paths += [p for p in all_targets() if p.resolve() not in {q.resolve() for q in paths}]
    output_file(json_file, "--json", paths)
    if not gpu_available():
        raise click.ClickException(NO_GPU)  # a missing GPU: tdebug cannot do the job here (exit 3)
    for knob in ("TRITON_INTERPRET",):  # compiled kernels only: the interpreter is read at import
        os.environ.pop(knob, None)
    plan, skipped = [], []
    for path in paths:
        try:
            target = load_target(path)
        except TargetError as e:
            raise click.UsageError(str(e)) from None
        except Exception as e:  # noqa: BLE001 - a broken catalogue file: one line, not a traceback
            message = f"{path}: cannot import: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            if path in named:
                raise click.ClickException(message) from None
            _log(f"skipped {message}")  # --all goes on with the other kernels
            skipped.append({"target": str(path), "reason": message})
            continue
        if target.spec is None:
            raise click.UsageError(f"{path} has no SPEC")
        shape_list = bench_shapes(target, shapes)
        if not shape_list:
            if path in named:
                raise click.UsageError(f"{path}: SPEC has no bench_shapes; pass --shape")
            continue
        if dtype not in target.spec.gpu_dtypes:
            raise click.UsageError(f"{target.spec.name} does not support {dtype} (its gpu_dtypes: "
                                   f"{', '.join(target.spec.gpu_dtypes)})")
        plan.append((target, shape_list))
    if not plan:
        raise click.UsageError("no kernel with bench_shapes to run")
    seed = fresh_seed() if seed is None else seed
    _log(f"tdebug bench: seed {seed}")
    failed = run(plan, dtype, seed, warmup_ms, rep_ms, json_file, skipped)
    sys.exit(1 if failed or skipped else 0)


def _shown(path: Path) -> str:
    """A target's path as the results show it: relative to the repository when inside it."""
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def _log(text: str) -> None:
    click.echo(text, err=True)


def run(plan, dtype: str, seed: int, warmup_ms: float, rep_ms: float, json_file: str | None,
        skipped: list[dict] | None = None) -> bool:
    from ..bench.report import goal_results, render_text
    from ..bench.timing import Options, Timer, bench_case, environment, measure_peaks, peaks_dict, row_dict

    env = environment()
    _log(f"tdebug bench on {env.get('device')}: measuring the device's peaks")
    timer = Timer(warmup_ms=warmup_ms, rep_ms=rep_ms)
    peaks = measure_peaks(timer, dtype)
    _log(f"  copy {peaks.copy_gbps:.0f} GB/s, {peaks.matmul_dtype} matmul {peaks.matmul_tflops:.0f} TFLOP/s")
    opts = Options(dtype=dtype, seed=seed, warmup_ms=warmup_ms, rep_ms=rep_ms, log=_log)
    rows = []
    for target, shape_list in plan:
        spec = target.spec
        for shape in shape_list:
            for variant in list(spec.variants) or [""]:
                row = bench_case(spec, target.module, _shown(target.path), shape, variant, timer, peaks, opts)
                rows.append(row)
                if row.error:
                    _log(f"  {spec.name} {row.label()}: ERROR {row.error}")
                else:
                    _log(f"  {spec.name} {row.label()}: ours {row.ours.text()}"
                         + (f", baseline {row.baseline.text()}, ratio {row.ratio:.3f}x" if row.baseline else ""))
    report = {
        "tool": "tdebug bench",
        "environment": env,
        "dtype": dtype,
        "seed": seed,
        "timing": {"warmup_ms": warmup_ms, "rep_ms": rep_ms, "l2_flush_bytes": 256 * 2**20,
                   "statistic": "median of CUDA-event times, p20/p80, cv = std/mean"},
        "peaks": peaks_dict(peaks),
        "results": [row_dict(r) for r in rows],
        "skipped": skipped or [],
    }
    report["targets"] = [v.__dict__ for v in goal_results(rows, peaks.copy_gbps)]
    click.echo(render_text(report, rows))
    if json_file:
        write_output(json_file, json.dumps(report, indent=1) + "\n", "--json")
        _log(f"results written to {json_file}")
    return any(r.error or (r.check is not None and not r.check.ok) for r in rows)
