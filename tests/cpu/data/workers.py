"""Launches of a masked add (or one without masks, program 3 storing past the end) from forked children,
fork and spawn pools, and threads, as the first argument names; every output is checked against x + y."""

import multiprocessing as mp
import os
import sys
import threading

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr, MASKED: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if MASKED:
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)
    else:
        tl.store(out_ptr + offs, tl.load(x_ptr + offs) + tl.load(y_ptr + offs))


def add(masked: bool = True, n: int = 1000) -> float:
    x, y = torch.randn(n), torch.randn(n)
    out = torch.empty(n)
    add_kernel[(triton.cdiv(n, 256),)](x, y, out, n, BLOCK=256, MASKED=masked)
    return float((out - (x + y)).abs().max())


def pool_work(i: int) -> float:
    return add(masked=i != 1 or "clean" in sys.argv[1])


def thread_work(i: int, errors: list) -> None:
    bad = sys.argv[1] == "threads_one_bad" and i == 3
    for _ in range(3):
        error = add(masked=not bad)
        if not bad and error > 1e-5:
            errors.append((i, error))


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "fork_bad":  # a clean launch here, the bad one in a forked child
        add()
        pid = os.fork()
        if pid == 0:
            add(masked=False)
            os._exit(0)
        os.waitpid(pid, 0)
    elif mode in ("fork_pool", "fork_pool_clean", "spawn_pool"):  # the pool does all the launching
        with mp.get_context("spawn" if mode == "spawn_pool" else "fork").Pool(2) as pool:
            print("errors", pool.map(pool_work, range(3)))
    elif mode.startswith("threads"):
        errors: list = []
        threads = [threading.Thread(target=thread_work, args=(i, errors)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            sys.exit(f"wrong results in threads: {errors}")
