"""Where `tdebug sanitize --device cuda` spends its time, against plain compute-sanitizer, per script (a GPU).

    python3 scripts/bench_gpu_sanitize.py [--out results] [--reps 3] [SCRIPT ...]

Per script, one after another on an otherwise idle machine (wall seconds, the median of --reps runs, after one
warm-up run that fills Triton's cache):
  python       python SCRIPT
  memcheck     compute-sanitizer --tool memcheck python SCRIPT             (the plain tool, as a user types it)
  memcheck*    the same with tdebug's settings: caching allocator off, --padding, --error-exitcode
  tdebug-cs    tdebug sanitize --device cuda --engine compute-sanitizer    (memcheck + initcheck, at once)
  tdebug       tdebug sanitize --device cuda                               (+ the interpreter pass, at once)
and, from tdebug's --json, each engine's own wall time inside the tdebug run. Python start-up is measured
alone (`python -c "import torch"`, `import tdebug.cli`). Writes OUT/gpu-sanitize-bench.json and .md (--name).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "tests" / "gpu" / "scripts"
# The last two are written in the style of Triton's matmul and fused-attention tutorials (issue 47, item 5).
DEFAULT = ["clean_add.py", "race_histogram.py", "softmax_rows.py", "autotuned_matmul.py", "oob_read.py",
           "tutorial_matmul.py", "tutorial_attention.py"]
MODES = ("python", "memcheck", "memcheck_tdebug_settings", "tdebug_cs", "tdebug")


def wall(cmd: list[str], env: dict | None = None) -> tuple[float, int]:
    started = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, env={**os.environ, **(env or {})}, capture_output=True, text=True)
    return time.perf_counter() - started, proc.returncode


def median_wall(cmd: list[str], reps: int, env: dict | None = None) -> tuple[float, int]:
    runs = [wall(cmd, env) for _ in range(reps)]
    return statistics.median(t for t, _ in runs), runs[-1][1]


def tdebug_run(script: Path, reps: int, engine: str) -> dict:
    """tdebug's wall time (median) and, from the median run's --json, each engine's own seconds."""
    runs = []
    for _ in range(reps):
        with tempfile.TemporaryDirectory() as tmp:
            report = Path(tmp) / "r.json"
            seconds, code = wall([sys.executable, "-m", "tdebug", "sanitize", "--device", "cuda", "--engine", engine,
                                  "--seed", "0", "--json", str(report), str(script)])
            data = json.loads(report.read_text()) if report.exists() else {"targets": [{}]}
        target = data["targets"][0]
        runs.append({"wall": seconds, "exit": code, "engines": target.get("engines", {}),
                     "inside": target.get("seconds", 0.0), "notes": target.get("notes", [])})
    runs.sort(key=lambda r: r["wall"])
    return runs[len(runs) // 2]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scripts", nargs="*", default=DEFAULT)
    ap.add_argument("--out", default=str(ROOT / "results"))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--no-startup", action="store_true", help="skip the start-up measurements")
    ap.add_argument("--name", default="gpu-sanitize-bench", help="OUT/NAME.json and OUT/NAME.md")
    ap.add_argument("--modes", default=",".join(MODES),
                    help=f"comma-separated subset of {','.join(MODES)} (python and memcheck always run)")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from tdebug.sanitize import compute_sanitizer as cs_mod

    cs = cs_mod.find_compute_sanitizer()
    if cs is None:
        print("compute-sanitizer not found", file=sys.stderr)
        return 3
    py = sys.executable
    startup = {} if args.no_startup else {
        "python -c pass": median_wall([py, "-c", "pass"], 3)[0],
        "import torch": median_wall([py, "-c", "import torch"], 3)[0],
        "import torch; torch.cuda.is_available()": median_wall([py, "-c", "import torch; torch.cuda.is_available()"],
                                                                3)[0],
        "import torch; torch.cuda.init()": median_wall([py, "-c", "import torch; torch.cuda.init()"], 3)[0],
        "import tdebug.cli": median_wall([py, "-c", "import tdebug.cli"], 3)[0],
        "tdebug sanitize --help": median_wall([py, "-m", "tdebug", "sanitize", "--help"], 3)[0],
        "compute-sanitizer --help": median_wall([cs, "--help"], 3)[0],
        "compute-sanitizer --tool memcheck python -c pass": median_wall([cs, "--tool", "memcheck", py, "-c", "pass"],
                                                                        3)[0],
    }
    print("start-up:", json.dumps({k: round(v, 2) for k, v in startup.items()}), flush=True)
    modes = set(args.modes.split(","))
    rows = []
    for name in args.scripts:
        script = Path(name) if Path(name).exists() else SCRIPTS / name
        wall([py, str(script)])  # warm-up: Triton's cache
        row = {"script": script.name}
        row["python"] = median_wall([py, str(script)], args.reps)[0]
        row["memcheck"] = median_wall([cs, "--tool", "memcheck", py, str(script)], args.reps)[0]
        tuned = cs_mod.tool_command(cs, "memcheck") + [py, str(script)]
        if "memcheck_tdebug_settings" in modes:
            row["memcheck_tdebug_settings"] = median_wall(tuned, args.reps,
                                                          {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1"})[0]
        if "tdebug_cs" in modes:
            row["tdebug_cs"] = tdebug_run(script, args.reps, "compute-sanitizer")
            row["ratio_cs"] = row["tdebug_cs"]["wall"] / row["memcheck"]
        if "tdebug" in modes:
            row["tdebug"] = tdebug_run(script, args.reps, "auto")
            row["ratio_all"] = row["tdebug"]["wall"] / row["memcheck"]
        rows.append(row)
        print(f"{script.name:24s} python {row['python']:5.1f}  memcheck {row['memcheck']:5.1f}  "
              + "  ".join(f"{k} {row[k]['wall']:5.1f} ({row[r]:.2f}x) exit {row[k]['exit']} engines "
                          f"{row[k]['engines']}" for k, r in (("tdebug_cs", "ratio_cs"), ("tdebug", "ratio_all"))
                          if k in row), flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    env = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip()
    data = {"gpu": env, "python": sys.version.split()[0], "reps": args.reps, "startup": startup, "rows": rows,
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    (out / f"{args.name}.json").write_text(json.dumps(data, indent=1))
    (out / f"{args.name}.md").write_text(to_markdown(data))
    print(to_markdown(data))
    return 0


def to_markdown(data: dict) -> str:
    lines = [
        "# tdebug sanitize on the GPU vs plain compute-sanitizer",
        "",
        f"{data['gpu']}, Python {data['python']}, {data['date']}; `scripts/bench_gpu_sanitize.py` (wall seconds, "
        f"median of {data['reps']} runs after a warm-up run; one command at a time).",
        "",
        "| script | python | memcheck | memcheck, tdebug's settings | tdebug --engine compute-sanitizer | ratio | "
        "tdebug (both engines) | ratio | inside tdebug: memcheck / initcheck / interpreter |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    def cell(r: dict, key: str, fmt: str = "{:.1f}") -> str:
        value = r.get(key)
        if isinstance(value, dict):
            value = value["wall"]
        return "-" if value is None else fmt.format(value)

    for r in data["rows"]:
        e = r.get("tdebug", {}).get("engines", {})
        inside = " / ".join(f"{e[k]:.1f}" if k in e else "-" for k in ("memcheck", "initcheck", "tdebug"))
        lines.append(f"| {r['script']} | {r['python']:.1f} | {r['memcheck']:.1f} | "
                     f"{cell(r, 'memcheck_tdebug_settings')} | {cell(r, 'tdebug_cs')} | "
                     f"{cell(r, 'ratio_cs', '{:.2f}x')} | {cell(r, 'tdebug')} | {cell(r, 'ratio_all', '{:.2f}x')} | "
                     f"{inside} |")
    if data["startup"]:
        lines += ["", "Start-up (median of 3):", ""]
        lines += [f"- `{k}`: {v:.2f} s" for k, v in data["startup"].items()]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
