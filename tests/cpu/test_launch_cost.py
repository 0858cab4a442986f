"""A launch's fixed cost cut without changing what it does: Triton's copy of the host copies home is skipped only
where every copy it would make is of a storage onto itself."""

from __future__ import annotations

import torch
from triton.runtime import interpreter

from tdebug.interpreter import grid_loop, versions


def _home_after(restore, args_dev: list, args_hst: list, kwargs: dict, kwargs_hst: dict) -> list[list[float]]:
    restore(None, args_dev, args_hst, kwargs, kwargs_hst)
    return [t.tolist() for t in args_dev + list(kwargs.values()) if isinstance(t, torch.Tensor)]


def _arrangements():
    """(args_dev, args_hst, kwargs, kwargs_hst) made fresh: own host copies, other host copies, aliases of both."""
    def fresh():
        x, y = torch.arange(4.0), torch.arange(4.0) + 10
        return x, y, x.clone() + 100, y.clone() + 100
    x, y, cx, cy = fresh()
    yield "own", [x, y], [x, y], {}, {}
    x, y, cx, cy = fresh()
    yield "copies", [x, y], [cx, cy], {}, {}
    x, y, cx, cy = fresh()
    yield "one copy", [x, y], [x, cy], {}, {}
    x, y, cx, cy = fresh()
    yield "alias, copy last", [x, x], [x, cx], {}, {}
    x, y, cx, cy = fresh()
    yield "alias, own last", [x, x], [cx, x], {}, {}  # Triton copies x onto itself last: cx never goes home
    x, y, cx, cy = fresh()
    yield "tuple and kwarg", [(x, 3)], [(x, 3)], {"out": y}, {"out": cy}
    x, y, cx, cy = fresh()
    yield "view", [x[1:]], [x[1:]], {}, {}


def test_copy_home_same_as_triton_in_every_arrangement():
    triton_restore = versions.original_of(interpreter.GridExecutor._restore_args_dev)  # Triton's, not tdebug's
    calls: list[int] = []

    def counted(*args):
        calls.append(1)
        return triton_restore(*args)

    ours = grid_loop._restore_home(counted)
    skipped = set()
    for (name, *ours_args), (_, *triton_args) in zip(_arrangements(), _arrangements()):
        before = len(calls)
        assert _home_after(ours, *ours_args) == _home_after(triton_restore, *triton_args), name
        if len(calls) == before:
            skipped.add(name)
    assert skipped == {"own", "alias, own last", "view"}
