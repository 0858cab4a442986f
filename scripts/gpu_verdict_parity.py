"""The same verdict on both devices: every real-code scenario under `tdebug sanitize` with the GPU and without it.

    python3 scripts/gpu_verdict_parity.py [--out results] [--jobs 8] [--only SUBSTRING ...] [--list]

Runs on a machine with a GPU (issue 47). Each case is one scenario of the project's real-code scripts (kernels in the
style of FlagGems, SGLang, bitsandbytes, mamba, FLA, vLLM, Liger, CUB; tests/cpu/data/reach*_scenarios.py and
reach4_families.py, and tests/gpu/scripts/), run three ways:
  plain  the script alone on the GPU (a case whose script fails here is the script's, not tdebug's: listed, skipped)
  cuda   `tdebug sanitize --device cuda` (compute-sanitizer and the interpreter pass at once, divergence compared)
  cpu    `tdebug sanitize --device cpu` (the interpreter sanitizer alone, on the CPU, the script's tensors where it
         put them)
The scenario files allocate with torch's default device; a small wrapper sets it to `cuda` where a GPU is visible, so
the same source runs on either device (the CPU-only verdicts of these files are CI's own tests). The verdict of a
run is its exit code and the set of (check, kernel, line) of the interpreter's findings. What only running on the
GPU can show is listed beside it as GPU only: compute-sanitizer's findings, divergence, and the compiled run's
own outcome (the script's exception where the compiled kernel gave it a wrong result, a hang, a crash). A case
agrees when exit codes and interpreter findings are equal.
Writes OUT/gpu-verdict-parity.md and .json; exits 1 when any case disagrees.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tdebug.sanitize.combined import GPU_RUN  # noqa: E402 - the compiled run's own findings say so

DATA = ROOT / "tests" / "cpu" / "data"
GPU_SCRIPTS = ROOT / "tests" / "gpu" / "scripts"
TIMEOUT = 150  # seconds per run: a case past it is a hang of that run
WRAPPER = """import os, runpy, sys, torch
if torch.cuda.is_available():
    torch.set_default_device("cuda")
