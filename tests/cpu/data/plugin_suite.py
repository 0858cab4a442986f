"""A small Triton test suite, as a kernel author writes one, for the pytest plugin's tests (run by pytester).
Its kernels are purpose-written: correct ones, one bug each in the others."""

import unittest

import pytest
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr, MASK_STORE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    if MASK_STORE:
        tl.store(out_ptr + offs, x + y, mask=mask)
    else:
        tl.store(out_ptr + offs, x + y)  # the bug: the ragged last block writes past the end


def add(x, y, mask_store=True):
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 128),)](x, y, out, x.numel(), BLOCK=128, MASK_STORE=mask_store)
    return out


@triton.autotune(configs=[triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 32})], key=["n"])
@triton.jit
def double_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


def double(x):
    out = torch.empty_like(x)
    double_kernel[(triton.cdiv(x.numel(), 64),)](x, out, x.numel())  # the bug: a grid fixed for BLOCK=64
    return out


@triton.jit
def wild_store_kernel(address, n, BLOCK: tl.constexpr):
    ptr = address.to(tl.int64).to(tl.pointer_type(tl.float32))  # an address from an integer
    offs = tl.arange(0, BLOCK)
    tl.store(ptr + offs, tl.zeros([BLOCK], tl.float32), mask=offs < n)


@triton.jit
def spin_kernel(out_ptr, n):
    acc = 0
    for i in range(0, n):  # n = 2**31 - 1: never ends under the interpreter
        acc += i
    tl.store(out_ptr, acc)


@pytest.mark.parametrize("n", [1000, 1024])
def test_add(n):
    x, y = torch.randn(n), torch.randn(n)
    torch.testing.assert_close(add(x, y), x + y)


def test_add_unmasked_store():
    x, y = torch.randn(1000), torch.randn(1000)
    torch.testing.assert_close(add(x, y, mask_store=False), x + y)  # passes: the damage is past the end


@pytest.mark.tdebug(skip=True)  # checked, the store would be a finding (no live tensor there); unchecked it crashes
def test_wild_store_crashes():
    wild_store_kernel[(1,)](16, 4, BLOCK=4)


def test_after_the_crash():
    x = torch.randn(300)
    torch.testing.assert_close(add(x, x), 2 * x)


def test_double_every_config():
    x = torch.randn(256)
    torch.testing.assert_close(double(x), 2 * x)


def test_reads_empty_memory():
    x = torch.empty(256)
    add(x, x)


@pytest.mark.tdebug(skip=True)
def test_reads_empty_memory_unchecked():
    x = torch.empty(256)
    add(x, x)


@pytest.mark.tdebug(checks=["race"])
def test_add_unmasked_store_race_only():
    x, y = torch.randn(1000), torch.randn(1000)
    add(x, y, mask_store=False)


@pytest.mark.tdebug(timeout=3)
def test_spin_hangs():
    spin_kernel[(1,)](torch.zeros(1, dtype=torch.int64), 2**31 - 1)


class TestInUnittestStyle(unittest.TestCase):
    def test_add_unmasked_store(self):
        x, y = torch.randn(1000), torch.randn(1000)
        add(x, y, mask_store=False)
