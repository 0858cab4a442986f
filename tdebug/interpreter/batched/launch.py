"""The kernel call running now: its `Launch` (kernel, arguments, tensors, grid, the batch running and the memory
op in flight)."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..hooks.memory_events import Access
    from .batch_memory import MemoryUndo
    from .grid_loop import Stats
    from .program_axis import Batch


class Launch:
    """One kernel call, made once by the innermost launch wrapper (grid_loop._call) and reachable by every
    listener through current_launch(): the kernel, its arguments, the tensors found once, the grid, the batch
    running now (`batch`: set by the engine, grid_loop and predicated_loops) and its memory undo, the memory op
    in flight (`access`: set by memory_events), the statistics. A wrapper or listener reads the launch here
    instead of binding the call and walking its arguments itself."""

    __slots__ = ("executor", "args_dev", "kwargs", "args", "grid", "_device_storages", "_smallest_element",
                 "storages", "_parts", "batch", "access", "recording")

    def __init__(self, executor_obj, args_dev: tuple, kwargs: dict, outer: Launch | None = None) -> None:
        self.executor = executor_obj  # Triton's GridExecutor
        self.args_dev, self.kwargs = args_dev, kwargs  # the call's arguments, as the kernel was called
        self.args: dict | None = None  # bound by name, as the kernel runs them (batched engine: set before its loop)
        self.grid: tuple[int, int, int] | None = None  # set when the grid is known (batched engine: before its loop)
        self._device_storages: list | None = None
        self._smallest_element = 0
        self.storages: list | None = None  # the host copies' storages the batched engine undoes
        self._parts: dict[str, Any] | None = None  # owner -> its part of this launch's state (part())
        # The batch of programs running now (None: none, or the serial engine). A launch made while another's
        # batch runs (a kernel called from a kernel's Python) runs inside that batch.
        self.batch: Batch | None = None if outer is None else outer.batch
        self.access: Access | None = None  # the memory op running now, while its listeners and the op run
        # While the batch runs that launch_replay.py records for a later launch of the same key: its Recording
        self.recording: Any = None

    @property
    def kernel(self):
        """The kernel's Python function."""
        return self.executor.fn

    @property
    def name(self) -> str:
        return getattr(self.executor.fn, "__name__", "kernel")

    def device_storages(self) -> list:
        """The distinct storages of the call's tensor arguments (found once per launch)."""
        if self._device_storages is None:
            found, self._smallest_element = _tensor_storages(list(self.args_dev) + list(self.kwargs.values()))
            self._device_storages = list(found.values())
        return self._device_storages

    def own_host_copies(self, args_hst: list, kwargs_hst: dict) -> bool:
        """Is every argument its own host copy (a CPU tensor's: grid_loop._cpu_host_args), no other tensor among the
        call's keyword arguments?"""
        kwargs = self.kwargs
        return all(map(operator.is_, args_hst, self.args_dev)) \
            and all(kwargs.get(k) is v for k, v in kwargs_hst.items()) \
            and all(k in kwargs_hst or not hasattr(v, "data_ptr") for k, v in kwargs.items())

    def smallest_element(self) -> int:
        """The smallest element size in bytes among the call's tensor arguments (0: no tensor)."""
        self.device_storages()
        return self._smallest_element

    def part(self, owner: str, make: Callable[[], Any]) -> Any:
        """What `owner` (a layer) keeps for this launch only, made by make() at its first use."""
        parts = self._parts
        if parts is None:
            parts = self._parts = {}
        found = parts.get(owner)
        if found is None:
            found = parts[owner] = make()
        return found

    @property
    def memory(self) -> MemoryUndo | None:
        """The running batch's memory undo (None: no batch runs)."""
        batch = self.batch
        return None if batch is None else batch.memory

    @property
    def stats(self) -> Stats:
        """The engine's statistics (grid_loop.STATS)."""
        from .grid_loop import STATS

        return STATS


_LAUNCH: Launch | None = None  # the launch running now (set only through enter() and leave(), by grid_loop)


def current_launch() -> Launch | None:
    """The kernel call running now (None: outside a launch)."""
    return _LAUNCH


def current_batch() -> Batch | None:
    """The batch of programs running now (None: none, or the serial engine)."""
    launch = _LAUNCH
    return None if launch is None else launch.batch


def enter(launch: Launch) -> Launch | None:
    """`launch` runs from now on; returns the launch it runs inside (None: none), for leave()."""
    global _LAUNCH
    outer, _LAUNCH = _LAUNCH, launch
    return outer


def leave(outer: Launch | None) -> None:
    """The running launch ended: `outer` (what enter() returned) runs again."""
    global _LAUNCH
    _LAUNCH = outer


def storages(values) -> list:
    """The distinct non-empty storages of the tensors among `values` (tuples and lists walked, a
    TensorWrapper's or TensorDescriptor's base taken)."""
    return list(_tensor_storages(values)[0].values())


def _tensor_storages(values) -> tuple[dict[int, Any], int]:
    """storages() by address, and the smallest element size of the tensors found (0: none)."""
    import torch

    seen: dict[int, Any] = {}
    sizes: list[int] = []
    for v in values:
        _visit(v, torch.Tensor, seen, sizes)
    return seen, min(sizes, default=0)


def _visit(v, tensor: type, seen: dict[int, Any], sizes: list[int]) -> None:
    """The storages of the tensors in an argument (a tensor, a wrapper, a descriptor, a list or tuple of them)
    into `seen`, their element sizes into `sizes`. (A function of the module: a recursive closure is a cycle.)"""
    if type(v) is not tensor:
        if type(v) in (int, float, bool) or v is None:
            return
        if isinstance(v, (list, tuple)):
            for x in v:
                _visit(x, tensor, seen, sizes)
            return
        if not isinstance(v, tensor):  # (a subclass's .base is its view's base)
            v = getattr(v, "base", v)  # TensorWrapper / TensorDescriptor
        if not hasattr(v, "untyped_storage"):
            return
    storage = v.untyped_storage()
    if storage.nbytes():
        seen.setdefault(storage.data_ptr(), storage)
        sizes.append(v.element_size())
