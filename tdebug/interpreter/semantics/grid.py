"""Launch grids as compiled Triton reads them: an int, a list or a tuple, or a function of the launch's
arguments returning one; the first three entries count (FlagGems launches `kernel[(M, n, 1, 1)]`), a
missing entry is 1. Triton's interpreter takes tuples of at most three entries only."""

from __future__ import annotations

import functools

from ..frames import KernelError
from ..versions import bind, patcher

patch = patcher("grid")


class GridError(KernelError, TypeError):
    """A grid that compiled Triton would not launch either."""


def normalize_grid(grid, meta) -> tuple[int, int, int]:
    if callable(grid):
        grid = grid(meta)
    if not isinstance(grid, (list, tuple)):
        grid = (grid,)
    if not grid:
        raise GridError("the launch grid is empty: give at least one dimension, e.g. (n_programs,)")
    try:
        dims = [int(d) for d in grid[:3]]
    except (TypeError, ValueError):
        raise GridError(f"the launch grid must hold integers, got {grid!r}") from None
    return dims[0], (dims + [1, 1])[1], (dims + [1, 1])[2]


def install() -> None:
    from triton.runtime import interpreter

    def make(original):
        @functools.wraps(original)
        def __init__(*args, **kwargs):
            call = bind(original, args, kwargs)
            grid = call.arguments["grid"]
            call.arguments["grid"] = lambda meta: normalize_grid(grid, meta)
            return original(*call.args, **call.kwargs)
        return __init__

    patch(interpreter.GridExecutor, "__init__", make)
