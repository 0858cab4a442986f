"""tdebug: a sanitizer and debugging harness for Triton kernels.

The public names that catalogue files (kernels/, bugs/) use: KernelSpec, Bug, Case and the input helpers.
"""

from .catalogue.inputs import randint, randn, torch_dtype
from .catalogue.shapes import edge_sizes
from .catalogue.spec import Bug, Case, KernelSpec

__all__ = ["Bug", "Case", "KernelSpec", "edge_sizes", "explain", "randint", "randn", "torch_dtype"]
__version__ = "0.1.0"


def explain(out, expected, *, rtol: float | None = None, atol: float | None = None, file=None):
    """Print where `out` differs from `expected` (the programs and store lines of the launches that wrote
    it, the error pattern, a `tdebug run ... --break LINE --pid P` that stops there) inside a script run
    under tdebug's interpreter; returns the Localisation, or None. See tdebug.runtime.localise.explain."""
    from .runtime.localise import explain as _explain

    return _explain(out, expected, rtol=rtol, atol=atol, file=file)
