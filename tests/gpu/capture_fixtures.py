"""Capture real compute-sanitizer and TRITON_DEBUG logs on a GPU, as the parser tests' fixtures.

    python tests/gpu/capture_fixtures.py [OUT_DIR]      (default tests/fixtures/compute_sanitizer)

Each log is what tdebug's parser reads: the tool's output as tdebug runs it (tdebug.sanitize.compute_sanitizer
.tool_command), with tdebug's case markers, or the debug-mode child's stderr. A summary of what the
parser made of each log goes to OUT_DIR/summary.json.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tdebug.catalogue.spec import Case  # noqa: E402
from tdebug.runtime.job import Job  # noqa: E402
from tdebug.sanitize import compute_sanitizer as cs_mod  # noqa: E402
from tdebug.sanitize.gpu_debug import parse_asserts, run_debug  # noqa: E402

HERE = Path(__file__).resolve().parent
SCRIPTS = HERE / "scripts"


def script_job(name: str) -> Job:
    return Job(target=str(SCRIPTS / name), kind="script")


def spec_job(path: Path, shapes: list[tuple[int, ...]]) -> Job:
    return Job(target=str(path), kind="spec",
               cases=tuple(Case(tuple(s), "fp32", "contiguous", 0, "cuda") for s in shapes))


TOOL_CAPTURES = [
    ("memcheck_read.log", "memcheck", script_job("oob_read.py")),
    ("memcheck_write.log", "memcheck", script_job("oob_write.py")),
    ("memcheck_clean.log", "memcheck", script_job("clean_add.py")),
    ("initcheck_uninit.log", "initcheck", script_job("uninit_read.py")),
    ("initcheck_clean.log", "initcheck", script_job("clean_add.py")),
    ("racecheck_race.log", "racecheck", script_job("smem_race.py")),
    ("racecheck_matmul.log", "racecheck", spec_job(ROOT / "kernels" / "matmul.py", [(129, 127, 65)])),
    ("synccheck_clean.log", "synccheck", script_job("clean_add.py")),
    ("memcheck_cases.log", "memcheck", spec_job(HERE / "data" / "nomask_store_spec.py", [(1000,), (1024,)])),
]
DEBUG_CAPTURES = [
    ("triton_debug_assert.log", script_job("assert_fires.py")),
    ("triton_debug_overflow.log", script_job("overflow.py")),
]


def main(out_dir: Path) -> int:
    out_dir.mkdir(parents=True, exist_ok=True)
    cs = cs_mod.find_compute_sanitizer()
    if cs is None:
        print("compute-sanitizer not found", file=sys.stderr)
        return 2
    summary = {}
    for name, tool, job in TOOL_CAPTURES:
        started = time.perf_counter()
        run = cs_mod.run_tool(job, tool, cs, timeout=300)
        (out_dir / name).write_text(run.log)
        cases = [{"label": c.label, "status": c.status, "findings": [f.to_dict() for f in c.findings]}
                 for c in run.result.cases]
        summary[name] = {"tool": tool, "seconds": round(time.perf_counter() - started, 2), "cases": cases,
                         "fatal": run.result.fatal}
        print(f"{name}: {[(c['status'], [f['check'] for f in c['findings']]) for c in cases]} "
              f"{summary[name]['seconds']} s", flush=True)
    for name, job in DEBUG_CAPTURES:
        started = time.perf_counter()
        result = run_debug(job, timeout=300, tee=False)
        text = "\n".join(f"# tdebug: child from case {lg.start}, exit code {lg.exit_code}\n"
                         f"# tdebug: stdout\n{lg.stdout}\n# tdebug: stderr\n{lg.stderr}" for lg in result.logs)
        (out_dir / name).write_text(text)
        cases = [{"label": c.label, "status": c.status, "findings": [f.to_dict() for f in c.findings]}
                 for c in result.cases]
        summary[name] = {"tool": "debug", "seconds": round(time.perf_counter() - started, 2), "cases": cases,
                         "parsed": len(parse_asserts(text))}
        print(f"{name}: {[(c['status'], [f['check'] for f in c['findings']]) for c in cases]} "
              f"{summary[name]['seconds']} s", flush=True)
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "tests" / "fixtures" / "compute_sanitizer"))
