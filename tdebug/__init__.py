"""tdebug: a sanitizer and debugging harness for Triton kernels.

The public names that catalogue files (kernels/, bugs/) use: KernelSpec, Bug, Case and the input helpers.
"""

from .catalogue.inputs import randint, randn, torch_dtype
from .catalogue.shapes import edge_sizes
from .catalogue.spec import Bug, Case, KernelSpec

__all__ = ["Bug", "Case", "KernelSpec", "edge_sizes", "randint", "randn", "torch_dtype"]
__version__ = "0.1.0"
