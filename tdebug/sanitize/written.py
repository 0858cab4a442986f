"""Written-ness tracked, not guessed: per torch.empty allocation, which bytes a kernel store or atomic or a torch op
has written, kept across launches, so `uninit` does not depend on the values written; and reads by torch ops of
elements of a kernel's output that nothing wrote (the next layer of a model reading rows a kernel skipped).

The marks live in catalogue.poison.ALLOCATIONS (per byte, reset when an allocation is made). Kernel stores mark
them through the launch's shadow (memory.py); torch ops through a TorchDispatchMode (TorchWrites) that marks
every argument an op mutates (in place, out=, copies) and checks every tensor argument it reads. An element is
unwritten when it is not marked AND still holds the poison pattern: memory written by something no hook sees
(numpy through .numpy(), a C extension) still counts as written by its value, as before.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from ..catalogue import dynamo
from ..catalogue.poison import ALLOCATIONS, poison_mask, storage_poison_mask
from ..report import Finding

MAX_EXAMPLES = 4


def marks_by_element(storage_ptr: int, elsize: int) -> np.ndarray | None:
    """The allocation's written marks as rows of `elsize` bytes (one row per element; None: not tracked).
    A view: setting rows marks the bytes."""
    marks = ALLOCATIONS.written(storage_ptr)
    if marks is None:
        return None
    n = marks.size // elsize
    return marks[: n * elsize].reshape(n, elsize)


def element_index(t: torch.Tensor) -> torch.Tensor:
    """For each element of the view, its index among the storage's elements of t's size."""
    n = t.untyped_storage().nbytes() // t.element_size()
    return torch.arange(n, device="cpu").as_strided(t.shape, t.stride(), t.storage_offset())


def unwritten_mask(t: torch.Tensor, storage_ptr: int | None = None) -> torch.Tensor:
    """Per element of t (a view of a tracked allocation): never written by anything tdebug saw, and still
    holding the poison pattern. storage_ptr: the allocation's key when t is a host copy of it."""
    ptr = t.untyped_storage().data_ptr() if storage_ptr is None else storage_ptr
    if ALLOCATIONS.fully_written(ptr):
        return torch.zeros(t.shape, dtype=torch.bool, device="cpu")
    cold = poison_mask(t).cpu()
    if not cold.any():
        return cold
    rows = marks_by_element(ptr, t.element_size())
    if rows is None:
        return cold
    written = torch.from_numpy(rows.all(axis=1))
    return cold & ~written[element_index(t)]


