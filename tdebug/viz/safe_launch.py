"""Make a traced launch safe to run whatever its bugs: no out-of-bounds lane touches real memory.

The trace (trace.py) records each load and store *before* the interpreter executes it, unmasked
out-of-bounds lanes included, and Triton's interpreter has no bounds checks: such a lane reads or
writes past the allocation and can segfault the process. So, while a launch is traced:

- every tensor argument's storage is copied into a larger buffer with a guard band on each side (as
  large as the storage, from 1 MiB to 64 MiB) and the kernel runs on that copy; an access that runs
  off the end of a tensor stays in that tensor's guard band, so it is attributed to the right tensor
  even when another tensor was allocated right after it; the copy is written back after the launch;
- every load, store and atomic has the lanes that fall outside all argument storages masked off
  (loads read `other`, or 0) before the real access. The trace saw the kernel's own mask first.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np
import torch

from ..interpreter.hooks import memory_events
from ..interpreter.versions import bind, patcher

patch = patcher("safe_launch")

GUARD_MIN = 1 << 20  # guard band on each side: the storage's size, within these bounds
GUARD_MAX = 64 << 20


@dataclass
class Relocation:
    buffer: torch.Tensor  # uint8: guard, storage bytes, guard
    guard: int
    nbytes: int
    original: torch.UntypedStorage


@dataclass
class GuardState:
    active: bool = False
    relocations: dict[int, Relocation] = field(default_factory=dict)  # original storage ptr -> copy
    regions: list[tuple[int, int]] = field(default_factory=list)  # storage + guards, for attribution
    starts: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # real storage bytes
    ends: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    blocked_lanes: int = 0
    scratch: torch.Tensor | None = None

    def begin(self) -> None:
        self.active = True
        self.relocations.clear()
        self.regions.clear()
        self.starts = np.zeros(0, np.int64)
        self.ends = np.zeros(0, np.int64)

    def end(self) -> None:
        self.active = False

    def _register(self, region: tuple[int, int], storage: tuple[int, int]) -> None:
        self.regions.append(region)
        pairs = sorted(list(zip(self.starts.tolist(), self.ends.tolist())) + [storage])
        self.starts = np.array([p[0] for p in pairs], dtype=np.int64)
        self.ends = np.array([p[1] for p in pairs], dtype=np.int64)

    def relocate(self, arg):
        """The guarded copy of a CPU tensor argument (in a tuple or a TensorDescriptor too); others as they are."""
        if self.active and isinstance(arg, tuple):
            from triton.runtime.interpreter import _tuple_create

            return _tuple_create(arg, [self.relocate(a) for a in arg])
        if self.active and dataclasses.is_dataclass(arg) and isinstance(getattr(arg, "base", None), torch.Tensor):
            return dataclasses.replace(arg, base=self.relocate(arg.base))  # a TensorDescriptor
        if not self.active or not isinstance(arg, torch.Tensor) or arg.device.type != "cpu":
            if self.active and hasattr(arg, "untyped_storage"):
                st = arg.untyped_storage()
                span = (st.data_ptr(), st.data_ptr() + st.nbytes())
                if span not in self.regions:
                    self._register(span, span)
            return arg
        storage = arg.untyped_storage()
        key = storage.data_ptr()
        reloc = self.relocations.get(key)
        if reloc is None:
            nbytes = storage.nbytes()
            guard = min(max(GUARD_MIN, -(-nbytes // 64) * 64), GUARD_MAX)
            buffer = torch.zeros(nbytes + 2 * guard, dtype=torch.uint8, device="cpu")
            buffer[guard:guard + nbytes].copy_(_bytes(storage))
            reloc = self.relocations[key] = Relocation(buffer, guard, nbytes, storage)
            start = buffer.data_ptr()
            self._register((start, start + buffer.numel()), (start + guard, start + guard + nbytes))
        copy = torch.empty(0, dtype=arg.dtype, device="cpu")
        copy.set_(reloc.buffer.untyped_storage(), reloc.guard // arg.element_size() + arg.storage_offset(),
                  arg.size(), arg.stride())
        return copy

    def region_of(self, tensor) -> tuple[int, int]:
        """Storage plus guard bands holding a (relocated) tensor argument."""
        ptr = tensor.data_ptr()
        for lo, hi in self.regions:
            if lo <= ptr < hi:
                return lo, hi
        st = tensor.untyped_storage()
        return st.data_ptr(), st.data_ptr() + st.nbytes()

    def write_back(self) -> None:
        for reloc in self.relocations.values():
            _bytes(reloc.original).copy_(reloc.buffer[reloc.guard:reloc.guard + reloc.nbytes])

    def safe(self, ptrs: np.ndarray, elsize: int) -> np.ndarray | None:
        """Per lane: does the access lie inside some argument's storage? None when no launch is guarded."""
        if not self.active or not self.starts.size:
            return None
        addr = np.asarray(ptrs).astype(np.uint64).view(np.int64)
        idx = np.searchsorted(self.starts, addr, side="right") - 1
        return (idx >= 0) & (addr + elsize <= self.ends[np.clip(idx, 0, None)])

    def scratch_address(self) -> int:
        if self.scratch is None:
            self.scratch = torch.zeros(64, dtype=torch.uint8, device="cpu")
        return self.scratch.data_ptr()


