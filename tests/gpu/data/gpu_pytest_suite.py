"""A small GPU test suite for `pytest --tdebug` on a CUDA machine (tests/gpu/test_gpu_pytest_plugin.py runs it):
tensors and references on the GPU, a tight fp32 tolerance only the compiled kernel meets bit for bit, a real bug,
a fixture that initialises CUDA in pytest's own process."""

import pytest
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@triton.jit
def add_unmasked_store(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask))  # the bug


@triton.jit
def row_sum(x_ptr, out_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0)
    tl.store(out_ptr + row, tl.sum(x, axis=0))


@pytest.mark.parametrize("n", [1000, 4096])
def test_add(n):
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(n, 256),)](x, y, out, n, BLOCK=256)
    assert out.device.type == "cuda"
    torch.testing.assert_close(out, x + y)


def test_row_sum_against_itself_compiled():
    # The test's reference is the compiled kernel's own earlier result, bit for bit: it holds only if the test sees
    # the compiled results (the interpreter may sum in another order).
    x = torch.randn(64, 1000, device="cuda")
    a, b = torch.empty(64, device="cuda"), torch.empty(64, device="cuda")
    row_sum[(64,)](x, a, 1000, BLOCK=1024)
    row_sum[(64,)](x, b, 1000, BLOCK=1024)
    assert torch.equal(a, b)
    torch.testing.assert_close(a, x.sum(-1), rtol=1e-5, atol=1e-4)


def test_add_unmasked_store():
    n = 1000
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = torch.empty(n + 24, device="cuda")[:n]
    add_unmasked_store[(triton.cdiv(n, 256),)](x, y, out, n, BLOCK=256)
    torch.testing.assert_close(out, x + y)


@pytest.fixture(scope="module")
def weights():
    return torch.randn(2048, device="cuda")  # initialises CUDA in pytest's process


def test_with_a_cuda_fixture(weights):
    out = torch.empty_like(weights)
    add_kernel[(8,)](weights, weights, out, 2048, BLOCK=256)
    torch.testing.assert_close(out, 2 * weights)


def test_after_the_cuda_fixture():
    x = torch.randn(300, device="cuda")
    out = torch.empty_like(x)
    add_kernel[(2,)](x, x, out, 300, BLOCK=256)
    torch.testing.assert_close(out, 2 * x)