sys.argv = {argv!r}
sys.path.insert(0, os.path.dirname(sys.argv[0]))  # as `python SCRIPT` does: its folder's modules importable
runpy.run_path(sys.argv[0], run_name="__main__")
"""
# tests/gpu/scripts that are not one scenario each: a helper module, a catalogue runner, the Liger wrapper (liger_op
# runs per op below).
NOT_CASES = {"gpu_helpers.py", "run_story.py", "liger_rms_norm.py", "liger_op.py"}
GPU_ONLY = {"divergence"}  # the compiled run against the interpreted one: a check only a GPU can make
LIGER_OPS = ["rms_norm", "layer_norm", "swiglu", "geglu", "cross_entropy", "softmax", "kl_div", "jsd", "rope", "flce"]


def dispatched_names(path: Path) -> list[str]:
    """A scenario file's scenario names: the keys of its SCENARIOS dict, or its top-level functions of no arguments
    that are not kernels (the files dispatch `globals()[sys.argv[1]]()`)."""
    tree = ast.parse(path.read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "SCENARIOS" for t in node.targets):
            if isinstance(node.value, ast.Dict):
                return [k.value for k in node.value.keys if isinstance(k, ast.Constant)]
    names = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and not node.args.args and not node.decorator_list:
            names.append(node.name)
    return names


def cases() -> list[dict]:
    found = []
    for stem in ("reach_scenarios", "reach3_scenarios", "reach4_scenarios", "reach4_families"):
        path = DATA / f"{stem}.py"
        found += [{"name": f"{stem}:{n}", "argv": [str(path), n]} for n in dispatched_names(path)]
    for path in sorted(GPU_SCRIPTS.glob("*.py")):
        if path.name not in NOT_CASES:
            found.append({"name": f"gpu:{path.stem}", "argv": [str(path)]})
    found += [{"name": f"liger:{op}", "argv": [str(GPU_SCRIPTS / "liger_op.py"), op]} for op in LIGER_OPS]
    return found


def run(cmd: list[str], env: dict, timeout: float = TIMEOUT) -> tuple[int, float, str]:
    started = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
        code, text = proc.returncode, proc.stdout + proc.stderr
    except subprocess.TimeoutExpired as exc:
        code, text = -9, f"timed out after {timeout} s\n{exc.stdout or ''}"
    return code, time.perf_counter() - started, text if isinstance(text, str) else text.decode(errors="replace")


def verdict(report: Path) -> dict:
    if not report.exists():
        return {"findings": [], "gpu_tools": [], "notes": ["no report written"], "summary": ""}
    data = json.loads(report.read_text())
    interp, tools, notes = set(), set(), []
    for target in data.get("targets", []):
        notes += [str(n) for n in target.get("notes", [])]
        for case in target.get("cases", []):
            for f in case.get("findings", []):
                key = (f.get("check"), f.get("kernel"), f.get("line"))
                compiled_run = f.get("extra", {}).get("engines") == [GPU_RUN]
                gpu_only = f.get("source") != "tdebug" or f.get("check") in GPU_ONLY or compiled_run
                (tools if gpu_only else interp).add(key)
    return {"findings": sorted(interp, key=str), "gpu_tools": sorted(tools, key=str), "notes": notes,
            "summary": data.get("verdict", {}).get("summary", "")}


def one_case(case: dict, tmp: Path) -> dict:
    wrapper = tmp / f"{case['name'].replace(':', '__')}.py"
    wrapper.write_text(WRAPPER.format(argv=case["argv"]))
    base = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    row = {"name": case["name"]}
    code, seconds, text = run([sys.executable, str(wrapper)], base)
    row["plain"] = {"exit": code, "seconds": round(seconds, 1), "tail": text.strip().splitlines()[-1:] if code else []}
    for device, env, extra in (("cuda", base, ["--device", "cuda"]), ("cpu", base, ["--device", "cpu"])):
        report = tmp / f"{wrapper.stem}.{device}.json"
        code, seconds, text = run([sys.executable, "-m", "tdebug", "sanitize", *extra, "--seed", "0", "--json",
                                   str(report), str(wrapper)], env)
        row[device] = {"exit": code, "seconds": round(seconds, 1), **verdict(report),
                       "tail": text.strip().splitlines()[-3:], "log": text.strip().splitlines()[-40:]}
    cuda, cpu = row["cuda"], row["cpu"]
    row["agree"] = cuda["exit"] == cpu["exit"] and cuda["findings"] == cpu["findings"]
    if row["agree"]:
        cuda.pop("log"), cpu.pop("log")
    return row


def to_markdown(rows: list[dict], header: str) -> str:
    def cell(r: dict) -> str:
        found = ", ".join(f"{c} L{line}" for c, _, line in r["findings"]) or "-"
        return f"{r['exit']} ({found})"

    agree = sum(r["agree"] for r in rows)
    failing = sum(r["plain"]["exit"] != 0 for r in rows)
    lines = [header, "", f"**{agree} of {len(rows)} cases agree** (exit code and the interpreter's findings). "
             f"{failing} script(s) fail when run plain on the GPU (a seeded bug's wrong result, or code compiled "
             "Triton rejects): listed last, compared all the same.", "",
             "| case | plain s | --device cuda: exit (findings) | GPU only | cuda s "
             "| --device cpu: exit (findings) | cpu s | agree |", "|---|---|---|---|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: (r["plain"]["exit"] != 0, r["agree"], r["name"])):
        tools = ", ".join(f"{c}" for c, _, _ in r["cuda"]["gpu_tools"]) or "-"
        fails = "" if r["plain"]["exit"] == 0 else " (script fails plain)"
        lines.append(f"| {r['name']} | {r['plain']['seconds']} | {cell(r['cuda'])} | {tools} | {r['cuda']['seconds']} "
                     f"| {cell(r['cpu'])} | {r['cpu']['seconds']} | {'yes' if r['agree'] else '**no**'}{fails} |")
    odd = [r for r in rows if not r["agree"] or r["cuda"]["notes"]]
    if odd:
        lines += ["", "Disagreements and notes (the last lines of each run):", ""]
        for r in odd:
            lines.append(f"- {r['name']}: plain {r['plain']['exit']} {r['plain']['tail']}; "
                         f"cuda {r['cuda']['summary']!r} "
                         f"notes {r['cuda']['notes']} tail {r['cuda']['tail']}; cpu {r['cpu']['summary']!r} "
                         f"tail {r['cpu']['tail']}")
    return "\n".join(lines) + "\n"


def environment() -> str:
    probe = ("import sys, torch, triton, numpy; n = torch.cuda.get_device_name() if torch.cuda.is_available() else "
             "'no GPU'; print(n, '| python', sys.version.split()[0], 'torch', torch.__version__, 'triton', "
             "triton.__version__, 'numpy', numpy.__version__)")
    return subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True).stdout.strip()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "results"))
    ap.add_argument("--jobs", type=int, default=8)
    ap.add_argument("--only", nargs="*", default=[], help="cases whose name contains one of these")
    ap.add_argument("--list", action="store_true", help="print the cases and stop")
    args = ap.parse_args()
    todo = [c for c in cases() if not args.only or any(s in c["name"] for s in args.only)]
    if args.list:
        print("\n".join(c["name"] for c in todo))
        return 0
    started, machine = time.time(), environment()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    def write(rows: list[dict], finished: bool) -> None:
        """The tables so far: written after every case, so a run stopped at a time limit still leaves them."""
        header = (f"# One verdict on both devices (`scripts/gpu_verdict_parity.py --jobs {args.jobs}`)\n\n"
                  f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(started))}, {machine}; "
                  f"{len(rows)} of {len(todo)} cases{'' if finished else ' (the run was stopped before the rest)'}, "
                  f"{time.time() - started:.0f} s, {args.jobs} at a time.")
        (out / "gpu-verdict-parity.json").write_text(json.dumps(rows, indent=1, default=list))
        (out / "gpu-verdict-parity.md").write_text(to_markdown(rows, header))

    def stop(signum: int, frame: object) -> None:  # `timeout -s INT` signals this process and then its group
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, stop)
    rows: list[dict] = []
    tmp = tempfile.mkdtemp(prefix="tdebug-parity-")
    pool = ThreadPoolExecutor(args.jobs)
    try:
        for future in as_completed([pool.submit(one_case, c, Path(tmp)) for c in todo]):
            rows.append(future.result())
            write(rows, finished=False)
            print(f"{len(rows)}/{len(todo)} {rows[-1]['name']}: {'agree' if rows[-1]['agree'] else 'DISAGREE'}",
                  flush=True)
    except KeyboardInterrupt:
        write(rows, finished=False)
        print(f"stopped after {len(rows)} cases", flush=True)
        os._exit(130)  # the pool's threads wait on their runs; the caller's time limit ends those
    pool.shutdown()
    write(rows, finished=True)
    bad = [r["name"] for r in rows if not r["agree"]]
    print(f"{len(rows)} cases, {len(bad)} disagree: {bad}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