GUARD = GuardState()


def _bytes(storage: torch.UntypedStorage) -> torch.Tensor:
    return torch.empty(0, dtype=torch.uint8, device="cpu").set_(storage)


def _elsize(ptrs) -> int:
    return max(1, ptrs.get_element_ty().primitive_bitwidth // 8)


def _restored_args(original):
    def _restore_args_dev(*args, **kwargs):
        if not GUARD.active:
            return original(*args, **kwargs)
        call = bind(original, args, kwargs)
        args_dev, args_hst = call.arguments["args_dev"], call.arguments["args_hst"]
        kwargs_dev, kwargs_hst = call.arguments["kwargs"], call.arguments["kwargs_hst"]
        GUARD.write_back()
        copies = {r.buffer.untyped_storage().data_ptr() for r in GUARD.relocations.values()}

        def moved(h) -> bool:  # written back above (a relocated tensor, or a tuple / descriptor holding one)
            if isinstance(h, torch.Tensor):
                return h.untyped_storage().data_ptr() in copies
            if isinstance(h, tuple):
                return any(moved(x) for x in h)
            return isinstance(getattr(h, "base", None), torch.Tensor) and moved(h.base)

        pairs = [(d, h) for d, h in zip(args_dev, args_hst) if not moved(h)]
        rest = {k: v for k, v in kwargs_dev.items() if not moved(kwargs_hst.get(k))}
        call.arguments["args_dev"] = [d for d, _ in pairs]
        call.arguments["args_hst"] = [h for _, h in pairs]
        call.arguments["kwargs"] = rest
        call.arguments["kwargs_hst"] = {k: kwargs_hst[k] for k in rest}
        return original(*call.args, **call.kwargs)

    return _restore_args_dev


def _masked(mask, ok):
    from triton.runtime.interpreter import TensorHandle

    if ok is None:
        return mask
    data = np.asarray(mask.data, dtype=bool)
    safe = data & ok
    blocked = int(data.sum() - safe.sum())
    if not blocked:
        return mask
    GUARD.blocked_lanes += blocked
    return TensorHandle(safe, mask.dtype)


class _Guard:
    """Lanes of a memory op (interpreter.hooks.memory_events) outside every argument's storage do not touch memory:
    masked off, or for atomic_cas (no mask) pointed at a scratch word."""

    @staticmethod
    def on_host_args(launch, args_hst: list, kwargs_hst: dict) -> tuple | None:
        """The launch's host copies, relocated into guarded buffers: what the listeners outside this one get."""
        if not GUARD.active:
            return None
        return [GUARD.relocate(a) for a in args_hst], {k: GUARD.relocate(v) for k, v in kwargs_hst.items()}

    @staticmethod
    def before(access: memory_events.Access) -> None:
        from triton.runtime.interpreter import TensorHandle

        ptrs = access.ptrs
        ok = GUARD.safe(ptrs.data, _elsize(ptrs))
        if access.op != "create_atomic_cas":
            access.mask = _masked(access.mask, ok)
        elif ok is not None and not ok.all():
            data = np.where(ok, ptrs.data, np.uint64(GUARD.scratch_address())).astype(ptrs.data.dtype)
            GUARD.blocked_lanes += int((~ok).sum())
            access.call.arguments["ptr"] = TensorHandle(data, ptrs.dtype)


def install() -> None:
    """Patch the interpreter (after tdebug.interpreter.patches.install and before any launch)."""
    from triton.runtime import interpreter

    patch(interpreter.GridExecutor, "_restore_args_dev", _restored_args)
    memory_events.listen("safe_launch", _Guard())  # and each launch's host copies
