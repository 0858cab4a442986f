"""Guard bands: a GPU check for out-of-bounds writes and unwritten outputs that needs no compute-sanitizer.

Each tensor argument of a catalogue launch is copied into a larger buffer whose margins (and, for a
strided view, the gaps between its elements) hold a sentinel byte; every torch.empty / zeros the
launcher allocates gets the same margins, and empty outputs are poisoned. After the launch:
- a margin byte that changed is an out-of-bounds write: which tensor, which side, how far;
- a gap byte that changed is a write between the elements of a strided view (a stride trap);
- a returned output element that still holds the poison was written by no program.
Cheap: one copy per argument and one compare per buffer. It cannot see reads, and a write that lands
further away than the margin, or in another tensor, goes unseen (compute-sanitizer's memcheck sees both).
The view keeps its strides and its address's misalignment, so the kernel is specialised as before.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch

from ..catalogue.poison import keep_default_device, poison_, poison_mask
from ..report import Finding

SENTINEL = 0x5A  # margin byte; differs from the poison pattern (0xA5 / signalling NaN) used inside outputs
MIN_MARGIN_BYTES = 64 * 1024
MAX_MARGIN_BYTES = 16 * 1024 * 1024
ALIGN = 256  # keep data_ptr % ALIGN as it was: Triton specialises kernels on 16-byte pointer alignment
MAX_EXAMPLES = 4

_ORIGINALS = {"empty": torch.empty, "empty_like": torch.empty_like, "empty_strided": torch.empty_strided,
              "zeros": torch.zeros, "zeros_like": torch.zeros_like}


@dataclass
class Guarded:
    """One tensor inside its guarded buffer."""

    name: str
    view: torch.Tensor
    buffer: torch.Tensor  # 1-D, the view's dtype: [front margin | span | back margin]
    front: int  # elements before the span
    span: int  # elements from the view's first to its last element
    back: int  # elements after the span
    covered: torch.Tensor | None  # bool over the span: True where an element of the view lies (None: dense)
    empty: bool = False  # allocated by torch.empty* (poisoned): unwritten elements are reported
    site: str = ""  # where the launcher allocated it


def _span(t: torch.Tensor) -> int:
    return 1 + sum((n - 1) * s for n, s in zip(t.shape, t.stride()))


def _overlaps(t: torch.Tensor) -> bool:
    """Some elements share memory (an expanded view): it cannot be copied into, so it is left unguarded."""
    dims = sorted((s, n) for n, s in zip(t.shape, t.stride()) if n > 1)
    reach = 1
    for stride, n in dims:
        if stride < reach:
            return True
        reach = stride * n
    return False


def guardable(t) -> bool:
    return isinstance(t, torch.Tensor) and t.numel() > 0 and t.layout == torch.strided and not _overlaps(t)


def margin_elements(nbytes: int, esize: int) -> int:
    margin = min(max(nbytes, MIN_MARGIN_BYTES), MAX_MARGIN_BYTES)
    margin = (margin + ALIGN - 1) // ALIGN * ALIGN
    return margin // esize


def guard_tensor(t: torch.Tensor, name: str, copy: bool = True) -> Guarded:
    """A copy of t (same shape, strides, dtype, device and address misalignment) inside sentinel margins."""
    esize = t.element_size()
    span = _span(t)
    margin = margin_elements(span * esize, esize)
    buffer = _ORIGINALS["empty"](margin + ALIGN // esize + span + margin, dtype=t.dtype, device=t.device)
    shift = (t.data_ptr() - buffer.data_ptr() - margin * esize) % ALIGN
    front = margin + shift // esize
    buffer = buffer[: front + span + margin]
    buffer.view(torch.uint8).fill_(SENTINEL)
    view = buffer.as_strided(t.shape, t.stride(), front)
    if copy:
        view.copy_(t)
    covered = None
    if span != t.numel():
        covered = torch.zeros(span, dtype=torch.bool, device=t.device)
        offsets = torch.arange(span, device=t.device).as_strided(t.shape, t.stride())
        covered[offsets.reshape(-1)] = True
    return Guarded(name, view, buffer, front, span, margin, covered)


def _changed(region: torch.Tensor, esize: int) -> torch.Tensor:
    """Indices (elements) of region whose bytes are not all the sentinel."""
    if region.numel() == 0:
        return torch.zeros(0, dtype=torch.long, device="cpu")
    raw = region.view(torch.uint8).reshape(-1, esize)
    return (raw != SENTINEL).any(dim=1).nonzero().reshape(-1).cpu()


def _range(near: int, far: int) -> str:
    return str(near) if near == far else f"{near} to {far}"


def _describe(g: Guarded) -> str:
    return f"'{g.name}'" + (f" (allocated at {g.site})" if g.site else "")


def _write_finding(g: Guarded, message: str, offsets: list[int], count: int, side: str,
                   distances: tuple[int, int]) -> Finding:
    return Finding(
        check="bounds", source="guard", tensor=g.name, tensor_shape=tuple(g.view.shape),
        tensor_strides=tuple(g.view.stride()), message=message, count=count, masked=None,
        indices=[f"element offset {o} from '{g.name}'[0]" for o in offsets[:MAX_EXAMPLES]],
        extra={"access": "write", "side": side, "nearest": distances[0], "farthest": distances[1],
               "span": g.span, "margin": g.back})


def check_guarded(g: Guarded) -> list[Finding]:
    """Out-of-bounds writes into g's margins and gaps, as findings (empty when the margins are intact)."""
    esize = g.view.element_size()
    findings = []
    before = _changed(g.buffer[: g.front], esize)
    if before.numel():
        offsets = (before - g.front).tolist()  # negative: elements before the view's first element
        near, far = -max(offsets), -min(offsets)
        findings.append(_write_finding(
            g, f"store before the start of {_describe(g)}: {len(offsets)} element(s) written "
               f"{_range(near, far)} element(s) before its first element",
            sorted(offsets, reverse=True), len(offsets), "before", (near, far)))
    after = _changed(g.buffer[g.front + g.span:], esize)
    if after.numel():
        offsets = (after + g.span).tolist()  # element offsets from the view's first element
        near, far = min(offsets) - g.span + 1, max(offsets) - g.span + 1
        findings.append(_write_finding(
            g, f"store past the end of {_describe(g)}: {len(offsets)} element(s) written "
               f"{_range(near, far)} element(s) past its last element (it spans {g.span} elements)",
            offsets, len(offsets), "after", (near, far)))
    if g.covered is not None:
        span = g.buffer[g.front: g.front + g.span]
        gap = ~g.covered
        raw = span.view(torch.uint8).reshape(-1, esize)
        hit = ((raw != SENTINEL).any(dim=1) & gap).nonzero().reshape(-1).cpu().tolist()
        if hit:
            findings.append(_write_finding(
                g, f"store between the elements of {_describe(g)} (inside its storage span, outside the view: "
                   f"shape {list(g.view.shape)} strides {list(g.view.stride())}); {len(hit)} element(s) written",
                hit, len(hit), "inside", (0, 0)))
    return findings


