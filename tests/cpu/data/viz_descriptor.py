"""Test data for tdebug viz: a kernel that takes TensorDescriptors (40x16, 16x16 blocks: the last block
is half outside, and the descriptor's bounds check masks those lanes off)."""

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor


@triton.jit
def double_desc_kernel(x_desc, o_desc):
    pid = tl.program_id(0)
    tile = x_desc.load([pid * 16, 0])
    o_desc.store([pid * 16, 0], tile * 2)


x = torch.randn(40, 16)
o = torch.empty(40, 16)
double_desc_kernel[(3,)](TensorDescriptor.from_tensor(x, [16, 16]), TensorDescriptor.from_tensor(o, [16, 16]))
assert torch.equal(o, 2 * x), "the traced launch computed a wrong result"
