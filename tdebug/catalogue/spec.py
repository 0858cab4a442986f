"""What a catalogue file declares (KernelSpec, Bug) and how a target file is loaded."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

LAYOUTS = ("contiguous", "sliced", "transposed", "offset")
DTYPES = ("fp32", "fp16", "bf16")


@dataclass(frozen=True)
class Case:
    """One launch to check: a shape, a dtype, a memory layout of the inputs, a seed, a device."""

    shape: tuple[int, ...]
    dtype: str = "fp32"
    layout: str = "contiguous"
    seed: int = 0
    device: str = "cpu"
    config: int | None = None  # index into an autotuned kernel's configs; None: the tuner's choice
    variant: str = ""  # a kernel-specific code path, e.g. "causal" (KernelSpec.variants)

    def label(self) -> str:
        text = f"{'x'.join(map(str, self.shape))} {self.dtype} {self.layout}"
        if self.variant:
            text += f" {self.variant}"
        if self.config is not None:
            text += f" config#{self.config}"
        return text


@dataclass
class KernelSpec:
    """Everything the harness needs to build inputs, launch, and judge one catalogue kernel.

    launch(*inputs) runs the Triton kernel(s) and returns the output tensor (or a tuple of them).
    reference(*inputs) is the PyTorch reference; the harness calls it on float64 copies of the inputs.
    make_inputs(case) returns the launcher's positional arguments for a case (tensors in the case's
    layout, made with the case's seed).
    """

    name: str
    launch: Callable[..., Any]
    reference: Callable[..., Any]
    make_inputs: Callable[[Case], tuple]
    shapes: Sequence[tuple[int, ...]]
    default_shape: tuple[int, ...]
    kernel: Any = None  # the @triton.jit / @triton.autotune object (configs, lint, breakpoints)
    quick_shapes: Sequence[tuple[int, ...]] = ()
    dims: Sequence[str] = ()  # names of the shape's dimensions, e.g. ("M", "N", "K")
    complete_shape: Callable[[tuple[int, ...]], tuple[int, ...]] | None = None
    dtypes: Sequence[str] = ("fp32", "fp16", "bf16")  # CPU: bf16 is exact in tdebug.interpreter.semantics.bf16
    gpu_dtypes: Sequence[str] = ("fp32", "fp16", "bf16")
    layouts: Sequence[str] = LAYOUTS
    variants: Sequence[str] = ("",)  # code paths to cover, e.g. ("causal", "full"); make_inputs reads case.variant
    tolerances: dict[str, tuple[float, float]] = field(default_factory=dict)  # dtype -> (rtol, atol)
    baseline: Callable[..., Any] | None = None  # the strong PyTorch op to benchmark against
    flops: Callable[[tuple[int, ...]], float] | None = None
    bytes: Callable[[tuple[int, ...], int], float] | None = None  # (shape, element size) -> bytes moved
    bench_shapes: Sequence[tuple[int, ...]] = ()
    bench_cases: Sequence[dict] = ()  # extra keyword variants per bench shape (e.g. causal=True)

    def normalize_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        if self.complete_shape is not None:
            return tuple(self.complete_shape(tuple(shape)))
        if len(shape) != len(self.default_shape):
            names = "x".join(self.dims) if self.dims else f"{len(self.default_shape)} dimensions"
            raise ValueError(f"{self.name} takes a shape of {names}, got {'x'.join(map(str, shape))}")
        return tuple(shape)


@dataclass
class Bug:
    """The seeded bug in a bugs/ file: which kernel it breaks, its story and who catches it.

    caught_by names detectors: "check" (reference check with poisoning and adversarial layouts),
    "sanitize:<check>" for the interpreter sanitizer (bounds, uninit, race, unwritten, assert, overflow, nan),
    "symbolic" (triton-viz's sanitizer), "lint" (autotune lint), "bench" (a performance bug),
    "gpu:memcheck", "gpu:initcheck", "gpu:racecheck", "gpu:debug", "gpu:guard".
    """

    fixes: str
    title: str
    symptom: str
    hints: Sequence[str]
    caught_by: Sequence[str]
    difficulty: str = "medium"
    shape: tuple[int, ...] | None = None  # the shape that shows the symptom
    layout: str = "contiguous"
    dtype: str = "fp32"
    gpu_only: bool = False
    config: int | None = None  # the autotune config (index) that shows it; None: every config


@dataclass
class Target:
    path: Path
    module: ModuleType
    spec: KernelSpec | None
    bug: Bug | None


class TargetError(Exception):
    """A target file that cannot be used (missing, not Python, broken import)."""


def import_file(path: Path, module_name: str | None = None) -> ModuleType:
    path = path.resolve()
    name = module_name or f"tdebug_target_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise TargetError(f"{path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    # A catalogue file may import its siblings (kernels.add); make the repository root importable.
    root = str(path.parent.parent)
    if root not in sys.path:
        sys.path.insert(0, root)
    spec.loader.exec_module(module)
    return module


def load_target(path: str | Path) -> Target:
    path = Path(path)
    if not path.is_file():
        raise TargetError(f"no such file: {path}")
    module = import_file(path)
    spec = getattr(module, "SPEC", None)
    bug = getattr(module, "BUG", None)
    if spec is not None and not isinstance(spec, KernelSpec):
        raise TargetError(f"{path}: SPEC is not a tdebug.KernelSpec")
    return Target(path=path, module=module, spec=spec, bug=bug)


def has_spec(path: Path) -> bool:
    """Cheap test (no import) for a catalogue file: it assigns SPEC = ...KernelSpec(...)."""
    try:
        text = path.read_text()
    except OSError:
        return False
    return "KernelSpec(" in text and "SPEC" in text
