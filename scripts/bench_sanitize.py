"""Benchmark: the interpreter sanitizer's cost against plain TRITON_INTERPRET=1 on the same launches.

Workloads (issue 5): matmul 512x512x512 fp32 with 32x32 tiles; softmax 4096x1000 fp32. Each is run
`--repeats` times under each mode, alternating, in fresh worker processes; the time is the case's own
(inputs, launch, reference check; not Python start-up). Writes results/sanitize-overhead.{json,md}.

Usage: .venv/bin/python scripts/bench_sanitize.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tdebug.catalogue.cases import autotune_configs  # noqa: E402
from tdebug.catalogue.spec import Case, load_target  # noqa: E402
from tdebug.runtime.harness import run_job  # noqa: E402
from tdebug.runtime.job import Job, SanitizeOptions  # noqa: E402
from tdebug.sanitize import CHECKS  # noqa: E402


def tile_config(path: Path, bm: int, bn: int) -> int:
    spec = load_target(path).spec
    for i, c in enumerate(autotune_configs(spec.kernel)):
        if c.kwargs.get("BLOCK_M") == bm and c.kwargs.get("BLOCK_N") == bn:
            return i
    raise SystemExit(f"{path} has no {bm}x{bn} config")


def time_case(path: Path, case: dict, checks: list[str] | None) -> tuple[float, float]:
    """The case's own (wall, CPU) seconds, plain (checks None) or under the sanitizer with these checks."""
    options = SanitizeOptions(checks=tuple(checks), max_findings=50) if checks is not None else None
    job = Job(target=str(path), kind="spec", cases=(Case(**{**case, "shape": tuple(case["shape"])}),), sanitize=options)
    result = run_job(job, mode="interpret", timeout=1800)
    (c,) = result.cases
    if c.status != "pass":
        raise SystemExit(f"{path} {case}: {c.status} {c.error} {[f.message for f in c.findings]}")
    return c.time, c.cpu_time


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    matmul = ROOT / "kernels" / "matmul.py"
    softmax = ROOT / "kernels" / "softmax.py"
    workloads = [
        ("matmul 512x512x512 fp32, 32x32 tiles", matmul,
         {"shape": [512, 512, 512], "dtype": "fp32", "layout": "contiguous", "seed": 1, "device": "cpu",
          "config": tile_config(matmul, 32, 32), "variant": ""}),
        ("softmax 4096x1000 fp32", softmax,
         {"shape": [4096, 1000], "dtype": "fp32", "layout": "contiguous", "seed": 1, "device": "cpu",
          "config": None, "variant": ""}),
    ]
    rows = []
    for name, path, case in workloads:
        modes = {"plain": None, "sanitize": sorted(CHECKS), "sanitize_no_nan": sorted(CHECKS - {"nan"})}
        times: dict[str, list[tuple[float, float]]] = {mode: [] for mode in modes}
        for _ in range(args.repeats):
            for mode, checks in modes.items():
                times[mode].append(time_case(path, case, checks))
        row: dict = {"workload": name}
        for mode, pairs in times.items():
            row[f"{mode}_s"], row[f"{mode}_cpu_s"] = [w for w, _ in pairs], [c for _, c in pairs]
        for clock in ("", "_cpu"):
            plain = statistics.median(row[f"plain{clock}_s"])
            for mode in ("sanitize", "sanitize_no_nan"):
                row[f"{mode}{clock}_median_s"] = statistics.median(row[f"{mode}{clock}_s"])
                row[f"ratio_{mode}{clock}"] = row[f"{mode}{clock}_median_s"] / plain
            row[f"plain{clock}_median_s"] = plain
        rows.append(row)
        print(f"{name}: CPU plain {row['plain_cpu_median_s']:.2f} s, sanitize {row['sanitize_cpu_median_s']:.2f} s "
              f"({row['ratio_sanitize_cpu']:.2f}x; without the nan check {row['ratio_sanitize_no_nan_cpu']:.2f}x); "
              f"wall {row['ratio_sanitize']:.2f}x", flush=True)
    meta = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "machine": platform.machine(),
            "cpus": __import__("os").cpu_count(), "python": platform.python_version(), "repeats": args.repeats,
            "target": "sanitize (every check, nan included) <= 1.3x plain TRITON_INTERPRET=1"}
    out = ROOT / "results"
    out.mkdir(exist_ok=True)
    (out / "sanitize-overhead.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    lines = ["# Interpreter sanitizer overhead", "",
             f"{meta['date']}, {meta['cpus']} CPUs, Python {meta['python']}, {args.repeats} runs each "
             "(alternating plain / sanitize / sanitize without the nan check, fresh processes). Target: sanitize "
             "with every check <= 1.3x plain. CPU: the child's CPU seconds for the case (steady on a busy machine); "
             "wall: its elapsed seconds.", "",
             "| workload | plain CPU s | sanitize CPU s | ratio (CPU) | without nan (CPU) | ratio (wall) "
             "| without nan (wall) |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['workload']} | {r['plain_cpu_median_s']:.2f} | {r['sanitize_cpu_median_s']:.2f} | "
                     f"{r['ratio_sanitize_cpu']:.2f}x | {r['ratio_sanitize_no_nan_cpu']:.2f}x | "
                     f"{r['ratio_sanitize']:.2f}x | {r['ratio_sanitize_no_nan']:.2f}x |")
    (out / "sanitize-overhead.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
