"""Findings: what a detector saw, where (file:line, program id, tensor, indices), and how to render it."""

from __future__ import annotations

import linecache
from dataclasses import asdict, dataclass, field
from pathlib import Path


@dataclass
class Finding:
    check: str  # bounds, uninit, race, unwritten, assert, overflow, nan, note, crash, hang, mismatch, lint, ...
    message: str
    kernel: str = ""
    file: str = ""
    line: int = 0
    pids: list[tuple[int, ...]] = field(default_factory=list)  # first few program ids involved
    tensor: str = ""  # argument name
    tensor_shape: tuple[int, ...] = ()
    tensor_strides: tuple[int, ...] = ()
    indices: list = field(default_factory=list)  # first few element indices (or byte offsets)
    masked: bool | None = None  # the access had a mask (that let the bad lane through) or had none
    count: int = 1  # lanes / elements sharing this cause
    source: str = "tdebug"  # which tool produced it: tdebug, triton-viz, compute-sanitizer, guard
    config: str = ""  # the autotune config the launch ran, e.g. "#1 BLOCK=128 warps=4 stages=3"
    extra: dict = field(default_factory=dict)

    def key(self) -> tuple:
        return (self.check, self.kernel, self.file, self.line, self.tensor, self.message, self.config)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> Finding:
        d = dict(d)
        d["pids"] = [tuple(p) for p in d.get("pids", [])]
        d["tensor_shape"] = tuple(d.get("tensor_shape", ()))
        d["tensor_strides"] = tuple(d.get("tensor_strides", ()))
        return cls(**d)


def merge(findings: list[Finding], max_examples: int = 4) -> list[Finding]:
    """One finding per (check, kernel, line, tensor, message): counts add up, examples are kept few; in one order
    whichever engine ran the programs (the first program involved, in the serial engine's order, then the line)."""
    merged: dict[tuple, Finding] = {}
    for f in findings:
        k = f.key()
        if k not in merged:
            merged[k] = Finding(**{**f.__dict__, "pids": list(f.pids), "indices": list(f.indices)})
            continue
        m = merged[k]
        m.count += f.count
        for p in f.pids:
            if p not in m.pids and len(m.pids) < max_examples:
                m.pids.append(p)
        for i in f.indices:
            if i not in m.indices and len(m.indices) < max_examples:
                m.indices.append(i)
    return sorted(merged.values(), key=_order)


def _order(f: Finding) -> tuple:
    first = min((tuple(p) for p in f.pids), default=())  # the serial engine runs x outermost, z innermost
    return (first, f.file, f.line, f.check, f.kernel, f.tensor, f.message, str(f.config))


def source_context(file: str, line: int, around: int = 1) -> list[str]:
    """The source line with `around` lines each side, numbered, the line itself marked."""
    if not file or line <= 0:
        return []
    out = []
    for n in range(max(1, line - around), line + around + 1):
        text = linecache.getline(file, n)
        if not text:
            continue
        mark = ">" if n == line else " "
        out.append(f"  {mark}{n:5d} | {text.rstrip()}")
    return out


def _pid_text(p: tuple[int, ...]) -> str:
    p = tuple(p)
    while len(p) > 1 and p[-1] == 0:
        p = p[:-1]
    return ",".join(map(str, p))


def shown_path(path: str) -> str:
    """A file as reports name it: relative to the working folder when it lies under it, else as it is."""
    try:
        relative = Path(path).relative_to(Path.cwd())
    except (ValueError, OSError):
        return path
    return str(relative)


def render(f: Finding, context: bool = True) -> str:
    head = f"{shown_path(f.file)}:{f.line}: {f.check}: {f.message}" if f.file else f"{f.check}: {f.message}"
    lines = [head]
    if context:
        lines += source_context(f.file, f.line)
    facts = []
    if f.kernel:
        facts.append(f"kernel {f.kernel}")
    if f.pids:
        facts.append(("program " if len(f.pids) == 1 else "programs ") + " ".join(f"({_pid_text(p)})" for p in f.pids))
    if f.tensor:
        t = f"tensor '{f.tensor}'"
        if f.tensor_shape:
            t += f" shape {list(f.tensor_shape)} strides {list(f.tensor_strides)}"
        facts.append(t)
    if f.config:
        facts.append(f"autotune config {f.config}")
    if f.masked is not None:
        facts.append("masked access" if f.masked else "no mask")
    if facts:
        lines.append("  " + ", ".join(facts))
    if f.indices:
        lines.append(f"  e.g. {', '.join(str(i) for i in f.indices)}" + (f" ({f.count} in all)" if f.count > 1 else ""))
    elif f.count > 1:
        lines.append(f"  {f.count} in all")
    return "\n".join(lines)