def storage_unwritten(t: torch.Tensor, storage_ptr: int) -> np.ndarray:
    """unwritten_mask of every element of t's storage (as t's dtype), without a torch op on a CPU tensor.
    storage_ptr: the allocation's key (the caller's storage when t is a host copy of it)."""
    if ALLOCATIONS.fully_written(storage_ptr):
        return np.zeros(t.untyped_storage().nbytes() // t.element_size(), dtype=bool)
    cold = storage_poison_mask(t)
    if not cold.any():
        return cold
    rows = marks_by_element(storage_ptr, t.element_size())
    if rows is None:
        return cold
    return cold & ~rows[: cold.size].all(axis=1)


def _mark(t: torch.Tensor) -> None:
    ptr = t.untyped_storage().data_ptr()
    rows = marks_by_element(ptr, t.element_size())
    if rows is None or t.numel() == 0:
        return
    if t.is_contiguous():
        start = t.storage_offset()
        rows[start:start + t.numel()] = True
    else:
        rows[element_index(t).reshape(-1).numpy()] = True


class Outputs:
    """Tracked allocations some kernel stored to: storage -> (kernel, argument name)."""

    def __init__(self) -> None:
        self.by_storage: dict[int, tuple[str, str]] = {}

    def stored(self, storage: int, kernel: str, argument: str) -> None:
        """`kernel` stored to the tracked allocation `storage` through its argument `argument`."""
        self.by_storage[storage] = (kernel, argument)


OUTPUTS = Outputs()


def _library_dirs() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(directories an op's caller is looked through: torch, the standard library;
    directories whose ops are not the user's: tdebug, Triton)."""
    import triton

    torch_dir = os.path.dirname(torch.__file__) + os.sep
    std = os.path.dirname(os.__file__) + os.sep
    tdebug_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    triton_dir = os.path.dirname(triton.__file__) + os.sep
    return (torch_dir, std), (tdebug_dir, triton_dir)


class TorchWrites(TorchDispatchMode):
    """Marks what torch ops write into tracked allocations; reports reads of never-written elements of
    kernel outputs. Ops that tdebug or Triton's interpreter run (host copies, poisoning) are not the user's."""

    # A factory's (torch.empty's) fresh tensor is nothing to it: when it is the only mode, the poisoner calls them
    # past it (catalogue/poison.py; an empty_like reads no element, an out= is poisoned and its marks reset after).
    passes_factories = True

    def __init__(self, check_reads: bool = True) -> None:
        super().__init__()
        self.check_reads = check_reads
        self.findings: list[Finding] = []
        self._seen: set[tuple] = set()
        self._through, self._ours = _library_dirs()
        self._writes: dict = {}  # op -> (index, name) of the schema arguments it writes (in place, out=)
        self._views: dict = {}  # op -> whether it is a view op

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        """Not wrapped in torch._dynamo.disable (torch's default for modes): that imports dynamo, ~5 s, at the
        first op of every run; this mode is made eager once dynamo is loaded instead (_eager_under_compile)."""
        return False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        tracked = self._tracked(args, kwargs)
        if tracked and self._from_user():
            written = self._written_args(func, args, kwargs)
            if self.check_reads and not self._is_view(func):
                for t in tracked:
                    if not any(t is w for w in written):
                        self._check_read(func, t)
            out = func(*args, **kwargs)
            for t in written:
                if isinstance(t, torch.Tensor):
                    _mark(t)
            return out
        return func(*args, **kwargs)

    # -- what an op touches -----------------------------------------------------------------------------
    @staticmethod
    def _tracked(args, kwargs) -> list[torch.Tensor]:
        found = []
        for value in list(args) + list(kwargs.values()):
            for t in value if isinstance(value, (list, tuple)) else (value,):
                if isinstance(t, torch.Tensor):
                    try:
                        ptr = t.untyped_storage().data_ptr()
                    except (RuntimeError, NotImplementedError):  # fake or functional tensors (torch.compile)
                        continue
                    if ALLOCATIONS.tracks(ptr):
                        found.append(t)
        return found

    def _written_args(self, func, args, kwargs) -> list[torch.Tensor]:
        names = self._writes.get(func)
        if names is None:
            names = self._writes[func] = [(i, a.name) for i, a in enumerate(func._schema.arguments)
                                          if a.alias_info is not None and a.alias_info.is_write]
        out = []
        for index, name in names:
            value = kwargs[name] if name in kwargs else (args[index] if index < len(args) else None)
            for t in value if isinstance(value, (list, tuple)) else (value,):
                if isinstance(t, torch.Tensor):
                    out.append(t)
        return out

    def _is_view(self, func) -> bool:
        """A view or metadata op (its result aliases an argument it does not write): reads no element."""
        view = self._views.get(func)
        if view is None:
            view = self._views[func] = any(r.alias_info is not None and not r.alias_info.is_write
                                           for r in func._schema.returns)
        return view

    def _from_user(self) -> bool:
        try:
            frame = sys._getframe(2)
        except ValueError:  # a shallow stack (autograd's device thread running a backward): not the user's op
            return False
        while frame is not None and frame.f_code.co_filename.startswith(self._through):
            frame = frame.f_back
        return frame is not None and not frame.f_code.co_filename.startswith(self._ours)

    # -- reads of what nothing wrote ------------------------------------------------------------------
    def _check_read(self, func, t: torch.Tensor) -> None:
        ptr = t.untyped_storage().data_ptr()
        output = OUTPUTS.by_storage.get(ptr)
        if output is None or t.numel() == 0:
            return
        cold = unwritten_mask(t)
        n = int(cold.sum())
        if not n:
            return
        frame = self._user_frame()
        where = (frame.f_code.co_filename, frame.f_lineno) if frame is not None else ("", 0)
        op = func.overloadpacket.__name__ if hasattr(func, "overloadpacket") else str(func)
        key = (op, ptr, where)
        if key in self._seen:
            return
        self._seen.add(key)
        kernel, name = output
        idx = cold.nonzero()
        self.findings.append(Finding(
            check="uninit", kernel=kernel, file=where[0], line=where[1], tensor=name,
            tensor_shape=tuple(t.shape), tensor_strides=tuple(t.stride()), count=n,
            message=f"torch op {op} reads {n} of {t.numel()} elements of '{name}' (shape {tuple(t.shape)}) that no "
                    f"kernel and no torch op wrote: '{name}' is an output of kernel {kernel}, which left them "
                    "unwritten (allocated with torch.empty)",
            indices=[tuple(i) for i in idx[:MAX_EXAMPLES].tolist()]))

    def _user_frame(self):
        try:
            frame = sys._getframe(3)
        except ValueError:
            return None
        while frame is not None and frame.f_code.co_filename.startswith(self._through + self._ours):
            frame = frame.f_back
        return frame

    def take_findings(self) -> list[Finding]:
        found, self.findings = self.findings, []
        self._seen.clear()
        return found


def _eager_under_compile() -> None:
    """Once torch.compile's tracer is loaded, the mode runs eagerly, never traced into a compiled region: its
    frame walking (sys._getframe) would be a graph break there, and dynamo's warning about it noise to the user."""
    TorchWrites.__torch_dispatch__ = dynamo.eager(TorchWrites.__dict__["__torch_dispatch__"])


dynamo.when_loaded(_eager_under_compile)
