"""Benchmark: `pytest --tdebug` on a 24-test suite, serial against pytest-xdist `-n 2` (issue 16: >= 1.6x).

The suite is what a kernel author would write against the catalogue's launchers (softmax, layernorm, gelu,
add, the autotuned matmul in every config), written to a temporary folder. The two commands alternate,
--repeats times each; the load average is recorded around every run, since other work on the machine
slows either. Writes results/pytest-plugin-xdist.{json,md}.
Usage: .venv/bin/python scripts/bench_pytest_plugin.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SUITE = '''
import sys

import pytest
import torch

sys.path.insert(0, {root!r})
from kernels import add, gelu, layernorm, matmul, softmax  # noqa: E402


def close(out, ref):
    torch.testing.assert_close(out, ref.to(out.dtype), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("rows, cols", [(64, 1000), (129, 127), (200, 513), (31, 2049), (256, 256), (97, 777)])
def test_softmax(rows, cols):
    x = torch.randn(rows, cols)
    close(softmax.softmax(x), softmax.reference(x.double()))


@pytest.mark.parametrize("rows, cols", [(64, 1000), (129, 127), (200, 513), (31, 2049), (256, 256), (97, 777)])
def test_layernorm(rows, cols):
    x, w, b = torch.randn(rows, cols), torch.randn(cols), torch.randn(cols)
    close(layernorm.layernorm(x, w, b), layernorm.reference(x.double(), w.double(), b.double()))


@pytest.mark.parametrize("rows, cols", [(64, 1000), (129, 127), (200, 513), (31, 2049), (256, 256), (97, 777)])
def test_gelu(rows, cols):
    x = torch.randn(rows, cols)
    close(gelu.gelu(x), gelu.reference(x.double()))


@pytest.mark.parametrize("n", [1000, 4097, 65536, 100003])
def test_add(n):
    x, y = torch.randn(n), torch.randn(n)
    close(add.add(x, y), add.reference(x.double(), y.double()))


@pytest.mark.parametrize("m, n, k", [(129, 127, 65), (64, 200, 33)])
def test_matmul(m, n, k):
    a, b = torch.randn(m, k), torch.randn(k, n)
    close(matmul.matmul(a, b), matmul.reference(a.double(), b.double()))
'''


def run(folder: Path, workers: int | None) -> dict:
    cmd = [sys.executable, "-m", "pytest", "--tdebug", "-q", "-p", "no:cacheprovider", "test_suite.py"]
    if workers:
        cmd += ["-n", str(workers)]
    load_before = os.getloadavg()[0]
    cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(cmd, cwd=folder, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (cpu_after.ru_utime - cpu_before.ru_utime) + (cpu_after.ru_stime - cpu_before.ru_stime)
    m = re.search(r"(\d+) passed", proc.stdout)
    return {"workers": workers or 0, "seconds": seconds, "cpu_seconds": cpu, "exit_code": proc.returncode,
            "passed": int(m.group(1)) if m else 0, "load_before": load_before, "load_after": os.getloadavg()[0]}


def _autogroup() -> bool:
    try:
        return Path("/proc/sys/kernel/sched_autogroup_enabled").read_text().strip() == "1"
    except OSError:
        return False


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.1f} s (min {min(values):.1f}, max {max(values):.1f})"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "test_suite.py").write_text(SUITE.format(root=str(ROOT)))
        for _ in range(args.repeats):
            for workers in (None, 2):
                row = run(folder, workers)
                rows.append(row)
                print(f"-n {row['workers']}: {row['passed']} passed in {row['seconds']:.1f} s, {row['cpu_seconds']:.1f}"
                      f" CPU s (exit {row['exit_code']}, load {row['load_before']:.1f} -> {row['load_after']:.1f})",
                      flush=True)
    serial = [r["seconds"] for r in rows if r["workers"] == 0]
    parallel = [r["seconds"] for r in rows if r["workers"] == 2]
    ratios = [s / p for s, p in zip(serial, parallel)]

    def cpu(workers: int) -> list[float]:
        return [r["cpu_seconds"] for r in rows if r["workers"] == workers]

    loads = [r["load_before"] for r in rows] + [r["load_after"] for r in rows]
    meta = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "cpus": os.cpu_count(),
            "machine": platform.machine(), "tests": rows[0]["passed"], "repeats": args.repeats,
            "speedup_median": statistics.median(ratios), "speedup_min": min(ratios), "speedup_max": max(ratios),
            "load_min": min(loads), "load_max": max(loads)}
    out = ROOT / "results"
    (out / "pytest-plugin-xdist.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    lines = [
        "# `pytest --tdebug`: serial against pytest-xdist `-n 2`", "",
        f"{meta['date']}, {meta['cpus']} CPUs, {meta['tests']} sanitized tests (scripts/bench_pytest_plugin.py: "
        "softmax, layernorm, gelu, add, and the autotuned matmul in each of its 10 configs), "
        f"{args.repeats} alternating runs of each. Load average over the runs: {meta['load_min']:.1f} to "
        f"{meta['load_max']:.1f} (other work on the machine slows both commands).", "",
        "| command | wall time, median (min, max) | CPU time (all processes), median |", "|---|---|---|",
        f"| `pytest --tdebug` | {spread(serial)} | {statistics.median(cpu(0)):.1f} s |",
        f"| `pytest --tdebug -n 2` | {spread(parallel)} | {statistics.median(cpu(2)):.1f} s |", "",
        f"Speed-up, run by run: median {meta['speedup_median']:.2f}x (min {meta['speedup_min']:.2f}x, "
        f"max {meta['speedup_max']:.2f}x); goal >= 1.6x.",
    ]
    if meta["load_min"] > 1.5 * (os.cpu_count() or 1) and _autogroup():
        lines += ["", "The machine was busy. With Linux's autogroup scheduling on, all processes of one session "
                  "share one fair share of the CPU, so while other sessions keep the cores busy a second worker "
                  "adds no CPU: this run cannot show the speed-up. Rerun on a quiet machine."]
    (out / "pytest-plugin-xdist.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