def _argument_names(launch: Callable, n: int) -> list[str]:
    try:
        params = list(inspect.signature(launch).parameters.values())
    except (TypeError, ValueError):
        params = []
    names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if params and params[-1].kind == inspect.Parameter.VAR_POSITIONAL:
        names += [f"{params[-1].name}[{i}]" for i in range(n)]
    return [names[i] if i < len(names) else f"arg{i}" for i in range(n)]


def _allocation_site() -> str:
    """file:line of the innermost caller outside torch and tdebug (the launcher's torch.empty line)."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    torch_dir = os.path.dirname(torch.__file__) + os.sep
    for fs in reversed(traceback.extract_stack()[:-2]):
        if not fs.filename.startswith((here, torch_dir, "<")) and "contextlib" not in fs.filename:
            return f"{fs.filename}:{fs.lineno}"
    return ""


class GuardSession:
    """Guard bands for one case: wrap_inputs before the launch, outputs() around it, check(out) after."""

    def __init__(self) -> None:
        self.guarded: list[Guarded] = []
        self._allocations = 0

    def wrap_inputs(self, launch: Callable, inputs: tuple) -> tuple:
        names = _argument_names(launch, len(inputs))
        wrapped = []
        for name, x in zip(names, inputs):
            if guardable(x):
                g = guard_tensor(x, name)
                self.guarded.append(g)
                x = g.view
            wrapped.append(x)
        return tuple(wrapped)

    def _guard_allocation(self, t: torch.Tensor, empty: bool) -> torch.Tensor:
        if not guardable(t):
            return t
        self._allocations += 1
        g = guard_tensor(t, f"allocation #{self._allocations}", copy=not empty)
        g.empty, g.site = empty, _allocation_site()
        if empty:
            poison_(g.view)
        self.guarded.append(g)
        return g.view

    @contextlib.contextmanager
    def outputs(self) -> Iterator[None]:
        """Inside, torch.empty / empty_like / empty_strided / zeros / zeros_like / Tensor.new_empty return
        guarded tensors (empty ones poisoned)."""
        current = {name: getattr(torch, name) for name in _ORIGINALS}
        current_new_empty = torch.Tensor.new_empty
        keep_default_device()

        def wrap(fn, empty: bool):
            def guarded(*args, **kwargs):
                return self._guard_allocation(fn(*args, **kwargs), empty)

            return guarded

        for name, fn in current.items():
            setattr(torch, name, wrap(fn, name.startswith("empty")))
        torch.Tensor.new_empty = wrap(current_new_empty, True)
        try:
            yield
        finally:
            for name, fn in current.items():
                setattr(torch, name, fn)
            torch.Tensor.new_empty = current_new_empty

    def _name_outputs(self, out) -> list[Guarded]:
        outs = out if isinstance(out, (tuple, list)) else (out,)
        returned = []
        for i, o in enumerate(outs):
            if not isinstance(o, torch.Tensor):
                continue
            for g in self.guarded:
                if g.empty and g.view.data_ptr() == o.data_ptr() and g.name.startswith("allocation"):
                    g.name = "output" if len(outs) == 1 else f"output[{i}]"
                    returned.append(g)
        return returned

    def check(self, out) -> list[Finding]:
        """Findings after the launch (the caller has synchronised the device)."""
        returned = self._name_outputs(out)
        findings: list[Finding] = []
        for g in self.guarded:
            findings += check_guarded(g)
        for g in returned:
            mask = poison_mask(g.view)
            n = int(mask.sum())
            if n:
                first = [tuple(i) for i in mask.nonzero()[:MAX_EXAMPLES].tolist()]
                findings.append(Finding(
                    check="unwritten", source="guard", tensor=g.name, tensor_shape=tuple(g.view.shape),
                    tensor_strides=tuple(g.view.stride()), count=n, indices=[list(i) for i in first],
                    message=f"{n} of {g.view.numel()} elements of '{g.name}' were written by no program "
                            "(they still hold the poison); is the grid too small for the block size?"))
        return findings
