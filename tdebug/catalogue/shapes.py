"""Shape strings ("129x127") and the adversarial shape lists used by the case matrix."""

from __future__ import annotations

import click


def parse_shape(text: str) -> tuple[int, ...]:
    """'129x127' -> (129, 127). Every dimension a positive integer; raises ValueError otherwise."""
    parts = text.strip().lower().split("x")
    if not text.strip() or any(not p.strip() for p in parts):
        raise ValueError(f"bad shape {text!r}: expected positive integers joined by 'x', e.g. 129x127")
    dims = []
    for p in parts:
        try:
            d = int(p)
        except ValueError:
            raise ValueError(f"bad shape {text!r}: {p!r} is not an integer") from None
        if d <= 0:
            raise ValueError(f"bad shape {text!r}: every dimension must be positive, got {d}")
        dims.append(d)
    return tuple(dims)


class ShapeType(click.ParamType):
    name = "shape"

    def convert(self, value, param, ctx):
        if isinstance(value, tuple):
            return value
        try:
            return parse_shape(value)
        except ValueError as e:
            self.fail(str(e), param, ctx)


SHAPE = ShapeType()


def edge_sizes(block: int, limit: int | None = None) -> list[int]:
    """Sizes where kernels break: 1, the block boundary +/- 1, a prime and a pow2 +/- 1."""
    sizes = {1, block - 1, block, block + 1, 2 * block + 1, 127, 129, 97}
    sizes = sorted(s for s in sizes if s >= 1 and (limit is None or s <= limit))
    return sizes
