#!/usr/bin/env python3
"""Benchmark `tdebug viz` on the issue's case: matmul 129x127x65 (target: under 10 s on the 2-core CPU machine).

Each run is the whole command a user types, in a fresh process: start-up, the traced launch in its child,
the PNGs and the HTML page. Also timed, in this process: the traced child alone, and the drawing alone.
Writes the median and spread to results/viz-bench.json and results/viz-bench.md (and prints them).

Usage: .venv/bin/python scripts/bench_viz.py [--runs 5] [--out results/viz-bench.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
COMMAND = ["viz", "kernels/matmul.py", "--shape", "129x127x65"]
TARGET_S = 10.0


def spread(values: list[float]) -> dict:
    return {"median_s": round(statistics.median(values), 3), "min_s": round(min(values), 3),
            "max_s": round(max(values), 3), "runs_s": [round(v, 3) for v in values]}


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def time_cli(runs: int) -> tuple[list[float], list[float]]:
    """Wall seconds of each run, and the CPU seconds it used (all its processes): on a busy machine the
    wall time grows with the load, the CPU time hardly does."""
    times, cpu = [], []
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("TRITON_INTERPRET", None)
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as out:
            start, cpu_start = time.perf_counter(), children_cpu()
            r = subprocess.run([sys.executable, "-m", "tdebug", *COMMAND, "--out", out], cwd=ROOT, env=env,
                               capture_output=True, text=True)
            elapsed = time.perf_counter() - start
            cpu.append(children_cpu() - cpu_start)
            if r.returncode != 0:
                raise SystemExit(f"tdebug viz failed ({r.returncode}):\n{r.stderr}")
        times.append(elapsed)
    return times, cpu


def time_phases(runs: int) -> tuple[list[float], list[float]]:
    from tdebug.viz.draw import draw_all, warm_up
    from tdebug.viz.html import write_page
    from tdebug.viz.trace_parent import trace

    warm_up()
    job = {"kind": "spec", "target": str(ROOT / "kernels" / "matmul.py"), "argv": [], "shape": [129, 127, 65],
           "dtype": "fp32", "layout": "contiguous", "seed": 0, "config": None, "variant": None, "pid": None}
    traced, drawn = [], []
    for _ in range(runs):
        start = time.perf_counter()
        result = trace(job)
        traced.append(time.perf_counter() - start)
        with tempfile.TemporaryDirectory() as out:
            start = time.perf_counter()
            draw_all(result.launches, Path(out))
            write_page(result.launches, Path(out) / "viz.html", "bench")
            drawn.append(time.perf_counter() - start)
    return traced, drawn


def markdown(result: dict, runs: int) -> str:
    m = result["machine"]
    rows = [("end to end (`tdebug viz`, fresh process)", result["end_to_end"]),
            ("  its CPU time (user + system, all processes)", result["end_to_end_cpu"]),
            ("traced child alone", result["traced_child"]),
            ("drawing alone (PNGs + HTML)", result["drawing_pngs_and_html"])]
    lines = [f"# `{result['command']}`", "",
             f"Target: under {result['target_s']:.0f} s on the 2-core CPU machine: "
             f"**{'met' if result['meets_target'] else 'missed'}**. {runs} runs each, {result['date']}, "
             f"{m['cpus']} CPUs, load average before {m['loadavg_before']}.", "",
             "| what | median | min | max |", "|---|---|---|---|"]
    lines += [f"| {name} | {r['median_s']:.2f} s | {r['min_s']:.2f} s | {r['max_s']:.2f} s |" for name, r in rows]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "viz-bench.json")
    args = parser.parse_args()
    load_before = os.getloadavg()
    cli, cli_cpu = time_cli(args.runs)
    traced, drawn = time_phases(args.runs)
    result = {
        "command": "tdebug " + " ".join(COMMAND),
        "target_s": TARGET_S,
        "end_to_end": spread(cli),
        "end_to_end_cpu": spread(cli_cpu),
        "traced_child": spread(traced),
        "drawing_pngs_and_html": spread(drawn),
        "meets_target": statistics.median(cli) < TARGET_S,
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
                    "loadavg_before": [round(x, 2) for x in load_before],
                    "loadavg_after": [round(x, 2) for x in os.getloadavg()]},
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    args.out.with_suffix(".md").write_text(markdown(result, args.runs))
    e2e = result["end_to_end"]
    print(f"{result['command']}: median {e2e['median_s']:.2f} s (min {e2e['min_s']:.2f}, max {e2e['max_s']:.2f}, "
          f"{args.runs} runs; target < {TARGET_S:.0f} s: {'met' if result['meets_target'] else 'MISSED'})")
    print(f"  CPU time {result['end_to_end_cpu']['median_s']:.2f} s; "
          f"traced child {result['traced_child']['median_s']:.2f} s, drawing "
          f"{result['drawing_pngs_and_html']['median_s']:.2f} s (medians); load average before "
          f"{result['machine']['loadavg_before']}")
    print(f"wrote {args.out} and {args.out.with_suffix('.md')}")


if __name__ == "__main__":
    main()
