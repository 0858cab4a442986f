"""`tdebug sanitize` on a GPU: NVIDIA's compute-sanitizer around the worker, its log parsed into findings.

Each tool runs the whole job once: `compute-sanitizer --tool T --error-exitcode N ... python -m tdebug.child`
with PYTORCH_NO_CUDA_MEMORY_CACHING=1 (with PyTorch's caching allocator a missing-mask read lands in the
allocator's slack and memcheck reports nothing). The worker prints a marker line before each case, so
every error in the log is attributed to its case; after a CUDA error (memcheck aborts the faulting kernel)
the worker exits and the harness goes on in a fresh child. Under initcheck the outputs are not poisoned:
poisoning writes the memory initcheck must see unwritten. memcheck gets --padding (when the tool has it): a
read just past a small tensor otherwise lands in the next allocation and is not reported. initcheck reports in
PyTorch's own kernels (tdebug's comparison reading outputs) are dropped: only Triton kernels are the user's.

Parsed: memcheck's invalid accesses (kernel, file:line from Triton's line info, read/write and size,
block/thread, distance to the nearest allocation), initcheck's uninitialised reads, racecheck's
shared-memory hazards and synccheck's barrier errors, as Findings (checks bounds/misaligned/uninit/race/
sync, source "compute-sanitizer") merged with the same keys as the interpreter sanitizer's.
"""

from __future__ import annotations

import functools
import glob
import linecache
import os
import re
import shutil
import subprocess
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from .. import settings
from ..report import Finding, merge
from ..runtime.files import write_output
from ..runtime.harness import run_job
from ..runtime.job import Job
from ..runtime.results import CaseResult, ChildLog, JobResult

TOOLS = ("memcheck", "initcheck", "racecheck", "synccheck")
DEFAULT_TOOLS = ("memcheck", "initcheck")
ERROR_EXITCODE = 86
PRINT_LIMIT = 200
PADDING = 1 << 20  # memcheck: bytes of padding after every allocation, so a read just past a tensor that would
# land in the next allocation (cudaMalloc packs small ones together) is out of bounds all the same
CASE_MARKER = "@@tdebug-case "  # tdebug.runtime.worker.CASE_MARKER
MAX_EXAMPLES = 4
SOURCE = "compute-sanitizer"


def find_compute_sanitizer() -> str | None:
    """The compute-sanitizer executable: $TDEBUG_COMPUTE_SANITIZER, PATH, $CUDA_HOME/bin, /usr/local/cuda*/bin."""
    override = settings.get("TDEBUG_COMPUTE_SANITIZER")
    if override:
        return override if os.access(override, os.X_OK) else None
    found = shutil.which("compute-sanitizer")
    if found:
        return found
    dirs = [os.path.join(os.environ[v], "bin") for v in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(v)]
    dirs += ["/usr/local/cuda/bin"] + sorted(glob.glob("/usr/local/cuda-*/bin"), reverse=True)
    dirs += ["/usr/local/cuda/compute-sanitizer", "/opt/nvidia/compute-sanitizer"]
    for d in dirs:
        path = os.path.join(d, "compute-sanitizer")
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def expand_tools(tools: Sequence[str]) -> list[str]:
    """['all'] -> the four tools; [] -> memcheck and initcheck; unknown names raise ValueError."""
    if not tools:
        return list(DEFAULT_TOOLS)
    out: list[str] = []
    for t in tools:
        names = TOOLS if t == "all" else (t,)
        for name in names:
            if name not in TOOLS:
                raise ValueError(f"unknown compute-sanitizer tool {name!r}: choose from {', '.join(TOOLS)} or all")
            if name not in out:
                out.append(name)
    return out


