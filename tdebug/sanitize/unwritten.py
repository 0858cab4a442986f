"""Unwritten outputs, made precise: an element no program wrote is reported only where the kernel's own
store masks admit it, i.e. where a program just past the grid would have written it.

After a launch that leaves elements of a torch.empty tensor it stores to unwritten, the programs just past
the grid are run again as probes ("virtual programs": pid = grid, grid+1, ... along each axis in use),
with every store and atomic turned off and each access checked. A virtual program counts only when it
stays inside every tensor and raises nothing: one that reads past its inputs (a row beyond M) shows that
the grid, not a mask, bounds the kernel, so the elements it would write are a scratch buffer's unused
part, not a bug. Its masked stores to still-unwritten elements are the evidence: the grid is too small
for the block size. Unmasked stores are no evidence (they rely on the grid for their bounds).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch

from ..catalogue.poison import ALLOCATIONS
from ..interpreter.frames import KernelError
from ..report import Finding
from .issues import MAX_EXAMPLES
from .live import PointerReach
from .locks import LockOrder
from .memory import LaunchChecker
from .shadow import ArgView, Shadow
from .written import storage_unwritten, unwritten_mask

PROBES_PER_AXIS = 64  # virtual programs tried along one grid axis
MISSES_BEFORE_STOP = 2  # consecutive virtual programs that add no evidence end an axis
PROBE_SECONDS = 10.0  # per launch
ACCESSES_PER_PROBE = 50_000  # a virtual program spinning on a lock that nothing releases is cut here


class ProbeAbort(KernelError, Exception):
    """A virtual program left the kernel's domain (out of bounds) or ran too long."""


@dataclass
class Evidence:
    """Elements of one storage that a virtual program's masked stores admit, and who showed it."""

    kernel: str
    config: str
    grid: tuple[int, ...]
    pid: tuple[int, ...]
    store: tuple[str, int]
    admitted: np.ndarray  # bool per storage element
    exhaustive: bool = True  # False: probing stopped while still finding (report every unwritten element)


