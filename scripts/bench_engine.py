"""Engine benchmark: CPU seconds of each workload's launches and of the whole command, for Triton's plain
interpreter and for `tdebug sanitize` with the serial and the batched engine, fresh processes, modes
alternating within one run, medians with their spread, peak RSS; writes PREFIX.json and PREFIX.md.

    /work/main/.venv-3.9.0/bin/python scripts/bench_engine.py [--quick] [--repeats 3] [--out results/bench-engine]

Modes: `plain` (TRITON_INTERPRET=1 python workloads.py NAME; the shims it needs are named in workloads.py),
`serial` and `batched` (`python -m tdebug sanitize --device cpu --seed 1` of the same script with
TDEBUG_EXECUTOR=serial or batched), and with `--baseline DIR` also `baseline` (serial, with the tdebug of another
checkout, e.g. main: before/after a change), and `torch` (`workloads.py NAME --torch`: the floor, each workload's
computation done by torch on the same CPU, one thread, in its dtype; the table's MODE / torch columns divide a
mode's launch CPU by it). Launch CPU comes from the workload itself (time.process_time()
around its launches, a `TDEBUG_BENCH {json}` line in its output); whole-command CPU and peak RSS from the child's
rusage (os.wait4). Every mode runs on the Python given (its Triton): the one running this script by default.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORKLOADS_SCRIPT = ROOT / "scripts" / "bench_engine" / "workloads.py"
WORKLOADS = ["matmul", "softmax", "rms_norm_fwd", "rms_norm_bwd", "attention_causal", "matmul_splitk", "spin_lock",
             "matmul_bf16", "rms_norm_bf16_fwd", "rms_norm_bf16_bwd", "small_launches", "row_stream",
             "row_stream_repeated", "varlen_chunks", "divergent_rows"]
MODES = ["plain", "serial", "batched", "torch"]
TDEBUG_MODES = ("serial", "batched", "baseline")  # the modes that run tdebug: each gets a column over the floor
MARK = "TDEBUG_BENCH "
QUICK_NOTE = ", quick sizes, every workload in one process per mode (cmd, RSS and findings are the process's)"


def command(mode: str, workloads: list[str], python: str, quick: bool, timeout: float,
            findings_json: str) -> list[str]:
    tail = workloads + (["--quick"] if quick else [])
    if mode == "plain":
        return [python, str(WORKLOADS_SCRIPT), *tail]
    if mode == "torch":
        return [python, str(WORKLOADS_SCRIPT), *tail, "--torch"]
    return [python, "-m", "tdebug", "sanitize", "--device", "cpu", "--seed", "1", "--timeout", str(timeout),
            "--json", findings_json, str(WORKLOADS_SCRIPT), "--", *tail]


def environment(mode: str, baseline: Path | None, baseline_executor: str = "serial") -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", "TDEBUG_EXECUTOR")}
    root = baseline if mode == "baseline" else ROOT
    env["PYTHONPATH"] = str(root)
    if mode == "plain":
        env["TRITON_INTERPRET"] = "1"
    elif mode == "torch":
        pass  # no kernel runs: torch's own operators, one thread
    else:
        env["TDEBUG_EXECUTOR"] = baseline_executor if mode == "baseline" else (
            "batched" if mode == "batched" else "serial")
    return env


def run_one(mode: str, workloads: list[str], args: argparse.Namespace) -> list[dict]:
    """One fresh process running `workloads`: its rusage (CPU, peak RSS) and each workload's TDEBUG_BENCH record.
    With several workloads (--quick) the command's CPU, RSS and findings are the whole process's."""
    with tempfile.TemporaryDirectory(prefix="bench_engine_") as tmp:
        out_path, findings_path = Path(tmp) / "out.txt", Path(tmp) / "findings.json"
        cmd = command(mode, workloads, args.python, args.quick, args.timeout, str(findings_path))
        started = time.perf_counter()
        with open(out_path, "w") as out:
            # `python -m tdebug` puts its working directory first on sys.path: the checkout whose tdebug runs.
            cwd = args.baseline if mode == "baseline" else ROOT
            env = environment(mode, args.baseline, args.baseline_executor)
            proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
            _, status, usage = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - started
        text = out_path.read_text(errors="replace")
        findings = None
        if findings_path.exists():
            try:
                findings = _count_findings(json.loads(findings_path.read_text()))
            except ValueError:
                findings = None
    printed = {}
    for line in text.splitlines():
        if line.startswith(MARK):
            record = json.loads(line[len(MARK):])
            printed[record["workload"]] = record
    recs = []
    for workload in workloads:
        rec = {"mode": mode, "workload": workload, "rc": proc.returncode, "cmd_cpu": usage.ru_utime + usage.ru_stime,
               "cmd_wall": wall, "peak_rss_mib": usage.ru_maxrss / 1024, "cmd_workloads": len(workloads),
               "findings": findings[0] if findings else None, "findings_digest": findings[1] if findings else None}
        if workload in printed:
            rec.update({k: printed[workload][k] for k in ("launch_cpu", "launch_wall", "err", "ok", "digest",
                                                          "programs", "steps", "triton", "shims", "tdebug",
                                                          "tdebug_at") if k in printed[workload]})
            rec.update({k: printed[workload][k] for k in ("floor_reps", "threads") if k in printed[workload]})
        if proc.returncode not in (0, 1) or workload not in printed:
            rec["tail"] = text[-1500:]
        recs.append(rec)
    return recs


def _count_findings(report) -> tuple[int, str] | None:
    """How many findings a `tdebug sanitize --json` report lists, and a digest of them (to compare modes)."""
    try:
        found = [f for target in report["targets"] for case in target["cases"] for f in case["findings"]]
    except (KeyError, TypeError):
        return None
    text = json.dumps(sorted(json.dumps(f, sort_keys=True, default=str) for f in found))
    return len(found), hashlib.sha256(text.encode()).hexdigest()[:12]


def spread(values: list[float]) -> dict:
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)}


def summarise(records: list[dict], modes: list[str], workloads: list[str],
              baseline_executor: str = "serial") -> list[dict]:
    rows = []
    for workload in workloads:
        row = {"workload": workload, "modes": {}}
        for mode in modes:
            recs = [r for r in records if r["workload"] == workload and r["mode"] == mode]
            done = [r for r in recs if "launch_cpu" in r]
            entry = {"runs": len(recs), "failed": len(recs) - len(done), "rc": sorted({r["rc"] for r in recs})}
            if done:
                entry.update({
                    "launch_cpu": spread([r["launch_cpu"] for r in done]),
                    "cmd_cpu": spread([r["cmd_cpu"] for r in done]),
                    "peak_rss_mib": max(r["peak_rss_mib"] for r in done),
                    "ok": all(r["ok"] for r in done),
                    "digests": sorted({r["digest"] for r in done}),
                    "findings": sorted({r["findings"] for r in done if r["findings"] is not None}),
                    "findings_digests": sorted({r["findings_digest"] for r in done if r["findings_digest"]}),
                    "programs": done[0]["programs"], "steps": done[0]["steps"],
                })
            row["modes"][mode] = entry
        plain = row["modes"].get("plain", {})
        for mode in modes:
            entry = row["modes"][mode]
            if mode not in ("plain", "torch") and "launch_cpu" in entry and "launch_cpu" in plain:
                entry["speedup_vs_plain"] = {
                    "launch": plain["launch_cpu"]["median"] / max(entry["launch_cpu"]["median"], 1e-9),
                    "cmd": plain["cmd_cpu"]["median"] / max(entry["cmd_cpu"]["median"], 1e-9)}
        floor = row["modes"].get("torch", {})
        for mode in TDEBUG_MODES + ("plain",):
            entry = row["modes"].get(mode, {})
            if "launch_cpu" in entry and "launch_cpu" in floor:
                # How many times torch's CPU time for the same computation the mode's launches take (the floor).
                entry["over_torch"] = entry["launch_cpu"]["median"] / max(floor["launch_cpu"]["median"], 1e-12)
        serial = row["modes"].get("serial", {})
        for mode in ("batched", "baseline"):
            entry = row["modes"].get(mode, {})
            if mode == "baseline" and baseline_executor == "batched":  # old batched against this one
                serial = row["modes"].get("batched", {})
            if "launch_cpu" in entry and "launch_cpu" in serial:
                # batched: how much faster than serial; baseline: how much faster serial is than the baseline.
                fast, slow = (entry, serial) if mode == "batched" else (serial, entry)
                entry["speedup_vs_serial" if mode == "batched" else "serial_speedup"] = {
                    "launch": slow["launch_cpu"]["median"] / max(fast["launch_cpu"]["median"], 1e-9),
                    "cmd": slow["cmd_cpu"]["median"] / max(fast["cmd_cpu"]["median"], 1e-9)}
                entry["same_output_as_serial"] = entry["digests"] == serial["digests"]
                entry["same_findings_as_serial"] = entry["findings_digests"] == serial["findings_digests"]
        rows.append(row)
    return rows


def _cell(stats: dict) -> str:
    return f"{stats['median']:.2f} ({stats['min']:.2f}-{stats['max']:.2f})"


def markdown(summary: list[dict], modes: list[str], meta: dict) -> str:
    lines = ["# Engine benchmark (scripts/bench_engine.py)", "",
             f"{meta['when']}, {meta['machine']}, Triton {meta['triton']}, up to {meta['repeats']} repeats per mode "
             f"(fresh processes, modes alternating){QUICK_NOTE if meta['quick'] else ''}. CPU seconds: median "
             "(min-max). launch = the workload's own launches (time.process_time()); cmd = the whole command "
             "(child rusage). x = plain / mode, within this run. Plain's shims: "
             f"{', '.join(meta['plain_shims']) or 'none'} (workloads.py says why)."
             + (" torch = the floor: each workload's computation in torch on the same CPU, one thread, its dtype "
                "(workloads.py FLOORS; CPU seconds of one run, the mean over repeats); MODE / torch = the mode's "
                "launch CPU over it (medians)." if "torch" in modes else ""), ""]
    head = ["workload", "programs x steps"]
    over = [m for m in modes if m in TDEBUG_MODES] if "torch" in modes else []
    for mode in modes:
        if mode == "torch":
            head += ["torch launch"]
            continue
        head += [f"{mode} launch", f"{mode} cmd"] + ([] if mode == "plain" else [f"{mode} x launch/cmd"])
        head += [f"{mode} RSS MiB"]
    head += [f"{mode} / torch" for mode in over]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in summary:
        first = next((e for e in row["modes"].values() if "programs" in e), {})
        cells = [row["workload"], f"{first.get('programs', '?')} x {first.get('steps', '?')}"]
        for mode in modes:
            e = row["modes"][mode]
            if mode == "torch":
                cells.append(f"{e['launch_cpu']['median'] * 1e3:.3g} ms" + ("" if e["ok"] else " (wrong output)")
                             if "launch_cpu" in e else "failed")
                continue
            if "launch_cpu" not in e:
                cells += ["failed", "failed"] + ([] if mode == "plain" else ["-"]) + ["-"]
                continue
            flag = "" if e["ok"] else " (wrong output)"
            cells += [_cell(e["launch_cpu"]) + flag, _cell(e["cmd_cpu"])]
            if mode != "plain":
                s = e.get("speedup_vs_plain")
                cells.append(f"{s['launch']:.2f}x / {s['cmd']:.2f}x" if s else "-")
            cells.append(f"{e['peak_rss_mib']:.0f}")
        cells += [f"{row['modes'][m]['over_torch']:.0f}x" if "over_torch" in row["modes"][m] else "-" for m in over]
        lines.append("| " + " | ".join(cells) + " |")
    if meta.get("baseline"):
        executor = meta.get("baseline_executor", "serial")
        lines += ["", f"baseline = {executor} with the tdebug checkout at {meta['baseline']}; this checkout's "
                  f"{executor} is faster than it by (launch / cmd, medians; below 1: slower):", ""]
        for row in summary:
            s = row["modes"].get("baseline", {}).get("serial_speedup")
            if s:
                lines.append(f"- {row['workload']}: {s['launch']:.2f}x / {s['cmd']:.2f}x")
    lines += ["", "Outputs (digest of the output tensors' bytes) and findings per mode:", ""]
    for row in summary:
        parts = []
        for mode in modes:
            e = row["modes"][mode]
            if "digests" in e and mode != "torch":
                same = "" if "same_output_as_serial" not in e else (
                    ", same as serial" if e["same_output_as_serial"] else ", DIFFERS from serial")
                if "same_findings_as_serial" in e and not e["same_findings_as_serial"]:
                    same += ", findings DIFFER from serial"
                found = f", findings {e['findings']}" if mode != "plain" else ""
                parts.append(f"{mode} {'/'.join(e['digests'])}{same}{found}")
        lines.append(f"- {row['workload']}: " + "; ".join(parts))
    return "\n".join(lines) + "\n"


def write(records: list[dict], modes: list[str], workloads: list[str], args: argparse.Namespace,
          repeats_done: int) -> Path:
    """PREFIX.json (meta, summary, every record) and PREFIX.md from the records so far."""
    summary = summarise(records, modes, workloads, args.baseline_executor)
    plain_shims = next((r["shims"] for r in records if r["mode"] == "plain" and "shims" in r), [])
    meta = {"when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "quick": args.quick,
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs", "repeats": repeats_done,
            "repeats_asked": args.repeats,
            "python": args.python, "triton": next((r["triton"] for r in records if "triton" in r), "?"),
            "plain_shims": plain_shims, "baseline": str(args.baseline) if args.baseline else None,
            "baseline_executor": args.baseline_executor}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    Path(f"{out}.json").write_text(json.dumps({"meta": meta, "summary": summary, "records": records}, indent=1))
    Path(f"{out}.md").write_text(markdown(summary, modes, meta))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes: proves the script works, in seconds")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--baseline", type=Path, help="a tdebug checkout: adds mode `baseline` (serial, its code)")
    parser.add_argument("--baseline-executor", choices=("serial", "batched"), default="serial",
                        help="the engine the baseline checkout runs, compared with this checkout's same engine")
    parser.add_argument("--python", default=sys.executable, help="the Python (and so Triton) every mode runs on")
    parser.add_argument("--timeout", type=float, default=1500.0, help="tdebug's --timeout per case")
    parser.add_argument("--out", default=str(ROOT / "results" / "bench-engine"), help="writes OUT.json and OUT.md")
    args = parser.parse_args(argv)
    workloads = [w for w in args.workloads.split(",") if w]
    modes = [m for m in args.modes.split(",") if m] + (["baseline"] if args.baseline else [])
    unknown = [w for w in workloads if w not in WORKLOADS] + [m for m in modes if m not in MODES + ["baseline"]]
    if unknown or args.repeats < 1:
        print(f"bench_engine: unknown workload or mode {', '.join(unknown)} (or --repeats < 1)", file=sys.stderr)
        return 2
    records = []
    # Full sizes: one fresh process per workload and mode. --quick: one process per mode runs every workload.
    groups = [[w] for w in workloads] if not args.quick else [workloads]
    for repeat in range(args.repeats):
        for group in groups:
            for mode in modes:
                for rec in run_one(mode, group, args):
                    rec["repeat"] = repeat
                    records.append(rec)
                    print(f"{repeat} {rec['workload']:17s} {mode:8s} rc={rec['rc']} cmd_cpu={rec['cmd_cpu']:.2f} "
                          f"launch_cpu={rec.get('launch_cpu', float('nan')):.3g} rss={rec['peak_rss_mib']:.0f}MiB "
                          f"ok={rec.get('ok')} {rec.get('tail', '')[-300:]}", flush=True)
                out = write(records, modes, workloads, args, repeat + 1)  # a long run leaves what it measured
    failed = [r for r in records if "launch_cpu" not in r or r["rc"] not in (0, 1)]
    print(f"wrote {out}.json and {out}.md; {len(failed)} of {len(records)} runs failed", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
