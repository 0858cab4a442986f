"""Poison: fill memory that no one has written with a recognisable NaN (floats) or byte pattern (ints).

After a launch, an output element that still holds the poison bits was never written. The same
patterns let the interpreter sanitizer tell uninitialised memory (a torch.empty nobody wrote) from data.
"""

from __future__ import annotations

import contextlib
import ctypes
import weakref
from collections.abc import Iterator

import numpy as np
import torch

from . import dynamo

# Bit patterns: signalling-NaN payloads for floats (arithmetic never produces them), 0xA5 bytes for ints.
_FLOAT_BITS = {
    torch.float32: (torch.int32, 0x7FA5A5A5),
    torch.float16: (torch.int16, 0x7DA5),
    torch.bfloat16: (torch.int16, 0x7FA5),
    torch.float64: (torch.int64, 0x7FF5A5A5A5A5A5A5),
}
_INT_BITS = {
    torch.int8: -0x5B,  # 0xA5
    torch.uint8: 0xA5,
    torch.int16: -0x5A5B,  # 0xA5A5
    torch.int32: -0x5A5A5A5B,  # 0xA5A5A5A5
    torch.int64: -0x5A5A5A5A5A5A5A5B,
}


_UNSIGNED_AS = {torch.uint16: torch.int16, torch.uint32: torch.int32, torch.uint64: torch.int64}  # same bytes


def _pattern(dtype: torch.dtype) -> tuple[torch.dtype, int] | None:
    """The integer dtype to read `dtype`'s bits as, and the poison pattern as a value of it (None: no poison)."""
    if dtype in _FLOAT_BITS:
        int_dtype, pattern = _FLOAT_BITS[dtype]
        if pattern >= 2 ** (torch.iinfo(int_dtype).bits - 1):
            pattern -= 2 ** torch.iinfo(int_dtype).bits
        return int_dtype, pattern
    if dtype in _INT_BITS:
        return dtype, _INT_BITS[dtype]
    if dtype in _UNSIGNED_AS:  # read as the signed type of their size: the same 0xA5 bytes
        return _UNSIGNED_AS[dtype], _INT_BITS[_UNSIGNED_AS[dtype]]
    return None


def _bits_view(t: torch.Tensor) -> tuple[torch.Tensor, int] | None:
    found = _pattern(t.dtype)
    if found is None:
        return None
    int_dtype, pattern = found
    return (t.view(int_dtype) if int_dtype != t.dtype else t), pattern


def poison_(t: torch.Tensor) -> torch.Tensor:
    """Fill t with its dtype's poison pattern, in place. Bool tensors are left alone."""
    if type(t) is torch.Tensor and t.device.type == "cpu" and t.is_contiguous() and t.numel() \
            and not t.requires_grad:
        _poison_memory(t)  # numpy at the tensor's address: no torch op (each passes the sanitizer's TorchWrites)
        return t
    bv = _bits_view(t)
    if bv is not None and t.numel():
        bits, pattern = bv
        bits.fill_(pattern)
    return t


def _poison_memory(t: torch.Tensor) -> None:
    """poison_ of a contiguous CPU tensor, its elements' bytes written by numpy: the same bits as fill_."""
    found = _numpy_pattern(t.dtype)
    if found is not None:
        np_dtype, pattern = found
        storage_bytes(t.data_ptr(), t.numel() * t.element_size()).view(np_dtype)[...] = pattern


def _numpy_pattern(dtype: torch.dtype) -> tuple[np.dtype, int] | None:
    """_pattern(dtype) as the numpy integer dtype to read its memory as, and the pattern (None: no poison)."""
    if dtype in _NUMPY_PATTERNS:
        return _NUMPY_PATTERNS[dtype]
    found = _pattern(dtype)
    if found is not None:
        int_dtype, pattern = found
        found = np.dtype(_NUMPY_INT[int_dtype]), pattern
    _NUMPY_PATTERNS[dtype] = found
    return found


_NUMPY_PATTERNS: dict[torch.dtype, tuple[np.dtype, int] | None] = {}


