"""Findings as the sanitizer's checker accumulates them: one Issue per (check, line, tensor, cause), with a count
and a few examples."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ..report import Finding
from .shadow import ArgView

MAX_EXAMPLES = 4


@dataclass
class Issue:
    """Findings accumulate here, one per (check, line, tensor, cause), with a count and a few examples."""

    check: str
    message: str
    kernel: str
    file: str
    line: int
    tensor: ArgView | None
    masked: bool | None
    count: int = 0
    pids: list[tuple[int, ...]] = field(default_factory=list)
    indices: list = field(default_factory=list)
    _by_pid: dict = field(default_factory=dict, repr=False)  # program -> its first examples, in its own order

    def add(self, count: int, pid: tuple[int, ...], examples: list) -> None:
        """Count lanes; keep the examples of the first programs in the serial engine's order (pid order), each
        program's in its own order, an element once: the same examples whichever engine ran the programs, in
        whatever order their accesses came (which element an earlier program also reached decides nothing)."""
        self.count += count
        if pid not in self.pids:
            self.pids = sorted(self.pids + [pid])[:MAX_EXAMPLES]
        own = self._by_pid.setdefault(pid, [])
        for e in examples:
            if len(own) < MAX_EXAMPLES and not any(e == x for x in own):
                own.append(e)
        # The first MAX_EXAMPLES distinct examples in (program, its order); later programs' cannot count any more
        # (an earlier program's list only grows), so they are let go.
        kept: list = []
        for p in sorted(self._by_pid):
            if len(kept) >= MAX_EXAMPLES:
                del self._by_pid[p]
                continue
            kept.extend(e for e in self._by_pid[p] if not any(e == x for x in kept))
        self.indices = kept[:MAX_EXAMPLES]

    def copy(self) -> Issue:
        return replace(self, pids=list(self.pids), indices=list(self.indices),
                       _by_pid={p: list(v) for p, v in self._by_pid.items()})

    def finding(self) -> Finding:
        t = self.tensor
        return Finding(
            check=self.check, message=self.message, kernel=self.kernel, file=self.file, line=self.line,
            pids=self.pids, tensor=t.name if t else "",
            tensor_shape=tuple(t.tensor.shape) if t else (), tensor_strides=tuple(t.tensor.stride()) if t else (),
            indices=self.indices, masked=self.masked, count=self.count)
