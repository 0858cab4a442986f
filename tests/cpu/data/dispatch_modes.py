"""A script with torch dispatch modes of its own around torch.empty & co.: under the sanitizer (whose TorchWrites mode
is on, and whose poisoner calls factories past it when it is the only mode) the script's modes must still see every
factory, a FakeTensorMode's must make fake tensors, and a tensor subclass that dispatches through Python must still
dispatch empty_like. Usage: python dispatch_modes.py"""

import torch
import triton
import triton.language as tl
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
from torch.utils._python_dispatch import TorchDispatchMode


@triton.jit
def double(X, Y, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(Y + offs, tl.load(X + offs, mask=offs < n) * 2.0, mask=offs < n)


class Seen(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.ops: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append(func.__name__)
        return func(*args, **(kwargs or {}))


class Tagged(torch.Tensor):
    """A wrapper subclass that counts the ops dispatched to it."""

    calls: list[str] = []

    @staticmethod
    def __new__(cls, inner):
        return torch.Tensor._make_wrapper_subclass(cls, inner.shape, dtype=inner.dtype, device=inner.device)

    def __init__(self, inner) -> None:
        self.inner = inner

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        Tagged.calls.append(func.__name__)
        unwrap = [a.inner if isinstance(a, Tagged) else a for a in args]
        return func(*unwrap, **(kwargs or {}))


def main() -> None:
    x = torch.randn(1000)
    seen = Seen()
    with seen:
        y = torch.empty_like(x)
        z = torch.empty(7)
    assert seen.ops[:2] == ["empty_like.default", "empty.memory_format"], seen.ops
    assert z.shape == (7,)
    with FakeTensorMode():
        fake = torch.empty(3, 4)
    assert isinstance(fake, FakeTensor), type(fake)
    like = torch.empty_like(Tagged(torch.randn(5)))
    assert Tagged.calls == ["empty_like.default"], Tagged.calls
    assert like.shape == (5,)
    double[(triton.cdiv(1000, 256),)](x, y, 1000, BLOCK=256)  # y: poisoned then written whole, once
    assert torch.equal(y, x * 2.0)


if __name__ == "__main__":
    main()
    print("ok")
