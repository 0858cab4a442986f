"""Inputs for a case: random tensors in a memory layout that really has the strides it claims.

Layouts (for a shape whose last two dimensions are R x C):
- contiguous: a fresh tensor.
- sliced: the first C columns of a wider tensor: row stride 2*C+3 > C (1-D: every other element).
- transposed: the transpose of a C x R contiguous tensor: strides (1, R) (needs 2 dimensions).
- offset: a view that starts 37 elements into a larger storage.
The whole underlying storage is filled with random data, so a kernel that reads outside the view
reads plausible-looking garbage, as it would on a real allocation.
"""

from __future__ import annotations

import torch

from .spec import Case

TORCH_DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16, "fp64": torch.float64}
OFFSET = 37


def torch_dtype(name: str) -> torch.dtype:
    try:
        return TORCH_DTYPES[name]
    except KeyError:
        raise ValueError(f"unsupported dtype {name!r}: choose from {', '.join(TORCH_DTYPES)}") from None


def layout_applies(layout: str, ndim: int) -> bool:
    return not (layout == "transposed" and ndim < 2)


def generator(case: Case, salt: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(case.seed * 1000003 + salt)


def _base_and_view(shape: tuple[int, ...], layout: str) -> tuple[tuple[int, ...], callable]:
    """The shape of the storage to fill and a function that takes the view of `shape` out of it."""
    if layout == "contiguous":
        return shape, lambda b: b
    if layout == "offset":
        n = 1
        for d in shape:
            n *= d
        return (n + OFFSET,), lambda b: b[OFFSET:].view(shape)
    if layout == "sliced":
        if len(shape) == 1:
            return (2 * shape[0] + 1,), lambda b: b[: 2 * shape[0] : 2]
        wide = shape[:-1] + (2 * shape[-1] + 3,)
        return wide, lambda b: b[..., : shape[-1]]
    if layout == "transposed":
        if len(shape) < 2:
            raise ValueError("the transposed layout needs at least 2 dimensions")
        swapped = shape[:-2] + (shape[-1], shape[-2])
        return swapped, lambda b: b.transpose(-1, -2)
    raise ValueError(f"unknown layout {layout!r}")


def place(values: torch.Tensor, layout: str, device: str, fill: torch.Tensor | None = None) -> torch.Tensor:
    """Put `values` (a CPU tensor) into a new tensor of the given layout on `device`."""
    base_shape, take = _base_and_view(tuple(values.shape), layout)
    if fill is None:
        base = torch.empty(base_shape, dtype=values.dtype)
        base.copy_(torch.randn(base_shape).to(values.dtype) if values.is_floating_point()
                   else torch.zeros(base_shape, dtype=values.dtype))
    else:
        base = fill.to(values.dtype).reshape(base_shape).clone()
    base = base.to(device)
    view = take(base)
    view.copy_(values.to(device))
    return view


def randn(case: Case, shape: tuple[int, ...], *, salt: int = 0, scale: float = 1.0, shift: float = 0.0,
          layout: str | None = None, dtype: str | None = None) -> torch.Tensor:
    """Normal(shift, scale) values in the case's dtype and layout (or the ones given)."""
    gen = generator(case, salt)
    layout = layout or case.layout
    if not layout_applies(layout, len(shape)):
        layout = "contiguous"
    base_shape, _ = _base_and_view(tuple(shape), layout)
    fill = torch.randn(base_shape, generator=gen) * scale + shift
    values = torch.randn(shape, generator=gen) * scale + shift
    return place(values.to(torch_dtype(dtype or case.dtype)), layout, case.device, fill=fill)


def randint(case: Case, shape: tuple[int, ...], high: int, *, salt: int = 0,
            dtype: torch.dtype = torch.int64) -> torch.Tensor:
    """Uniform integers in [0, high), contiguous, on the case's device."""
    gen = generator(case, salt)
    return torch.randint(0, high, shape, generator=gen, dtype=dtype).to(case.device)
