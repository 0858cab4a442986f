"""Pointer tables on a GPU: device addresses in a launch's int64 arguments map to the interpreter's host copies.

The interpreter runs a launch on CUDA tensors by copying each tensor argument's storage to the host
(GridExecutor._init_args_hst) and back afterwards (_restore_args_dev). A pointer table (grouped GEMM, MoE:
`torch.tensor([t.data_ptr() ...], device="cuda")`) is copied too, but its entries still hold *device*
addresses, which the interpreter would dereference in host memory. Here, per launch: every int64/uint64
argument's entries that fall inside the storage of a live tensor on the arguments' device are rewritten, in
the launch's host copy of the table only, to the same offset in a host copy of that storage (the argument's own
host copy when the storage is an argument's, else a copy made here and kept alive for the launch, so the
sanitizer finds it among the process's live tensors, named as the launching code names the device tensor).
After the launch the table's host copy gets its device addresses back before Triton copies it home, and the
storages copied here are copied back to the device (the kernel may have stored through the table). An entry
that points into no live device tensor (stale, freed, foreign) is left as it is: the sanitizer reports it.
"""

from __future__ import annotations

import gc
import warnings
from dataclasses import dataclass, field

import numpy as np

from ..versions import patcher

patch = patcher("device_tables")

MIN_ADDRESS = 1 << 32  # device addresses lie above 4 GiB: smaller int64 entries are indices, not pointers


@dataclass
class Copied:
    """A device storage the launch reaches only through a pointer table, and its host copy."""

    device: object  # torch.UntypedStorage on the device
    host: object  # torch.UntypedStorage on the host
    tensors: list = field(default_factory=list)  # host tensors viewing `host` as the device tensors view theirs


@dataclass
class Rewritten:
    """One table's host copy: which entries were rewritten, and their device values."""

    table: object  # the host copy (a CPU torch.Tensor, int64 or uint64)
    index: np.ndarray  # flat positions rewritten
    device_values: np.ndarray  # what they held (device addresses)
    host_values: np.ndarray  # what they hold now


@dataclass
class LaunchTables:
    rewritten: list[Rewritten] = field(default_factory=list)
    copied: list[Copied] = field(default_factory=list)


# The host copies of the running launch (kept alive while it runs), and per host storage address the
# device tensor it stands for: the sanitizer names a pointer-table target after it.
CURRENT: list[LaunchTables] = []
HOMES: dict[int, object] = {}


def home_of(host_ptr: int):
    """The device tensor whose host copy (made for a pointer table) starts at host_ptr, or None."""
    return HOMES.get(host_ptr)


def _tensors(value) -> list:
    import torch

    value = getattr(value, "base", value)  # TensorWrapper
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, tuple):
        return [t for item in value for t in _tensors(item)]
    return []


def live_device_tensors(device_type: str) -> list:
    """Every strided tensor on a device of this type that the process holds a Python reference to."""
    import torch

    found = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for obj in gc.get_objects():
            if not issubclass(type(obj), torch.Tensor):
                continue
            try:  # fake, functional and meta tensors have no plain storage
                if obj.layout == torch.strided and obj.device.type == device_type and obj.untyped_storage().data_ptr():
                    found.append(obj)
            except (RuntimeError, NotImplementedError, AttributeError, TypeError):
                continue
    return found


def map_tables(args_dev: list, args_hst: list, live: list | None = None) -> LaunchTables | None:
    """Rewrite the device addresses in the launch's int64 host copies (args_hst, paired with args_dev) to host
    addresses. `live`: the device tensors that pointers may reach (default: every live one on the arguments'
    device). None when the launch has no device tensors or no table entry points into a live device storage."""
    pairs = [(d, h) for dev, hst in zip(args_dev, args_hst) for d, h in zip(_tensors(dev), _tensors(hst))]
    pairs = [(d, h) for d, h in pairs if d.device != h.device]
    if not pairs:
        return None
    return rewrite(pairs, live if live is not None else lambda: live_device_tensors(pairs[0][0].device.type))


