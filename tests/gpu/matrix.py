"""The GPU detection matrix: every bug in bugs/ and every fixed kernel in kernels/ under each GPU mode.

    python tests/gpu/matrix.py [--out DIR] [--jobs N] [--only NAME ...]

Modes: plain (the compiled kernel against its reference, no detector), guard (guard bands), debug
(TRITON_DEBUG=1), memcheck and initcheck (compute-sanitizer), racecheck for bugs whose BUG names it, and
sanitize: what `tdebug sanitize --device cuda` runs (memcheck, initcheck and tdebug's interpreter pass on the
GPU's tensors, at once, merged).
A bug file runs its BUG's case (shape, layout, dtype); a fixed kernel runs its default case plus the case of
every bug that fixes it, so "clean" means clean exactly where the bugs show. Autotuned kernels run config 0
(or the next config that fits the GPU). Each mode runs over the whole catalogue before the next, N files at
a time, so every mode's wall time is measured under the same load: the overhead table compares them.
Writes DIR/matrix.json and DIR/matrix.md (default tests/gpu/results).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

from tdebug.catalogue.files import bug_files, kernel_files  # noqa: E402
from tdebug.catalogue.spec import Case, load_target  # noqa: E402
from tdebug.runtime.harness import JobResult, run_job  # noqa: E402
from tdebug.runtime.job import Job, SanitizeOptions  # noqa: E402
from tdebug.sanitize import CHECKS  # noqa: E402
from tdebug.sanitize import compute_sanitizer as cs_mod  # noqa: E402
from tdebug.sanitize.combined import RUN_FAILURES, sanitize_combined  # noqa: E402
from tdebug.sanitize.gpu_debug import run_debug  # noqa: E402

MODES = ("plain", "guard", "debug", "memcheck", "initcheck", "racecheck", "sanitize")
HUGE = 2**26  # a dimension this long (tensors of GBs) runs only under the detectors its BUG names
TIMEOUT = 300.0
DETECTORS = ("compute-sanitizer", "guard", "triton-debug")


def huge(shape) -> bool:
    return max(shape) > HUGE


def case_dict(shape, dtype: str, layout: str, variant: str) -> dict:
    return {"shape": list(shape), "dtype": dtype, "layout": layout, "seed": 0, "device": "cuda", "variant": variant}


def plan(root: Path) -> list[dict]:
    """One entry per file: its cases, and for bugs the GPU detectors its BUG names."""
    entries = []
    bugs = []
    for path in bug_files(root):
        t = load_target(path)
        bug, spec = t.bug, t.spec
        shape = spec.normalize_shape(tuple(bug.shape)) if bug.shape else tuple(spec.default_shape)
        variant = spec.variants[0] if spec.variants else ""
        expected = [d.split(":", 1)[1] for d in bug.caught_by if d.startswith("gpu:")]
        bugs.append((bug, shape, variant))
        entries.append({"file": f"bugs/{path.name}", "kind": "bug", "fixes": bug.fixes, "expected": expected,
                        "caught_by": list(bug.caught_by), "huge": huge(shape) or bug.gpu_only,
                        "cases": [case_dict(shape, bug.dtype, bug.layout, variant)]})
        if hasattr(t.module, "story_inputs"):  # the bug shows on the story's inputs, not make_inputs'
            entries.append({**entries[-1], "kind": "story", "cases": []})
    for path in kernel_files(root):
        t = load_target(path)
        spec = t.spec
        variant = spec.variants[0] if spec.variants else ""
        dtype = "fp32" if "fp32" in spec.gpu_dtypes else spec.gpu_dtypes[0]
        cases = [case_dict(spec.default_shape, dtype, "contiguous", variant)]
        for bug, shape, bvariant in bugs:
            if bug.fixes != f"kernels/{path.name}" or huge(shape):
                continue
            c = case_dict(shape, bug.dtype, bug.layout, bvariant)
            if c not in cases:
                cases.append(c)
        entries.append({"file": f"kernels/{path.name}", "kind": "kernel", "expected": [], "huge": False,
                        "cases": cases})
    return entries


def modes_for(entry: dict) -> list[str]:
    if entry["kind"] == "story":  # a script: no guard bands (they wrap catalogue launches)
        return ["plain", "debug", "memcheck", "initcheck", "sanitize"]
    if entry["huge"]:
        return ["debug"] if "debug" in entry["expected"] else list(entry["expected"])
    modes = ["plain", "guard", "debug", "memcheck", "initcheck"]
    if "racecheck" in entry["expected"]:
        modes.append("racecheck")
    modes.append("sanitize")
    return modes


def run_mode(entry: dict, mode: str, cs: str | None) -> dict:
    job = Job(target=str(ROOT / entry["file"]), kind="spec", pin_autotune=True,
              cases=tuple(Case(**{**c, "shape": tuple(c["shape"])}) for c in entry["cases"]))
    if entry["kind"] == "story":
        job = Job(target=str(HERE / "scripts" / "run_story.py"), kind="script", argv=(str(ROOT / entry["file"]),))
    started = time.perf_counter()
    if mode == "plain":
        result = run_job(job, mode="gpu", timeout=TIMEOUT, capture=True)
    elif mode == "guard":
        result = run_job(job.but(guard=True), mode="gpu", timeout=TIMEOUT, capture=True)
    elif mode == "debug":
        result = run_debug(job, timeout=TIMEOUT, tee=False)
    elif mode == "sanitize":
        job = job.but(sanitize=SanitizeOptions(checks=tuple(sorted(CHECKS)), max_findings=0), engine="tdebug")
        combined = sanitize_combined(job, ["memcheck", "initcheck"], timeout=TIMEOUT)
        summary = summarize(combined.result, mode, time.perf_counter() - started)
        return {**summary, "notes": combined.notes, "engines": {r.engine: round(r.seconds, 2) for r in combined.runs}}
    else:
        if cs is None:
            return {"skipped": "compute-sanitizer not found"}
        result = cs_mod.run_tool(job, mode, cs, TIMEOUT).result
    return summarize(result, mode, time.perf_counter() - started)


def caught(result: JobResult, mode: str) -> bool:
    fs = [f for c in result.cases for f in c.findings]
    if mode in ("memcheck", "initcheck", "racecheck", "synccheck"):
        return any(f.source == "compute-sanitizer" and f.extra.get("tool") == mode for f in fs)
    if mode == "debug":
        return any(c.status in ("assert", "overflow") for c in result.cases)
    if mode == "guard":
        return any(f.source == "guard" for f in fs)
    if mode == "sanitize":
        return any(f.source in ("compute-sanitizer", "tdebug") and f.check not in RUN_FAILURES for f in fs)
    return any(c.status != "pass" for c in result.cases)


def summarize(result: JobResult, mode: str, seconds: float) -> dict:
    cases = []
    for c in result.cases:
        cases.append({
            "label": c.label, "status": c.status, "time": round(c.time, 3), "error": c.error[:300],
            "comparisons": [{k: v for k, v in comp.items() if k in ("ok", "mismatches", "unwritten", "max_abs")}
                            for comp in c.comparisons],
            "findings": [{"check": f.check, "source": f.source, "tool": f.extra.get("tool", ""),
                          "where": f"{Path(f.file).name}:{f.line}" if f.file else "", "kernel": f.kernel,
                          "tensor": f.tensor, "count": f.count, "message": f.message[:300]} for f in c.findings]})
    sources = DETECTORS + (("tdebug",) if mode == "sanitize" else ())
    detector = [f for c in result.cases for f in c.findings if f.source in sources and f.check not in RUN_FAILURES]
    broken = [c for c in result.cases if c.status in ("assert", "overflow", "crash", "hang", "error")]
    return {"seconds": round(seconds, 2), "fatal": result.fatal, "caught": caught(result, mode),
            "clean": not result.fatal and not detector and not broken,
            "reference_ok": all(all(comp.get("ok") for comp in c.comparisons) for c in result.cases),
            "cases": cases}


def verdict(entry: dict) -> str:
    res = entry["results"]
    if entry["kind"] == "kernel":
        dirty = [m for m, r in res.items() if "skipped" not in r and not r["clean"]]
        text = "clean" if not dirty else "NOT CLEAN: " + ", ".join(dirty)
        if not all(r.get("reference_ok", True) for r in res.values()):
            text += "; its reference check fails in some case (plain run too: see the cases)"
        return text
    missed = [m for m in entry["expected"] if not res.get(m, {}).get("caught")]
    also = [m for m, r in res.items() if m != "plain" and r.get("caught") and m not in entry["expected"]]
    if not entry["expected"]:
        text = "no GPU detector named"
    elif missed:
        text = "MISSED by " + ", ".join(missed)
    else:
        text = "caught by " + ", ".join(entry["expected"])
    if also:
        text += "; also found by " + ", ".join(also)
    if res.get("plain", {}).get("caught"):
        text += "; the plain run fails its reference check"
    return text


def cell(entry: dict, mode: str) -> str:
    r = entry["results"].get(mode)
    if r is None:
        return "-"
    if "skipped" in r:
        return "skipped"
    if r["fatal"]:
        return "fatal"
    if entry["kind"] == "kernel":
        text = "clean" if r["clean"] else "FINDINGS"
        if not r.get("reference_ok", True):
            text += ", ref. mismatch"
    else:
        checks = sorted({f["check"] for c in r["cases"] for f in c["findings"]
                         if mode == "plain" or (f["source"] != "tdebug" or mode == "sanitize")
                         and f["check"] not in RUN_FAILURES})
        if mode == "plain":
            text = "/".join(sorted({c["status"] for c in r["cases"]}))
        else:
            text = ("**" + ",".join(checks or ["yes"]) + "**") if r["caught"] else "-"
    if r.get("notes"):
        text += ", partly unchecked"
    return f"{text} ({r['seconds']:.1f}s)"


def markdown(entries: list[dict], phases: dict, meta: dict) -> str:
    lines = ["# GPU detection matrix (H100)", "",
             f"{meta['device']}; torch {meta['torch']}, triton {meta['triton']}; compute-sanitizer {meta['cs']}; "
             f"{meta['jobs']} files at a time; {meta['date']}.", "",
             "Each cell: what the mode found (bugs) or whether everything passed with no finding (fixed kernels), "
             "and the wall time of that file under the mode (process start-up, compilation and the check included).",
             "", "| file | GPU detectors named | " + " | ".join(MODES) + " | verdict |",
             "|---|---|" + "---|" * len(MODES) + "---|"]
    for e in entries:
        named = ", ".join(e["expected"]) or "-"
        name = e["file"] + (" (story_inputs)" if e["kind"] == "story" else "")
        lines.append(f"| {name} | {named} | " + " | ".join(cell(e, m) for m in MODES) + f" | {verdict(e)} |")
    lines += ["", "## Overhead: wall time of the whole catalogue per mode", "",
              "Same files, same cases, same concurrency in every mode; racecheck only ran where a BUG names it.", "",
              "| mode | files | sum of per-file wall time (s) | phase wall time (s) | vs plain (sum) |",
              "|---|---|---|---|---|"]
    for mode in MODES:
        p = phases.get(mode)
        if not p:
            continue
        common = [e for e in entries if mode in e["results"] and "plain" in e["results"]
                  and "skipped" not in e["results"][mode]]
        total = sum(e["results"][mode]["seconds"] for e in common)
        plain = sum(e["results"]["plain"]["seconds"] for e in common)
        ratio = f"{total / plain:.2f}x" if plain else "-"
        lines.append(f"| {mode} | {p['files']} | {total:.1f} | {p['wall']:.1f} | {ratio} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(ROOT / "tests" / "gpu" / "results"))
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument("--only", nargs="*", default=None, help="file names (e.g. 05_add_store_mask.py)")
    args = ap.parse_args()
    import torch
    import triton

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    entries = plan(ROOT)
    if args.only:
        entries = [e for e in entries if Path(e["file"]).name in args.only]
    cs = cs_mod.find_compute_sanitizer()
    meta = {"device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU",
            "torch": torch.__version__, "triton": triton.__version__, "cs": cs or "not found", "jobs": args.jobs,
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    for e in entries:
        e["results"] = {}
    phases = {}
    for mode in MODES:
        todo = [e for e in entries if mode in modes_for(e)]
        if not todo:
            continue
        started = time.perf_counter()
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            futures = {pool.submit(run_mode, e, mode, cs): e for e in todo}
            for fut, e in futures.items():
                try:
                    e["results"][mode] = fut.result()
                except Exception as exc:  # noqa: BLE001 - recorded in the matrix
                    e["results"][mode] = {"seconds": 0.0, "fatal": f"{type(exc).__name__}: {exc}", "caught": False,
                                          "clean": False, "cases": []}
                print(f"{mode:9s} {e['file']:45s} {cell(e, mode)}", flush=True)
        phases[mode] = {"files": len(todo), "wall": time.perf_counter() - started}
        print(f"== {mode}: {len(todo)} files in {phases[mode]['wall']:.1f} s", flush=True)
    for e in entries:
        e["verdict"] = verdict(e)
    (out / "matrix.json").write_text(json.dumps({"meta": meta, "phases": phases, "entries": entries}, indent=1))
    (out / "matrix.md").write_text(markdown(entries, phases, meta))
    print(markdown(entries, phases, meta))
    bad = [e for e in entries if e["verdict"].startswith(("MISSED", "NOT CLEAN"))]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