class ProbeChecker(LaunchChecker):
    """Bounds-checks a virtual program's accesses and records where its masked stores would write."""

    dense_rows = False  # every store goes through _shadow_update (below)

    def __init__(self, kernel: str, views: list[ArgView]) -> None:
        super().__init__(kernel, views, frozenset({"bounds"}), order=LockOrder(), reach=PointerReach(views))
        self.admitted: dict[int, np.ndarray] = {}
        self.stores: dict[int, tuple[str, int]] = {}
        self.accesses = 0
        self.masked = True

    def access(self, kind, ptrs, mask, pid, linear_pid, where, how="", pid_of=None, origin=None):
        self.accesses += 1
        if self.accesses > ACCESSES_PER_PROBE:
            raise ProbeAbort("too many accesses")
        super().access(kind, ptrs, mask, pid, linear_pid, where, how, pid_of, origin)
        if self.issues:
            raise ProbeAbort("out of bounds")
        return np.zeros(ptrs.shape, bool) if kind != "load" else None

    def _shadow_update(self, kind: str, s: Shadow, elems: np.ndarray, pid, linear_pid, where) -> None:
        if kind == "store" and self.masked:
            seen = self.admitted.setdefault(s.ptr, np.zeros(s.nbytes // s.elsize, bool))
            seen[elems] = True
            self.stores.setdefault(s.ptr, where)


def unwritten_elements(shadows: list[Shadow]) -> dict[int, np.ndarray]:
    """Per storage a launch stored to and that came from torch.empty: elements still holding the poison."""
    out = {}
    for s in shadows:
        if not s.stored or not any(v.was_empty for v in s.views) or ALLOCATIONS.fully_written(s.views[0].home_ptr):
            continue
        cold = storage_unwritten(s.views[0].tensor, s.views[0].home_ptr)
        if cold.any():
            out[s.ptr] = cold
    return out


def virtual_pids(grid: tuple[int, int, int]):
    """Axis by axis, the programs just past the grid (other coordinates 0); axes 1 and 2 only when used."""
    for axis in range(3):
        if axis and grid[axis] <= 1:
            continue
        yield axis, [tuple(grid[a] + j if a == axis else 0 for a in range(3)) for j in range(PROBES_PER_AXIS)]


def probe(run_program, kernel: str, config: str, views: list[ArgView], grid: tuple[int, int, int],
          unwritten: dict[int, np.ndarray]) -> dict[int, Evidence]:
    """Run virtual programs past the grid; run_program(pid, checker) runs one and raises on failure."""
    found: dict[int, Evidence] = {}
    deadline = time.monotonic() + PROBE_SECONDS
    for _axis, pids in virtual_pids(grid):
        misses = 0
        for n, pid in enumerate(pids):
            if time.monotonic() > deadline:
                _mark_partial(found)
                return found
            checker = ProbeChecker(kernel, views)
            try:
                run_program(pid, checker)
            except Exception:  # noqa: BLE001 - out of bounds, an assert, a spin: not a program of this kernel
                break
            new = False
            for ptr, admitted in checker.admitted.items():
                cold = unwritten.get(ptr)
                hit = admitted & cold if cold is not None else None
                if hit is None or not hit.any():
                    continue
                ev = found.get(ptr)
                if ev is None:
                    ev = found[ptr] = Evidence(kernel, config, tuple(grid), pid, checker.stores[ptr],
                                               np.zeros_like(cold))
                new |= bool((hit & ~ev.admitted).any())
                ev.admitted |= hit
            misses = 0 if new else misses + 1
            if misses >= MISSES_BEFORE_STOP:
                break
            if n == len(pids) - 1:
                _mark_partial(found)
    return found


def _mark_partial(found: dict[int, Evidence]) -> None:
    for ev in found.values():
        ev.exhaustive = False


def _pid_text(pid: tuple[int, ...]) -> str:
    p = list(pid)
    while len(p) > 1 and p[-1] == 0:
        p.pop()
    return "(" + ",".join(map(str, p)) + ")"


def grid_text(grid: tuple[int, ...]) -> str:
    g = list(grid)
    while len(g) > 1 and g[-1] == 1:
        g.pop()
    return "(" + ", ".join(map(str, g)) + ("," if len(g) == 1 else "") + ")"


def unwritten_findings(view: ArgView, evidence: Evidence | None) -> list[Finding]:
    """Elements of a stored-to view that still hold the allocation poison and that the kernel's masks admit."""
    t = view.tensor
    if evidence is None or not view.was_empty or t.numel() == 0:
        return []
    cold = unwritten_mask(view.home if view.home is not None else t).cpu()  # the caller's tensor: every launch
    if not evidence.exhaustive:
        report = cold
    else:
        elements = torch.arange(view.storage_bytes // view.elsize, device="cpu")
        index = elements.as_strided(t.shape, t.stride(), t.storage_offset())
        report = cold & torch.from_numpy(evidence.admitted)[index]
    n = int(report.sum())
    if not n:
        return []
    idx = report.nonzero()
    lo, hi = idx.min(0).values.tolist(), idx.max(0).values.tolist()
    region = " x ".join(f"[{a}..{b}]" for a, b in zip(lo, hi))
    grid = grid_text(evidence.grid)
    file, line = evidence.store
    return [Finding(
        check="unwritten", kernel=evidence.kernel, file=file, line=line, tensor=view.name,
        tensor_shape=tuple(t.shape), tensor_strides=tuple(t.stride()), config=evidence.config,
        message=f"{n} of {t.numel()} elements of output '{view.name}' were written by no program (region "
                f"{region}), though this store's mask admits them: program {_pid_text(evidence.pid)}, just past "
                f"the grid {grid}, would write them; the grid is too small for the block size",
        indices=[tuple(i) for i in idx[:MAX_EXAMPLES].tolist()], count=n)]
