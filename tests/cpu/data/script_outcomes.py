"""A script that ends in the way its first argument names, after launching a small kernel or not."""

import os
import signal
import sys

import torch
import triton
import triton.language as tl


@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


def launch() -> None:
    x = torch.randn(100)
    y = torch.empty_like(x)
    copy_kernel[(1,)](x, y, 100, BLOCK=128)
    assert torch.equal(x, y)


mode = sys.argv[1]
if mode == "segv_before_launch":
    os.kill(os.getpid(), signal.SIGSEGV)
if mode == "echo_stdin":
    print("read:", sys.stdin.read().strip())
    launch()
if mode == "exit3":
    launch()
    sys.exit(3)
if mode == "os_exit":
    launch()
    os._exit(9)
if mode == "exit_message":
    sys.exit("bad input file")
if mode == "ok":
    launch()
if mode == "keyboard_interrupt":
    launch()
    raise KeyboardInterrupt
if mode == "raise_sigint":
    launch()
    signal.raise_signal(signal.SIGINT)