def poison_mask(t: torch.Tensor) -> torch.Tensor:
    """True where t still holds the poison pattern."""
    bv = _bits_view(t)
    if bv is None:
        return torch.zeros(t.shape, dtype=torch.bool, device=t.device)
    bits, pattern = bv
    return bits == pattern


_NUMPY_INT = {torch.int8: np.int8, torch.uint8: np.uint8, torch.int16: np.int16, torch.int32: np.int32,
              torch.int64: np.int64}


def storage_bytes(ptr: int, nbytes: int) -> np.ndarray:
    """A CPU storage's memory as numpy bytes at its address (no copy, no torch op; the caller keeps it alive)."""
    if not nbytes:
        return np.empty(0, dtype=np.uint8)
    return np.frombuffer((ctypes.c_uint8 * nbytes).from_address(ptr), dtype=np.uint8)


def storage_poison_mask(t: torch.Tensor) -> np.ndarray:
    """poison_mask of every element of t's storage (as t's dtype), read for a CPU tensor with numpy at the
    storage's address: no torch op (under the sanitizer each torch op passes its write tracker, torch.empty the
    poisoner)."""
    storage, dtype = t.untyped_storage(), t.dtype
    if t.device.type != "cpu":
        return poison_mask(torch.empty(0, dtype=dtype, device=t.device).set_(storage)).cpu().numpy()
    found = _numpy_pattern(dtype)
    if found is None:
        return np.zeros(storage.nbytes() // dtype.itemsize, dtype=bool)
    np_dtype, pattern = found
    count = storage.nbytes() // np_dtype.itemsize
    return storage_bytes(storage.data_ptr(), count * np_dtype.itemsize).view(np_dtype) == pattern


class Allocations:
    """Tensors created by torch.empty* while poisoning was on (their storages may be uninitialised)."""

    def __init__(self) -> None:
        self._storages: dict[int, weakref.ref] = {}
        self._written: dict[int, np.ndarray] = {}  # storage -> per byte: written by a kernel or a torch op
        self._full: set[int] = set()  # storages every byte of which is written (their marks dropped)

    def add(self, t: torch.Tensor) -> None:
        ptr = t.untyped_storage().data_ptr()
        self._storages[ptr] = weakref.ref(t, lambda ref, ptr=ptr: self._forget(ptr, ref))
        self._written.pop(ptr, None)  # a new allocation at a freed one's address: nothing written
        self._full.discard(ptr)

    def _forget(self, ptr: int, ref: weakref.ref) -> None:
        """The tensor torch.empty returned is gone: written() no longer reads its marks (a byte per byte of it),
        so they go now rather than at the next allocation at its address (a newer one there keeps its own)."""
        if self._storages.get(ptr) is ref:
            self._written.pop(ptr, None)
            self._full.discard(ptr)

    def written(self, storage_ptr: int) -> np.ndarray | None:
        """Per byte of a tracked allocation, whether a kernel or a torch op has written it (kept across
        launches; sanitize/written.py sets it); None for memory no torch.empty here allocated, and for an
        allocation written whole (fully_written: no marks kept)."""
        ref = self._storages.get(storage_ptr)
        t = ref() if ref is not None else None
        if t is None or storage_ptr in self._full:
            return None
        marks = self._written.get(storage_ptr)
        if marks is None:
            marks = self._written[storage_ptr] = np.zeros(t.untyped_storage().nbytes(), dtype=bool)
        return marks

    def written_whole(self, storage_ptr: int) -> None:
        """Every byte of the tracked allocation is written now: its marks go (a byte per byte of it)."""
        if self.was_empty(storage_ptr):
            self._full.add(storage_ptr)
            self._written.pop(storage_ptr, None)

    def fully_written(self, storage_ptr: int) -> bool:
        """A tracked allocation every byte of which a kernel or a torch op has written."""
        return storage_ptr in self._full and self.was_empty(storage_ptr)

    def tracks(self, storage_ptr: int) -> bool:
        return storage_ptr in self._storages

    def was_empty(self, storage_ptr: int) -> bool:
        ref = self._storages.get(storage_ptr)
        return ref is not None and ref() is not None


ALLOCATIONS = Allocations()


def keep_default_device() -> None:
    """Before tdebug replaces torch.empty & co.: torch's default device (`with torch.device("cuda"):`,
    torch.set_default_device) recognises the functions that take a device by identity, in a set it builds once on
    first use (torch.utils._device._device_constructors). Built while tdebug's wrappers stood in for torch.empty,
    it held the wrappers, so the script's own torch.empty calls no longer got the default device: its tensors landed
    on the CPU beside its CUDA ones (mixed-device errors, CUDA tensors into numpy, on a GPU). Built here first, it
    holds torch's own functions, which the wrappers call."""
    try:
        from torch.utils._device import _device_constructors
    except ImportError:  # a torch without it has no set to spoil
        return
    _device_constructors()


_REINSTALL: list = []  # the poisoned_empty block now open: how to install its wrappers again


def _dynamo_loaded() -> None:
    """torch._dynamo was just imported inside a poisoned_empty block: make its wrappers eager."""
    for install in _REINSTALL:
        install()


# The one dispatch mode on (the sanitizer's TorchWrites, say) has nothing to do with a factory's fresh tensor
# (`passes_factories`): torch.empty & co. are called past it, ~10 us a call less. Not past another mode (a
# FakeTensorMode's factories make fake tensors), nor for a tensor subclass argument (it dispatches through them).
_PYTHON_KEYS = torch._C.DispatchKeySet(torch._C.DispatchKey.Python) \
    | torch._C.DispatchKeySet(torch._C.DispatchKey.PythonTLSSnapshot)
_len_modes, _mode_at = torch._C._len_torch_dispatch_stack, torch._C._get_dispatch_stack_at


def _plain(values) -> bool:
    """No tensor among the values but torch.Tensor's own (no subclass that dispatches through Python)."""
    return all(type(v) is torch.Tensor or not isinstance(v, torch._C.TensorBase) for v in values)


@contextlib.contextmanager
def poisoned_empty() -> Iterator[Allocations]:
    """Inside the block, torch.empty / empty_like / empty_strided / Tensor.new_empty return poisoned
    tensors (and remember them), so unwritten outputs and uninitialised reads show. Called from
    torch.compile'd code they run eagerly (a graph break), so a compiled caller's buffers are poisoned
    and remembered too."""
    originals = {
        "empty": torch.empty,
        "empty_like": torch.empty_like,
        "empty_strided": torch.empty_strided,
    }
    original_new_empty = torch.Tensor.new_empty
    keep_default_device()

    def wrap(fn):
        def poisoned(*args, **kwargs):
            if _len_modes() == 1 and getattr(_mode_at(0), "passes_factories", False) \
                    and _plain(args) and _plain(kwargs.values()):
                with torch._C._ExcludeDispatchKeyGuard(_PYTHON_KEYS):  # (a fresh tensor: nothing for it to see)
                    t = fn(*args, **kwargs)
            else:
                t = fn(*args, **kwargs)
            # Not a FakeTensor (torch.compile's inductor allocates under fake-tensor mode) nor a meta tensor.
            if t.numel() and type(t) is torch.Tensor and t.device.type != "meta":
                poison_(t)
                ALLOCATIONS.add(t)
            return t

        return dynamo.eager(poisoned) if dynamo.loaded() else poisoned

    def install() -> None:
        for name, fn in originals.items():
            setattr(torch, name, wrap(fn))
        torch.Tensor.new_empty = wrap(original_new_empty)

    install()
    _REINSTALL.append(install)
    if not dynamo.loaded():
        dynamo.when_loaded(_dynamo_loaded)
    try:
        yield ALLOCATIONS
    finally:
        _REINSTALL.remove(install)
        for name, fn in originals.items():
            setattr(torch, name, fn)
        torch.Tensor.new_empty = original_new_empty
