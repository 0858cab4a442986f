"""Benchmark: how long `tdebug check --all` takes on this machine, quick and full matrix.

Targets (issue 3), on the 2-core CPU machine: --quick under 3 minutes, the full matrix under 15.
Writes results/check-timing.{json,md}. Usage: .venv/bin/python scripts/bench_check.py [--quick-only]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(quick: bool) -> dict:
    cmd = [sys.executable, "-m", "tdebug", "check", "--all", "--seed", "7"] + (["--quick"] if quick else [])
    started = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    m = re.search(r"summary: (\d+) passed, (\d+) failed", proc.stdout)
    return {"matrix": "quick" if quick else "full", "seconds": seconds, "exit_code": proc.returncode,
            "passed": int(m.group(1)) if m else None, "failed": int(m.group(2)) if m else None,
            "limit_s": 180 if quick else 900}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick-only", action="store_true")
    args = parser.parse_args()
    rows = [run(True)] + ([] if args.quick_only else [run(False)])
    meta = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "cpus": os.cpu_count(),
            "machine": platform.machine(), "load_average_1m": os.getloadavg()[0]}
    out = ROOT / "results"
    out.mkdir(exist_ok=True)
    (out / "check-timing.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    lines = ["# `tdebug check --all` wall time on the CPU", "",
             f"{meta['date']}, {meta['cpus']} CPUs, load average {meta['load_average_1m']:.1f} when it ended.", "",
             "| matrix | cases passed | failed | wall time | target |", "|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['matrix']} | {r['passed']} | {r['failed']} | {r['seconds']:.0f} s | "
                     f"< {r['limit_s'] // 60} min |")
    (out / "check-timing.md").write_text("\n".join(lines) + "\n")
    for r in rows:
        print(f"{r['matrix']}: {r['passed']} passed, {r['failed']} failed in {r['seconds']:.0f} s "
              f"(exit {r['exit_code']})")


if __name__ == "__main__":
    main()
