"""`tdebug run --mode debug`: the GPU with TRITON_DEBUG=1, device-side asserts turned into findings.

TRITON_DEBUG=1 is read once at `import triton`, so the harness sets it in the child's environment
(MODE_ENV["debug"]). It makes tl.device_assert live and adds int32 overflow checks. A failing assert
prints one line per failing thread on the child's stderr, e.g.

    /path/kernel.py:20: unknown: block: [2,0,0], thread: [34,0,0] Assertion `x too big` failed.

and the launch raises "CUDA error: device-side assert triggered", after which the CUDA context is
unusable: the worker reports the case and exits, the harness starts a fresh child for the next case.
Here the child's output is shown as it comes (tee) and parsed afterwards into Finding(check="assert"
or "overflow") with the message, source line, kernel, blocks and threads.
"""

from __future__ import annotations

import linecache
import re
from collections.abc import Callable

from ..report import Finding
from ..runtime.harness import run_job
from ..runtime.job import Job
from ..runtime.results import CaseResult, JobResult

ASSERT_RE = re.compile(
    r"(?P<file>[^\s:][^:\n]*?):(?P<line>\d+): (?P<func>[^:\n]*): block: \[(?P<block>[\d, ]+)\], "
    r"thread: \[(?P<thread>[\d, ]+)\] Assertion [`'\"]?(?P<msg>.*?)[`'\"]? failed\.?[ \t]*$",
    re.MULTILINE)
DEF_RE = re.compile(r"^\s*def\s+(\w+)\s*\(")
MAX_EXAMPLES = 4


def _triple(text: str) -> tuple[int, ...]:
    return tuple(int(v) for v in text.replace(" ", "").split(",") if v)


def kernel_at(file: str, line: int, look_back: int = 400) -> str:
    """The name of the function whose body holds file:line (the nearest `def` above it), or ''."""
    for n in range(line, max(0, line - look_back), -1):
        m = DEF_RE.match(linecache.getline(file, n))
        if m:
            return m.group(1)
    return ""


def parse_asserts(text: str) -> list[Finding]:
    """Device-assert lines of a child's output as findings, one per (file, line, message)."""
    groups: dict[tuple[str, int, str], dict] = {}
    for m in ASSERT_RE.finditer(text):
        key = (m.group("file"), int(m.group("line")), m.group("msg"))
        g = groups.setdefault(key, {"blocks": [], "threads": [], "count": 0, "func": m.group("func")})
        g["count"] += 1
        block, thread = _triple(m.group("block")), _triple(m.group("thread"))
        if block not in g["blocks"]:
            g["blocks"].append(block)
        if len(g["threads"]) < MAX_EXAMPLES:
            g["threads"].append({"block": list(block), "thread": list(thread)})
    findings = []
    for (file, line, msg), g in groups.items():
        overflow = "overflow" in msg
        first = g["threads"][0]
        where = f"block {first['block']}, thread {first['thread']}"
        if g["count"] > 1:
            where += f"; {g['count']} failing threads in {len(g['blocks'])} block(s)"
        what = "int32 overflow check failed" if overflow else "device_assert failed"
        kernel = g["func"] if g["func"] not in ("", "unknown") else kernel_at(file, line)
        findings.append(Finding(
            check="overflow" if overflow else "assert", message=f"{what}: {msg} ({where})", kernel=kernel,
            file=file, line=line, pids=g["blocks"][:MAX_EXAMPLES], count=g["count"], source="triton-debug",
            extra={"thread": first["thread"], "threads": g["threads"], "blocks": len(g["blocks"])}))
    return findings


def _is_cuda_error(f: Finding) -> bool:
    return f.check == "exception" and ("CUDA error" in f.message or "AcceleratorError" in f.message)


def attach_asserts(result: JobResult) -> JobResult:
    """Move the assert lines each child printed onto the case it died in (its last case)."""
    for i, log in enumerate(result.logs):
        end = result.logs[i + 1].start if i + 1 < len(result.logs) else None
        mine: list[CaseResult] = [c for c in result.cases if c.index >= log.start and (end is None or c.index < end)]
        findings = parse_asserts(log.stderr + "\n" + log.stdout)
        if not findings or not mine:
            continue
        case = mine[-1]
        case.findings = [f for f in case.findings if not _is_cuda_error(f)] + findings
        case.status = "overflow" if all(f.check == "overflow" for f in findings) else "assert"
        case.error = findings[0].message
    return result


def run_debug(job: Job, timeout: float | None = 120.0, tee: bool = True,
              on_event: Callable[[str, dict], None] | None = None) -> JobResult:
    """Run a worker job on the GPU with TRITON_DEBUG=1 and turn device-side asserts into findings.

    The child's stdout/stderr are shown as they come (tee) and kept for parsing. Autotuned catalogue
    kernels run the case's config (no benchmarking).
    """
    result = run_job(job.for_gpu(), mode="debug", timeout=timeout, tee=tee, capture=True, on_event=on_event)
    return attach_asserts(result)
