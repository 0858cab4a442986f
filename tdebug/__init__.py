"""tdebug: a sanitizer and debugging harness for Triton kernels.

The public names that catalogue files (kernels/, bugs/) use: KernelSpec, Bug, Case and the input helpers.
They load on first use (PEP 562), so `import tdebug` stays cheap: pytest imports tdebug's plugin
(tdebug.pytest_plugin, a pytest11 entry point) in every session of an environment that has tdebug.
"""

from __future__ import annotations

import importlib

__all__ = ["Bug", "Case", "KernelSpec", "edge_sizes", "explain", "randint", "randn", "torch_dtype"]
__version__ = "0.1.0"

# Loaded on first use, so that the command line (a parent process that only starts workers) never imports torch.
_HOMES = {"randint": "catalogue.inputs", "randn": "catalogue.inputs", "torch_dtype": "catalogue.inputs",
          "edge_sizes": "catalogue.shapes", "Bug": "catalogue.spec", "Case": "catalogue.spec",
          "KernelSpec": "catalogue.spec"}


def __getattr__(name: str):
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'tdebug' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{home}", __name__), name)
    globals()[name] = value
    return value


def explain(out, expected, *, rtol: float | None = None, atol: float | None = None, file=None):
    """Print where `out` differs from `expected` (the programs and store lines of the launches that wrote
    it, the error pattern, a `tdebug run ... --break LINE --pid P` that stops there) inside a script run
    under tdebug's interpreter; returns the Localisation, or None. See tdebug.runtime.localise.explain."""
    from .runtime.localise import explain as _explain

    return _explain(out, expected, rtol=rtol, atol=atol, file=file)
