"""runtime/allocator.py: a process that runs kernels keeps the blocks it frees (no page faults to make the next
batch's arrays) and numpy's arrays take small pages, unless the user set malloc's thresholds, numpy's switch or
TDEBUG_KEEP_FREED=0."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Four 8 MiB arrays made and dropped, ten times (a batch's temporaries): the page faults of each round.
ROUNDS = """
import json, resource
import numpy as np
from tdebug.runtime.allocator import keep_freed_memory
tuned = keep_freed_memory()
try:
    from numpy._core.multiarray import _get_madvise_hugepage
except ImportError:
    from numpy.core.multiarray import _get_madvise_hugepage
faults = []
for _ in range(10):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    arrays = [np.random.rand(1 << 20) for _ in range(4)]
    del arrays
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
print(json.dumps({"tuned": tuned, "faults": faults, "huge_pages": bool(_get_madvise_hugepage())}))
"""

pytestmark = pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc",
                                reason="glibc's mallopt only")


def _rounds(**env: str) -> dict:
    full = {k: v for k, v in os.environ.items()
            if not k.startswith(("MALLOC_", "TDEBUG_KEEP_FREED", "NUMPY_MADVISE_HUGEPAGE"))}
    full.update(env, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", ROUNDS], capture_output=True, text=True, env=full, timeout=120,
                         check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_freed_blocks_are_reused_without_faulting_again():
    kept, given_back = _rounds(), _rounds(TDEBUG_KEEP_FREED="0")
    assert kept["tuned"] and not given_back["tuned"]
    # After the first round the kept heap serves the arrays; given back, every round faults them in again.
    assert sum(kept["faults"][2:]) * 10 < sum(given_back["faults"][2:]), (kept, given_back)


def test_arrays_take_small_pages_unless_the_user_chose():
    # numpy's default on Linux is huge pages; an array's page faults then may compact memory first.
    assert _rounds()["huge_pages"] is False
    assert _rounds(TDEBUG_KEEP_FREED="0")["huge_pages"] is _rounds(NUMPY_MADVISE_HUGEPAGE="1")["huge_pages"] is True


def test_the_users_own_malloc_settings_are_left_alone():
    assert not _rounds(MALLOC_TRIM_THRESHOLD_="1000000")["tuned"]
    assert not _rounds(MALLOC_MMAP_THRESHOLD_="1000000")["tuned"]


def test_every_interpreter_process_is_tuned_by_the_recipe():
    code = ("from tdebug.runtime import allocator, recipe; recipe.install(recipe.Recipe(interpret=True)); "
            "print(allocator._DONE)")
    full = {k: v for k, v in os.environ.items() if not k.startswith(("MALLOC_", "TDEBUG_KEEP_FREED"))}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True,
                         env={**full, "PYTHONPATH": str(ROOT), "TRITON_INTERPRET": "1"}).stdout
    assert out.strip().splitlines()[-1] == "True"
