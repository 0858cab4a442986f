"""What a catalogue file declares and how its cases are planned and judged: KernelSpec and Bug, shapes,
inputs in real memory layouts, the case matrix, output poisoning, the kernels/ and bugs/ file lists,
and the float64 reference comparison (here, not in check/, because the runtime judges every case it runs)."""

from .spec import Bug, Case, KernelSpec, load_target

__all__ = ["Bug", "Case", "KernelSpec", "load_target"]