def rewrite(pairs: list, live) -> LaunchTables | None:
    """map_tables on (device tensor, host copy) pairs; `live`: the device tensors pointers may reach, or a
    function that lists them (called only when some table entry looks like an address)."""
    import torch

    tables = [(d, h) for d, h in pairs if h.dtype in (torch.int64, torch.uint64) and h.dim() and h.numel()]
    if not tables:
        return None
    values = [h.contiguous().reshape(-1).view(torch.int64).numpy().view(np.uint64) for _, h in tables]
    if not any((v >= MIN_ADDRESS).any() for v in values):
        return None
    if callable(live):
        live = live()
    # Device storages: start -> (nbytes, storage, tensors on it); the arguments' own host copies reused.
    by_start: dict[int, tuple[int, object, list]] = {}
    for t in live:
        s = t.untyped_storage()
        if s.data_ptr() and s.nbytes():
            by_start.setdefault(s.data_ptr(), (s.nbytes(), s, []))[2].append(t)
    arg_host = {d.untyped_storage().data_ptr(): h.untyped_storage() for d, h in pairs}
    starts = np.array(sorted(by_start), dtype=np.uint64)
    ends = np.array([s + by_start[s][0] for s in sorted(by_start)], dtype=np.uint64)
    out = LaunchTables()
    hosts: dict[int, int] = {}  # device storage start -> its host copy's address
    for (_, table), flat in zip(tables, values):
        at = np.searchsorted(starts, flat, side="right").astype(np.int64) - 1
        inside = (flat >= MIN_ADDRESS) & (at >= 0)
        inside[inside] = flat[inside] < ends[at[inside]]
        if not inside.any():
            continue
        index = np.nonzero(inside)[0]
        old = flat[index].copy()  # `flat` may share the table's memory: read before writing
        new = old.copy()
        for k, pos in enumerate(index):
            start = int(starts[at[pos]])
            if start not in hosts:
                hosts[start] = _host_copy(start, by_start[start], arg_host, out)
            new[k] = np.uint64(hosts[start] + int(old[k]) - start)
        _put(table, index, new)
        out.rewritten.append(Rewritten(table, index, old, new))
    if not out.rewritten:
        return None
    return out


def _host_copy(start: int, entry: tuple[int, object, list], arg_host: dict, out: LaunchTables) -> int:
    """The host address standing for a device storage: an argument's host copy, or a copy made here."""
    import torch

    if start in arg_host:
        return arg_host[start].data_ptr()
    _, storage, tensors = entry
    host = torch.UntypedStorage(storage.nbytes())  # on the host (a fresh one even for a CPU storage)
    host.copy_(storage)
    copied = Copied(storage, host)
    for t in tensors:
        view = torch.empty(0, dtype=t.dtype, device="cpu").set_(host, t.storage_offset(), t.size(), t.stride())
        copied.tensors.append(view)
    HOMES[host.data_ptr()] = max(tensors, key=lambda t: t.numel())
    out.copied.append(copied)
    return host.data_ptr()


def _where(table, index: np.ndarray) -> tuple:
    """Flat positions (in C order) of a possibly strided table as an index tuple."""
    import torch

    return tuple(torch.from_numpy(np.ascontiguousarray(i)) for i in np.unravel_index(index, tuple(table.shape)))


def _get(table, index: np.ndarray) -> np.ndarray:
    import torch

    return table.view(torch.int64)[_where(table, index)].numpy().view(np.uint64)


def _put(table, index: np.ndarray, values: np.ndarray) -> None:
    import torch

    table.view(torch.int64)[_where(table, index)] = torch.from_numpy(values.view(np.int64))


def restore_tables(tables: LaunchTables) -> None:
    """Before Triton copies the tables home: their device addresses back (an entry the kernel overwrote
    is left as the kernel wrote it); then the storages copied here go back to the device."""

    for r in tables.rewritten:
        keep = _get(r.table, r.index) == r.host_values
        if keep.any():
            _put(r.table, r.index[keep], r.device_values[keep])
    for c in tables.copied:
        c.device.copy_(c.host)
        HOMES.pop(c.host.data_ptr(), None)


_NO_TABLES = LaunchTables()  # (never rewritten nor copied: _restore_args_dev leaves it)


class _Tables:
    """A listener of grid_loop: each launch's pointer tables mapped once its host copies are made (on_host_args);
    a launch that raised before its restore has its copies dropped (on_launch_end)."""

    @staticmethod
    def on_launch(launch) -> None:
        launch.part("device_tables", CURRENT.__len__)  # how many launches' tables were there before it

    @staticmethod
    def on_host_args(launch, args_hst: list, kwargs_hst: dict) -> None:
        if launch.own_host_copies(args_hst, kwargs_hst):
            CURRENT.append(_NO_TABLES)  # every argument its own host copy (the CPU's): no device address
            return
        names = list(kwargs_hst)
        tables = map_tables(list(launch.args_dev) + [launch.kwargs[n] for n in names],
                            list(args_hst) + [kwargs_hst.get(n) for n in names])
        CURRENT.append(tables or LaunchTables())

    @staticmethod
    def on_launch_end(launch, error: BaseException | None) -> None:
        del CURRENT[launch.part("device_tables", CURRENT.__len__):]  # a launch that raised before its restore


TABLES = _Tables()


def install() -> None:
    """Map pointer tables to a launch's host copies on the way in (a listener of grid_loop), restore them (and
    copy back what they reached) on the way out (_restore_args_dev)."""
    from triton.runtime import interpreter

    from ..batched import grid_loop

    def restore(original):
        def _restore_args_dev(*args, **kwargs):
            tables = CURRENT.pop() if CURRENT else None
            if tables is not None and not tables.copied and not tables.rewritten:
                tables = None
            if tables is not None:  # the device addresses back before Triton copies the tables home
                restore_tables(tables)
            return original(*args, **kwargs)

        return _restore_args_dev

    grid_loop.listen("device_tables", TABLES)
    patch(interpreter.GridExecutor, "_restore_args_dev", restore)