@functools.lru_cache(maxsize=4)
def _supports(cs: str, option: str) -> bool:
    try:
        text = subprocess.run([cs, "--help"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    return option in text


def tool_command(cs: str, tool: str) -> list[str]:
    """The wrapper that goes before `python -m tdebug.child JOB`."""
    cmd = [cs, "--tool", tool, "--error-exitcode", str(ERROR_EXITCODE), "--print-limit", str(PRINT_LIMIT),
           "--show-backtrace", "device"]
    if tool == "memcheck" and _supports(cs, "--padding"):
        cmd += ["--padding", str(PADDING)]
    return cmd


# ---- the log ----

PREFIX_RE = re.compile(r"^=+ ?")
ACCESS_RE = re.compile(r"^Invalid __(?P<space>\w+)__ (?P<access>read|write|atomic)\w* of size (?P<size>\d+) bytes?")
UNINIT_RE = re.compile(r"^Uninitialized __(?P<space>\w+)__ memory (?P<access>read|write|access)\w* of size "
                       r"(?P<size>\d+) bytes?")
HOST_UNINIT_RE = re.compile(r"^Host API uninitialized memory access")
RACE_RE = re.compile(r"^(?P<level>Error|Warning|Info): Race reported between (?P<a>\w+) access at (?P<a_at>.+?)\s*$")
RACE_AND_RE = re.compile(r"^and (?P<b>\w+) access at (?P<b_at>.+?)(?: \[(?P<hazards>\d+) hazards?\])?\s*$")
SYNC_RE = re.compile(r"^(?P<what>Barrier error detected.*|Invalid arguments.*|.*[Ii]nvalid.*barrier.*)$")
AT_RE = re.compile(r"^at (?P<func>.+?)\+0x(?P<off>[0-9a-fA-F]+)(?: in (?P<file>.+?):(?P<line>\d+))?\s*$")
AT_NOLINE_RE = re.compile(r"^at 0x(?P<off>[0-9a-fA-F]+) in (?P<func>.+?)\s*$")
BY_RE = re.compile(r"^by thread \((?P<thread>[\d, ]+)\) in block \((?P<block>[\d, ]+)\)")
ADDRESS_RE = re.compile(r"^(?:Address|Access to) (?P<addr>0x[0-9a-fA-F]+)(?: is (?P<reason>.+?))?\s*$")
NEAREST_RE = re.compile(r"is (?P<dist>[\d,]+) bytes (?P<side>after|before|inside) the nearest allocation "
                        r"at (?P<at>0x[0-9a-fA-F]+) of size (?P<size>[\d,]+) bytes")
SUMMARY_RE = re.compile(r"^(?:ERROR SUMMARY: (?P<errors>[\d,]+) errors?\s*$|RACECHECK SUMMARY: (?P<hazards>[\d,]+) "
                        r"hazards? displayed)")


@dataclass
class ToolError:
    """One error record of a compute-sanitizer log."""

    tool: str
    check: str  # bounds, misaligned, invalid, uninit, race, sync
    header: str
    case: int = 0
    space: str = ""  # global, shared, local
    access: str = ""  # read, write, atomic
    size: int = 0
    kernel: str = ""
    file: str = ""
    line: int = 0
    thread: tuple[int, ...] = ()
    block: tuple[int, ...] = ()
    address: str = ""
    reason: str = ""
    distance: int | None = None  # bytes from the nearest allocation: > 0 after its end, < 0 before its start
    alloc_size: int | None = None
    other: dict = field(default_factory=dict)  # races: the second access


@dataclass
class ParsedLog:
    errors: list[ToolError] = field(default_factory=list)
    summary_errors: int | None = None  # the tool's own count (ERROR SUMMARY / RACECHECK SUMMARY)


def _triple(text: str) -> tuple[int, ...]:
    return tuple(int(v) for v in text.replace(" ", "").split(",") if v)


def _num(text: str) -> int:
    return int(text.replace(",", ""))


def _location(text: str) -> dict:
    """kernel, file, line of 'at add_kernel+0x1b0 in /path/add.py:20' (the 'at ' is optional)."""
    text = text if text.startswith("at ") else "at " + text
    m = AT_RE.match(text)
    if m:
        return {"kernel": _short_name(m.group("func")), "file": m.group("file") or "",
                "line": int(m.group("line") or 0)}
    m = AT_NOLINE_RE.match(text)
    if m:
        return {"kernel": _short_name(m.group("func")), "file": "", "line": 0}
    return {"kernel": text.strip(), "file": "", "line": 0}


def _short_name(func: str) -> str:
    """A kernel's name without C++ return type and parameter list (PyTorch's kernels are templated)."""
    func = func.strip()
    if func.startswith("void "):
        func = func[5:]
    depth, cut = 0, len(func)
    for i, ch in enumerate(func):
        if ch in "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0:
            cut = i
            break
    return func[:cut]


def parse_log(text: str, tool: str, first_case: int = 0) -> ParsedLog:
    """The errors in one compute-sanitizer log (prefix '========= ' and all), with the case each belongs to:
    the last '@@tdebug-case N' marker line before it (first_case when there is none)."""
    parsed = ParsedLog()
    case = first_case
    current: ToolError | None = None
    for raw in text.splitlines():
        if raw.startswith(CASE_MARKER):
            try:
                case = int(raw[len(CASE_MARKER):].strip())
            except ValueError:
                pass
            current = None
            continue
        if not PREFIX_RE.match(raw):
            continue  # the program's own output
        body = PREFIX_RE.sub("", raw, count=1)
        stripped = body.strip()
        indented = body.startswith(" ") or body.startswith("\t")
        if not stripped:
            current = None
            continue
        m = SUMMARY_RE.match(stripped)
        if stripped.startswith(("ERROR SUMMARY", "RACECHECK SUMMARY")):
            current = None
        if m:
            parsed.summary_errors = _num(m.group("errors") or m.group("hazards"))
            current = None
            continue
        if not indented:
            current = _header(stripped, tool, case)
            if current is not None:
                parsed.errors.append(current)
            continue
        if current is not None:
            _detail(current, stripped)
    return parsed


def _header(line: str, tool: str, case: int) -> ToolError | None:
    m = ACCESS_RE.match(line)
    if m:
        return ToolError(tool, "bounds", line, case, m.group("space"), m.group("access"), int(m.group("size")))
    m = UNINIT_RE.match(line)
    if m:
        return ToolError(tool, "uninit", line, case, m.group("space"), "read", int(m.group("size")))
    if HOST_UNINIT_RE.match(line):
        return ToolError(tool, "uninit", line, case, "global", "host-api")
    m = RACE_RE.match(line)
    if m:
        err = ToolError(tool, "race", line, case, "shared", m.group("a").lower())
        err.other["level"] = m.group("level").lower()
        for k, v in _location(m.group("a_at")).items():
            setattr(err, k, v)
        return err
    if tool == "synccheck":
        m = SYNC_RE.match(line)
        if m:
            return ToolError(tool, "sync", line, case)
    return None


def _detail(err: ToolError, line: str) -> None:
    m = AT_RE.match(line) or AT_NOLINE_RE.match(line)
    if m and not err.kernel:
        loc = _location(line)
        err.kernel, err.file, err.line = loc["kernel"], loc["file"], loc["line"]
        return
    m = BY_RE.match(line)
    if m:
        err.thread, err.block = _triple(m.group("thread")), _triple(m.group("block"))
        return
    m = ADDRESS_RE.match(line)
    if m:
        err.address, err.reason = m.group("addr"), (m.group("reason") or "")
        if "misaligned" in err.reason:
            err.check = "misaligned"
        return
    m = NEAREST_RE.search(line)
    if m:
        dist = _num(m.group("dist"))
        err.distance = -dist if m.group("side") == "before" else dist
        err.alloc_size = _num(m.group("size"))
        return
    m = RACE_AND_RE.match(line)
    if m and err.check == "race":
        loc = _location(m.group("b_at"))
        err.other.setdefault("with", []).append(
            {"access": m.group("b").lower(), "kernel": loc["kernel"], "file": loc["file"], "line": loc["line"],
             "hazards": int(m.group("hazards") or 1)})
        err.other["hazards"] = sum(w["hazards"] for w in err.other["with"])
        return
    if err.check == "bounds" and "Address" not in line and "is out of bounds" in line:
        err.reason = "out of bounds"
    if err.check == "uninit" and err.access == "host-api" and not err.other.get("detail"):
        err.other["detail"] = line


# ---- findings ----

_VERB = {"read": "load", "write": "store", "atomic": "atomic", "host-api": "copy"}


def _distance_text(dists: list[int], alloc: int | None) -> str:
    after = [d for d in dists if d > 0]
    before = [-d for d in dists if d < 0]
    size = f" ({alloc:,} bytes)" if alloc else ""
    parts = []
    if after:
        lo, hi = min(after), max(after)
        parts.append(f"{lo}{'' if lo == hi else f' to {hi}'} bytes past the end of the nearest allocation{size}")
    if before:
        lo, hi = min(before), max(before)
        parts.append(f"{lo}{'' if lo == hi else f' to {hi}'} bytes before the start of the nearest allocation{size}")
    return "; ".join(parts)


def _group_key(e: ToolError) -> tuple:
    side = 0 if e.distance is None else (1 if e.distance > 0 else -1)
    others = tuple((w["access"], w["file"], w["line"]) for w in e.other.get("with", []))
    return (e.tool, e.check, e.space, e.access, e.size, e.kernel, e.file, e.line, side, e.alloc_size, others, e.case)


def findings_from_errors(errors: Sequence[ToolError]) -> dict[int, list[Finding]]:
    """Errors grouped by cause (tool, kind, kernel, line, access, size, side of the allocation), per case."""
    groups: dict[tuple, list[ToolError]] = {}
    for e in errors:
        groups.setdefault(_group_key(e), []).append(e)
    out: dict[int, list[Finding]] = {}
    for group in groups.values():
        e = group[0]
        out.setdefault(e.case, []).append(_finding(group))
    return {case: merge(fs) for case, fs in out.items()}


def _finding(group: list[ToolError]) -> Finding:
    e = group[0]
    blocks: list[tuple[int, ...]] = []
    threads = []
    for g in group:
        if g.block and g.block not in blocks and len(blocks) < MAX_EXAMPLES:
            blocks.append(g.block)
        if g.thread and len(threads) < MAX_EXAMPLES:
            threads.append({"block": list(g.block), "thread": list(g.thread)})
    count = sum(g.other.get("hazards", 1) for g in group) if e.check == "race" else len(group)
    extra: dict = {"tool": e.tool, "space": e.space, "access": e.access, "size": e.size, "threads": threads}
    indices: list = []
    verb = _VERB.get(e.access, e.access)
    what = f"__{e.space}__ {e.access} of {e.size} bytes" if e.size else e.header
    if e.check == "bounds":
        dists = [g.distance for g in group if g.distance is not None]
        if dists:
            extra.update({"distance": [min(dists), max(dists)], "alloc_size": e.alloc_size})
            where = _distance_text(dists, e.alloc_size)
            message = f"{verb} outside every allocation ({e.tool}: invalid {what}, {where})"
            indices = [f"{d:+d} bytes from an allocation of {e.alloc_size} bytes"
                       for d in sorted(set(dists))[:MAX_EXAMPLES]]
        else:
            message = f"{verb} at an invalid address ({e.tool}: invalid {what}, {e.reason or 'no allocation nearby'})"
            indices = [g.address for g in group[:MAX_EXAMPLES] if g.address]
    elif e.check == "misaligned":
        message = f"misaligned {verb} ({e.tool}: {what} at a misaligned address)"
        indices = [g.address for g in group[:MAX_EXAMPLES] if g.address]
    elif e.check == "uninit":
        if e.access == "host-api":
            message = f"a host API call read device memory nothing has written ({e.tool}: {e.header}; " \
                      f"{e.other.get('detail', '')})".replace("; )", ")")
        else:
            message = f"load of memory nothing has written ({e.tool}: uninitialized {what})"
        indices = [g.address for g in group[:MAX_EXAMPLES] if g.address]
    elif e.check == "race":
        others = e.other.get("with", [])
        against = ", ".join(f"{w['access']} at {Path(w['file']).name}:{w['line']} ({w['hazards']} hazards)"
                            for w in others) or "another access"
        message = f"shared-memory race: {e.access} here against {against} ({e.tool} {e.other.get('level', 'error')})"
        extra.update({"with": others})
    else:
        message = f"{e.header} ({e.tool})"
    return Finding(check=e.check, message=message, kernel=e.kernel, file=e.file, line=e.line, pids=blocks,
                   indices=indices, count=count, source=SOURCE, extra=extra)


# ---- running ----

def prepare_job(job: Job) -> Job:
    """A copy of a run/sanitize job for the GPU: device cuda, no interpreter sanitizer, no breakpoints,
    autotuned catalogue kernels pinned to the case's config (no benchmarking under the tool)."""
    return job.for_gpu()


def tool_env(tool: str) -> dict:
    env = {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1", "TDEBUG_CASE_MARKERS": "1"}
    if tool == "initcheck":
        env["TDEBUG_NO_POISON"] = "1"
    return env


@dataclass
class ToolRun:
    tool: str
    result: JobResult
    seconds: float
    log: str  # the raw tool output, every child's, with tdebug's case markers


def source_dirs(job: Job) -> list[Path]:
    """Where to look for the bare file names of Triton's line info ('add.py:20'): the target's folder, the
    catalogue beside it, the working directory, Triton's own language modules (tl.sum lives there)."""
    import importlib.util

    target = Path(job.target).resolve()
    dirs = [target.parent, target.parent.parent, target.parent.parent / "kernels", target.parent.parent / "bugs",
            Path.cwd()]
    spec = importlib.util.find_spec("triton")
    for loc in (spec.submodule_search_locations or []) if spec else []:
        dirs += [Path(loc) / "language", Path(loc)]
    out: list[Path] = []
    for d in dirs:
        if d.is_dir() and d not in out:
            out.append(d)
    return out


def resolve_file(name: str, dirs: Sequence[Path]) -> str:
    """A full path for a bare file name of the log, when one of dirs holds it; the name itself otherwise."""
    if not name or os.path.isabs(name):
        return name
    for d in dirs:
        if (d / name).is_file():
            return str(d / name)
    return name


def run_tool(job: Job, tool: str, cs: str, timeout: float | None = 120.0) -> ToolRun:
    """Run the job once under one tool and attach the parsed findings to its cases."""
    started = time.perf_counter()
    result = run_job(prepare_job(job), mode="gpu", timeout=timeout, capture=True, env_extra=tool_env(tool),
                     wrapper=tool_command(cs, tool))
    seconds = time.perf_counter() - started
    attach_tool_findings(result, tool, source_dirs(job))
    log = "\n".join(f"# tdebug: child from case {lg.start}, exit code {lg.exit_code}\n{lg.stdout}"
                    + (f"\n# tdebug: stderr\n{lg.stderr}" if lg.stderr.strip() else "") for lg in result.logs)
    return ToolRun(tool, result, seconds, log)


def _is_cuda_error(f: Finding) -> bool:
    """A consequence of the error the tool reports: the CUDA error the launch raised, or the crash of a process
    whose context died (PyTorch aborts when freeing memory after a launch failure), or a script's end with the
    tool's own --error-exitcode before its results reached tdebug (harness: "the script exited with code 86")."""
    if f.check == "crash":
        return True
    if f.check == "fail" and f.message.startswith(f"the script exited with code {ERROR_EXITCODE} "):
        return True
    return f.check == "exception" and ("CUDA error" in f.message or "Triton Error [CUDA]" in f.message
                                       or "AcceleratorError" in f.message)


def _tdebug_own_read(e: ToolError) -> bool:
    """initcheck errors in a kernel without Triton line info: a PyTorch kernel that tdebug's own reference check
    runs on the outputs (seen on the H100: initcheck flags poison_mask's compare on fp16 matmul outputs
    that the Triton kernel did write, all of them: the poisoned plain run finds 0 unwritten). Not the user's
    kernel; unwritten outputs are the reference check's and the guard bands' to report."""
    return e.tool == "initcheck" and e.check == "uninit" and not e.file and e.access != "host-api"


def descriptor_scratch_finding(f: Finding) -> bool:
    """`_descriptor_scratch_read` for a finding whose file was resolved after the run (see combined.py)."""
    return f.source == SOURCE and _descriptor_scratch_read(ToolError(
        f.extra.get("tool", ""), f.check, "", file=f.file, line=f.line))


def _descriptor_scratch_read(e: ToolError) -> bool:
    """initcheck's reads at a `tl.make_tensor_descriptor(...)` line: the kernel builds the TMA descriptor in the
    global scratch Triton's allocator gave it and reads it back; the instructions that write it (tensormap
    creation) are not seen by initcheck, so every program's read of its own descriptor looks uninitialised (on the
    H200: 200 reads in a correct 3x3-program descriptor copy, clean under memcheck and the interpreter). Not a read
    of the user's data: the loads through the descriptor are checked on their own lines."""
    if e.tool != "initcheck" or e.check != "uninit" or not e.file or not e.line:
        return False
    return "make_tensor_descriptor(" in linecache.getline(e.file, e.line)


def attach_tool_findings(result: JobResult, tool: str, dirs: Sequence[Path] = ()) -> None:
    by_index = {c.index: c for c in result.cases}
    for log in result.logs:
        parsed = parse_log(log.stdout, tool, first_case=log.start)
        for e in parsed.errors:
            e.file = resolve_file(e.file, dirs)
            for w in e.other.get("with", []):
                w["file"] = resolve_file(w["file"], dirs)
        errors = [e for e in parsed.errors if not _tdebug_own_read(e) and not _descriptor_scratch_read(e)]
        per_case = findings_from_errors(errors)
        if log.exit_code == ERROR_EXITCODE and not parsed.errors:
            last = max((c.index for c in result.cases if c.index >= log.start), default=log.start)
            per_case[last] = [Finding(check="gpu-error", source=SOURCE, extra={"tool": tool},
                                      message=f"{tool} reported {parsed.summary_errors or 'some'} error(s) that "
                                              "tdebug could not parse; keep the log (--keep-log) and read it")]
        for index, findings in per_case.items():
            case = by_index.get(index)
            if case is None:
                label = result.labels[index] if index < len(result.labels) else ""
                case = CaseResult(index=index, label=label, status="fail")
                result.cases.append(case)
                by_index[index] = case
            consequences = [f for f in case.findings if _is_cuda_error(f)]
            case.findings = [f for f in case.findings if not _is_cuda_error(f)] + findings
            if consequences and case.error in [f.message for f in consequences]:
                case.error = ""
            case.status = "fail"
    result.cases.sort(key=lambda c: c.index)


def combine(runs: Sequence[ToolRun]) -> JobResult:
    """One JobResult from several tools' runs of one job: per case, every tool's findings merged."""
    base = next((r.result for r in runs if not r.result.fatal), runs[0].result)
    combined = JobResult(kernel=base.kernel, labels=list(base.labels), lint=list(base.lint), fatal=base.fatal)
    indices = sorted({c.index for r in runs for c in r.result.cases})
    for index in indices:
        cases = [c for r in runs for c in r.result.cases if c.index == index]
        first = cases[0]
        tool_findings = merge([f for c in cases for f in c.findings if f.source == SOURCE])
        others: list[Finding] = []
        seen = set()
        for c in cases:
            for f in c.findings:
                if f.source == SOURCE or (tool_findings and _is_cuda_error(f)) or f.key() in seen:
                    continue
                seen.add(f.key())
                others.append(f)
        if tool_findings:
            status = "fail"
        else:
            bad = [c.status for c in cases if c.status != "pass"]
            status = bad[0] if bad else "pass"
        comparisons = next((c.comparisons for c in cases if c.comparisons), [])
        combined.cases.append(CaseResult(
            index=index, label=first.label, status=status, findings=tool_findings + others,
            comparisons=comparisons, time=max(c.time for c in cases),
            error=next((c.error for c in cases if c.error and not (tool_findings and "CUDA error" in c.error)), ""),
            launches=first.launches, case=first.case, exit_code=first.exit_code,
            stderr="".join(c.stderr for c in cases)))
    combined.logs = [ChildLog(lg.start, lg.stdout, lg.stderr, lg.exit_code) for r in runs for lg in r.result.logs]
    return combined


def log_path(keep_log: str, tool: str, n_tools: int) -> Path:
    """Where one tool's log goes: keep_log itself for one tool, NAME.TOOL.SUFFIX for several."""
    p = Path(keep_log)
    if n_tools == 1:
        return p
    suffix = p.suffix or ".log"
    return p.with_name(f"{p.stem if p.suffix else p.name}.{tool}{suffix}")


def run_tools(job: Job, tools: Sequence[str], cs: str, timeout: float) -> list[ToolRun]:
    """Each tool's run of the job, all at once: a tool watches its own process, so memcheck and initcheck
    need not wait for each other (each run pays Python's start-up and CUDA's initialisation)."""
    with ThreadPoolExecutor(max_workers=max(1, len(tools))) as pool:
        return list(pool.map(lambda tool: run_tool(job, tool, cs, timeout), tools))


def write_logs(keep_log: str, runs: Sequence[ToolRun]) -> None:
    """Each tool's raw log: keep_log itself for one tool, NAME.TOOL.log for several."""
    for run in runs:
        write_output(log_path(keep_log, run.tool, len(runs)), run.log, "--keep-log")


def sanitize_on_gpu(job: Job, tools: Sequence[str], keep_log: str | None, timeout: float) -> JobResult:
    """Run a worker job (as tdebug/cli/run.py builds it) under each compute-sanitizer tool, at once; findings of
    all tools merged per case. keep_log: also write each tool's raw log (NAME.TOOL.log when several)."""
    cs = find_compute_sanitizer()
    if cs is None:
        raise FileNotFoundError("compute-sanitizer was not found (install the CUDA toolkit or put it on PATH)")
    runs = run_tools(job, expand_tools(tools), cs, timeout)
    if keep_log:
        write_logs(keep_log, runs)
    return combine(runs)
