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
    """Tune this process's malloc (once); whether it was tuned."""
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
    return _DONE


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
