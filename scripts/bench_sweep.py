"""Benchmark: `tdebug sanitize SCRIPT` on autotuned scripts, which run once per surviving config: each run after
the first in a process forked from one worker (the default) against a fresh worker process per run
(TDEBUG_SWEEP=spawn, as before). Whole commands, alternating, in fresh processes: wall seconds and the CPU seconds
of tdebug and its children; the two must give the same verdict (exit code, cases, findings).

Usage: .venv/bin/python scripts/bench_sweep.py [--repeats 3] [--out results/bench-sweep]
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
WORKLOADS = {
    "4 configs (tests/cpu/data/sweep_configs.py, one unwritten finding)": ROOT / "tests/cpu/data/sweep_configs.py",
    "12 configs (scripts/bench_sweep/twelve_configs.py)": ROOT / "scripts/bench_sweep/twelve_configs.py",
}
MODES = ("spawn", "fork")


def run(script: Path, mode: str) -> dict:
    """One whole `tdebug sanitize` command: its wall and CPU seconds (children included) and its verdict."""
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "report.json"
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        p = subprocess.run([sys.executable, "-m", "tdebug", "sanitize", str(script), "--device", "cpu",
                            "--seed", "1", "--json", str(report)], cwd=ROOT, capture_output=True, text=True,
                           env={**os.environ, "PYTHONPATH": str(ROOT), "TDEBUG_SWEEP": mode})
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        data = json.loads(report.read_text()) if report.exists() else {}
    (target,) = data.get("targets", [data])
    cases = [(c["status"], c["label"], sorted((f["check"], f.get("line", 0), f.get("count", 0)) for f in c["findings"]))
             for c in target.get("cases", [])]
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall": wall, "cpu": cpu, "exit": p.returncode, "cases": cases}


def summary(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default=str(ROOT / "results" / "bench-sweep"))
    args = parser.parse_args()
    rows, same = [], True
    for name, script in WORKLOADS.items():
        runs: dict[str, list[dict]] = {mode: [] for mode in MODES}
        for _ in range(args.repeats):
            for mode in MODES:
                runs[mode].append(run(script, mode))
                print(name, mode, f"{runs[mode][-1]['wall']:.2f} s", file=sys.stderr, flush=True)
        verdicts = {json.dumps([r["exit"], r["cases"]]) for mode in MODES for r in runs[mode]}
        same = same and len(verdicts) == 1
        row = {"workload": name, "runs": len(runs["fork"][0]["cases"]), "same_verdict": len(verdicts) == 1,
               "exit": runs["fork"][0]["exit"]}
        for mode in MODES:
            row[mode] = {"wall": [r["wall"] for r in runs[mode]], "cpu": [r["cpu"] for r in runs[mode]]}
        row["x_wall"] = statistics.median(row["spawn"]["wall"]) / statistics.median(row["fork"]["wall"])
        row["x_cpu"] = statistics.median(row["spawn"]["cpu"]) / statistics.median(row["fork"]["cpu"])
        rows.append(row)
    out = Path(args.out)
    out.with_suffix(".json").write_text(json.dumps({"rows": rows, "machine": platform.machine(),
                                                    "cpus": os.cpu_count()}, indent=1))
    lines = ["# Autotune sweeps: a forked process per run vs a fresh worker per run (scripts/bench_sweep.py)", "",
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.machine()}, {os.cpu_count()} CPUs, "
             f"Python {platform.python_version()}, {args.repeats} repeats per mode (whole `tdebug sanitize` commands, "
             "modes alternating). Seconds: median (min-max); CPU = tdebug and all its children.", "",
             "| workload | runs | exit | fresh worker per run: wall / CPU | forked per run: wall / CPU | x wall / CPU "
             "| same verdict |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['workload']} | {r['runs']} | {r['exit']} | {summary(r['spawn']['wall'])} / "
                     f"{summary(r['spawn']['cpu'])} | {summary(r['fork']['wall'])} / {summary(r['fork']['cpu'])} | "
                     f"{r['x_wall']:.2f}x / {r['x_cpu']:.2f}x | {'yes' if r['same_verdict'] else 'NO'} |")
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
