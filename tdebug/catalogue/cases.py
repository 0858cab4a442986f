"""The case matrix: shapes x dtypes x layouts x autotune configs for one KernelSpec."""

from __future__ import annotations

from collections.abc import Sequence

from .inputs import layout_applies
from .spec import Case, KernelSpec


def autotune_configs(kernel) -> list:
    """The configs of an @triton.autotune kernel (possibly under @heuristics), or [] if not autotuned."""
    seen = 0
    while kernel is not None and seen < 5:
        if kernel.__class__.__name__ == "Autotuner":
            return list(kernel.configs)
        kernel = getattr(kernel, "fn", None)
        seen += 1
    return []


def plan_cases(spec: KernelSpec, *, quick: bool = False, device: str = "cpu", seed: int = 0,
               dtypes: Sequence[str] | None = None, layouts: Sequence[str] | None = None,
               shapes: Sequence[Sequence[int]] | None = None, configs: Sequence[int] | None = None,
               variants: Sequence[str] | None = None) -> list[Case]:
    """Every case to check. Autotuned kernels are checked in every config separately: each config runs on
    every shape (contiguous, first dtype); the other dtypes and layouts run in config 0 (on a GPU, in
    the tuner's own choice is config 0 too: the harness pins configs so results are reproducible). Quick
    CPU plans run bf16 on contiguous inputs only: layouts change addresses, which fp32 and fp16 cover."""
    if shapes:
        shape_list = [spec.normalize_shape(tuple(s)) for s in shapes]
    elif quick:
        shape_list = [tuple(s) for s in (spec.quick_shapes or spec.shapes[:2])]
    else:
        shape_list = [tuple(s) for s in spec.shapes]
    dtype_list = list(dtypes) if dtypes else list(spec.gpu_dtypes if device == "cuda" else spec.dtypes)
    layout_list = list(layouts) if layouts else list(spec.layouts)
    n_configs = len(autotune_configs(spec.kernel))
    config_list: list[int | None] = list(configs) if configs is not None else (
        list(range(n_configs)) if n_configs else [None])
    cases: list[Case] = []
    first_config = config_list[0]
    variant_list = list(variants) if variants else list(spec.variants)
    for shape in shape_list:
        for variant in variant_list:
            for dtype in dtype_list:
                for layout in layout_list:
                    if not layout_applies(layout, len(shape)):
                        continue
                    if quick and device == "cpu" and dtype == "bf16" and layout != "contiguous" and not layouts:
                        continue
                    cases.append(Case(shape, dtype, layout, seed, device, first_config, variant))
            for config in config_list[1:]:
                cases.append(Case(shape, dtype_list[0], "contiguous", seed, device, config, variant))
    return cases
