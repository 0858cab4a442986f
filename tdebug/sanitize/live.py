"""Tensors a kernel reaches through pointers it built from integers (pointer tables), found among the
live tensors of the process.

Grouped GEMM and MoE kernels keep the base addresses of several tensors in an int64 tensor
(`torch.tensor([t.data_ptr() for t in group])`), load one and cast it with `.to(tl.pointer_type(...))`.
Those tensors are no arguments of the launch. An access outside every argument is in bounds when it
falls inside the storage of a tensor alive in the process *and* the kernel cast an integer into a
pointer into that storage (so a missing mask that runs off an argument into a neighbouring allocation
is still out of bounds). That tensor is then checked like an argument (uninitialised reads, races,
unwritten elements) under the name the launching code holds it by (`group_C[1]`). A pointer into
freed or never-allocated memory stays a finding, naming the table entry it came from.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import numpy as np
import torch

from ..catalogue.poison import ALLOCATIONS
from ..interpreter.frames import library_dirs
from ..interpreter.semantics import device_tables
from ..interpreter.versions import patcher
from .shadow import ArgView

patch = patcher("live")

MAX_VIEWS = 16  # views of one storage kept as its shadow's views; beyond that, the whole storage
MAX_GAP = 1 << 32  # an address this far past a pointer built from an integer is not reached from it


class PointerReach:
    """One launch: the pointers it built from integers, and the live storages they point into."""

    def __init__(self, args: list[ArgView]) -> None:
        self.args = args
        self._noted: list[np.ndarray] = []
        self._bases: np.ndarray | None = None
        self._live: list[tuple[int, int, list[torch.Tensor]]] | None = None
        self._starts = self._ends = np.zeros(0, dtype=np.uint64)

    def note(self, values: np.ndarray) -> None:
        """Pointers the kernel made from integers (interpreter's create_int_to_ptr)."""
        self._noted.append(np.unique(np.asarray(values).astype(np.uint64).reshape(-1)))
        self._bases = None

    @property
    def bases(self) -> np.ndarray:
        if self._bases is None:
            noted = self._noted
            self._bases = np.unique(np.concatenate(noted)) if noted else np.zeros(0, dtype=np.uint64)
            self._noted = [self._bases] if noted else []
        return self._bases

    # -- storages reached ---------------------------------------------------------------------------
    def views_for(self, addrs: np.ndarray) -> list[list[ArgView]]:
        """Views of the live storages that hold some of these addresses and that a pointer built from an
        integer points into (one list per storage, as the shadow memory groups them)."""
        bases = self.bases
        if bases.size == 0 or addrs.size == 0:
            return []
        self._scan()
        found = []
        for index in np.unique(self._storage_index(addrs.astype(np.uint64))):
            if index < 0:
                continue
            ptr, nbytes, tensors = self._live[index]
            lo, hi = np.searchsorted(bases, [ptr, ptr + nbytes])
            if hi > lo:
                found.append(_views(ptr, nbytes, tensors))
        return found

    def stale(self, addr: int) -> tuple[str, ArgView | None] | None:
        """Why an address outside every tensor was reached through a pointer built from an integer:
        (what to say, the argument the pointer came from), or None when no such pointer leads there."""
        bases = self.bases
        at = int(np.searchsorted(bases, np.uint64(addr), side="right")) - 1
        if at < 0 or addr - int(bases[at]) > MAX_GAP:
            return None
        base = int(bases[at])
        if any(v.storage_ptr <= base < v.storage_ptr + v.storage_bytes for v in self.args):
            return None  # a pointer into an argument: the argument's own bounds finding says it
        self._scan()
        index = int(self._storage_index(np.array([base], dtype=np.uint64))[0])
        end = base if index < 0 else self._live[index][0] + self._live[index][1]
        if any(_distance(addr, v.storage_ptr, v.storage_ptr + v.storage_bytes) < addr - end for v in self.args):
            return None  # nearer an argument than the pointer: that argument's bounds finding says it
        origin, table = self._origin(base)
        if index >= 0:
            ptr, nbytes, tensors = self._live[index]
            name = _views(ptr, nbytes, tensors)[0].name
            return f"past the end of {name}, reached through the pointer {origin}", table
        return (f"through the pointer {origin}, which points into no live tensor "
                "(freed, or never allocated)", table)

    def _origin(self, base: int) -> tuple[str, ArgView | None]:
        """The table entry a pointer value was loaded from: "'a_ptrs'[1] = 0x7f..."."""
        for v in self.args:
            t = v.tensor
            if t.dtype in (torch.int64, torch.uint64) and t.numel():
                hits = (t.reshape(-1).view(torch.int64) == np.int64(np.uint64(base))).nonzero()
                if hits.numel():
                    index = int(hits[0])
                    place = np.unravel_index(index, tuple(t.shape)) if t.dim() > 1 else (index,)
                    return f"'{v.name}'[{', '.join(str(int(i)) for i in place)}] = 0x{base:x}", v
        return f"0x{base:x}", None

    # -- the process's live tensors ---------------------------------------------------------------------
    def _scan(self) -> None:
        if self._live is not None:
            return
        by_storage: dict[int, tuple[int, list[torch.Tensor]]] = {}
        for t in device_tables.live_device_tensors("cpu"):
            storage = t.untyped_storage()
            ptr, nbytes = storage.data_ptr(), storage.nbytes()
            if ptr and nbytes:
                by_storage.setdefault(ptr, (nbytes, []))[1].append(t)
        self._live = [(ptr, nbytes, tensors) for ptr, (nbytes, tensors) in sorted(by_storage.items())]
        self._starts = np.array([ptr for ptr, _, _ in self._live], dtype=np.uint64)
        self._ends = np.array([ptr + nbytes for ptr, nbytes, _ in self._live], dtype=np.uint64)

    def _storage_index(self, addrs: np.ndarray) -> np.ndarray:
        """Per address, the index of the live storage that holds it, or -1."""
        index = np.searchsorted(self._starts, addrs, side="right").astype(np.int64) - 1
        inside = index >= 0
        inside[inside] = addrs[inside] < self._ends[index[inside]]
        return np.where(inside, index, -1)


def _distance(addr: int, lo: int, hi: int) -> int:
    return lo - addr if addr < lo else max(0, addr - hi + 1)


def _views(ptr: int, nbytes: int, tensors: list[torch.Tensor]) -> list[ArgView]:
    """Shadow views for a live storage: a tensor spanning it whole if there is one, else its views."""
    def covers(t: torch.Tensor) -> bool:
        return t.is_contiguous() and t.storage_offset() == 0 and t.numel() * t.element_size() == nbytes

    tensors = sorted(tensors, key=lambda t: (not covers(t), -t.numel()))
    first = tensors[0]
    if covers(first):
        chosen = [first]
    else:
        chosen = [t for t in tensors if t.element_size() == first.element_size()][:MAX_VIEWS]
        if len(tensors) > MAX_VIEWS:  # too many views to tell apart: the storage as a flat tensor
            chosen = [torch.empty(0, dtype=first.dtype, device=first.device).set_(first.untyped_storage())]
    home = device_tables.home_of(ptr)  # on a GPU: the device tensor this host copy stands for
    home_ptr = home.untyped_storage().data_ptr() if home is not None else ptr
    return [ArgView(tensor_name(t), t, ptr, nbytes, t.element_size(), was_empty=ALLOCATIONS.was_empty(home_ptr),
                    home=home) for t in chosen]


def tensor_name(t: torch.Tensor) -> str:
    """What the launching code calls a tensor (`C`, `group_C[1]`), searched in the user's frames."""
    ptr = t.untyped_storage().data_ptr()
    home = device_tables.home_of(ptr)
    if home is not None:  # a host copy made for a pointer table: named as its device tensor is
        t, ptr = home, home.untyped_storage().data_ptr()
    libs = library_dirs()
    frame = sys._getframe(1)
    while frame is not None:
        if not frame.f_code.co_filename.startswith(libs) and not frame.f_code.co_filename.startswith("<"):
            for name, value in frame.f_locals.items():
                found = _named(name, value, t)
                if found:
                    return found
        frame = frame.f_back
    return f"tensor {list(t.shape)} {str(t.dtype).replace('torch.', '')} at 0x{ptr:x}"


def _named(name: str, value, t: torch.Tensor) -> str | None:
    if isinstance(value, torch.Tensor):
        return name if value is t else None
    if isinstance(value, (list, tuple)) and len(value) <= 4096:
        for i, item in enumerate(value):
            if item is t:
                return f"{name}[{i}]"
    if isinstance(value, dict) and len(value) <= 4096:
        for key, item in value.items():
            if item is t:
                return f"{name}[{key!r}]"
    return None


def install(current: Callable) -> None:
    """Note every pointer the kernel builds from an integer (`int.to(tl.pointer_type(...))`) in the
    running launch's PointerReach (`current()`: the launch's checker, or None between launches)."""
    from triton.runtime import interpreter

    def make(original):
        def create_int_to_ptr(*args, **kwargs):
            out = original(*args, **kwargs)
            checker = current()
            if checker is not None and checker.reach is not None:
                checker.reach.note(np.asarray(out.data))
            return out

        return create_int_to_ptr

    patch(interpreter.interpreter_builder, "create_int_to_ptr", make)
