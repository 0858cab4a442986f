"""The C allocator's settings in a process that runs kernels on the interpreter: freed blocks are kept for reuse;
and Python's cyclic garbage collector kept off the objects the process holds once tdebug is installed.

A batched launch makes and drops many arrays of a few megabytes (a batch's addresses, masks, loaded values, the
checks' temporaries). glibc's malloc gives such blocks back to the system as soon as the top of its heap holds
more than a threshold that grows with use, and the next batch faults the same memory in again, page by page:
on the 2-core machine, up to half of a big launch's CPU time was the kernel's (system time). Keeping freed
blocks (glibc's M_TRIM_THRESHOLD, and a fixed M_MMAP_THRESHOLD: blocks up to 32 MiB come from the heap) makes a
process hold its peak heap instead. Blocks above 32 MiB (a big tensor, a shadow table) are mapped and unmapped
as before. Set only under glibc, and not where the user set either threshold in the environment
(MALLOC_TRIM_THRESHOLD_, MALLOC_MMAP_THRESHOLD_); TDEBUG_KEEP_FREED=0 leaves the allocator as it is.

The same switch stops numpy asking the kernel for huge pages (its madvise(MADV_HUGEPAGE) on every array of 4 MiB
or more). Under Linux's common `defrag=madvise`, a fault in such an array may compact memory first, and a launch
whose arrays outgrow the kept heap (a one-program loop run as lanes: 64 MiB an op, mapped afresh each time) spent
0.1-0.45 s of system time on 0.25 s of its own: Liger's rms_norm backward 0.29-0.79 s a launch from one run to the
next, 0.36-0.37 s with small pages, the same user time. Not where the user set NUMPY_MADVISE_HUGEPAGE.
"""

from __future__ import annotations

import atexit
import ctypes
import gc
import os
import platform

from .. import settings

M_TRIM_THRESHOLD = -1  # glibc's mallopt parameters (malloc.h)
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 << 20  # glibc's largest (HEAP_MAX_SIZE / 2 on 64-bit)
TRIM_THRESHOLD = 1 << 30  # the heap's free top kept up to this many bytes

_DONE: bool | None = None  # whether malloc was tuned (None: not tried yet)


def keep_freed_memory() -> bool:
    """Tune this process's malloc (once) and numpy's pages; whether malloc was tuned."""
    global _DONE
    if _DONE is not None:
        return _DONE
    _DONE = False
    if not settings.get("TDEBUG_KEEP_FREED") or platform.system() != "Linux":
        return False
    if "MALLOC_TRIM_THRESHOLD_" in os.environ or "MALLOC_MMAP_THRESHOLD_" in os.environ:
        return False
    if platform.libc_ver()[0] != "glibc":
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    _DONE = bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
    if "NUMPY_MADVISE_HUGEPAGE" not in os.environ:
        _small_pages_for_arrays()
    return _DONE


def _small_pages_for_arrays() -> None:
    """numpy's arrays no longer madvised for huge pages (its own switch; numpy 1.x kept it in numpy.core)."""
    try:
        from numpy._core import multiarray
    except ImportError:
        from numpy.core import multiarray
    setter = getattr(multiarray, "_set_madvise_hugepage", None)
    if setter is not None:
        setter(False)


_FROZEN: list = []


def freeze_installed_objects() -> None:
    """Move the objects alive now (torch's, Triton's and tdebug's modules, some 200,000) out of the cyclic
    collector's reach (gc.freeze), once: its full collections walked every one of them again and again while a
    script's launches made their records (a third of a small launch's CPU time under `tdebug sanitize`). They are
    handed back at exit, so the process ends as before (extension modules count what was never freed)."""
    if _FROZEN:
        return
    _FROZEN.append(True)
    gc.freeze()
    atexit.register(gc.unfreeze)
