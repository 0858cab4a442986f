"""A test suite whose kernel is wrong in its last elements: under `pytest --tdebug` the failing
assert_close says which program and store line wrote them, or, when the launch stored more lanes than tdebug
keeps records of, that it cannot say (tests/cpu/test_pytest_plugin.py)."""

import torch
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.where(offs >= n - 3, x * 3.0, x * 2.0)  # the bug: the last three elements
    tl.store(y_ptr + offs, y, mask=mask)


def test_scale():
    x = torch.rand(300) + 1.0
    y = torch.empty_like(x)
    scale_kernel[(triton.cdiv(300, 64),)](x, y, 300, BLOCK=64)
    torch.testing.assert_close(y, x * 2.0)


def test_scale_too_large_to_record():
    from tdebug.interpreter.hooks.stores import RECORDER

    RECORDER.max_lanes = 100  # the launch stores 300 lanes (this test's own process: the plugin forks each test)
    x = torch.rand(300) + 1.0
    y = torch.empty_like(x)
    scale_kernel[(triton.cdiv(300, 64),)](x, y, 300, BLOCK=64)
    torch.testing.assert_close(y, x * 2.0)
