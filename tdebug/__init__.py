"""tdebug: a sanitizer and debugging harness for Triton kernels.

The public names that catalogue files (kernels/, bugs/) use: KernelSpec, Bug, Case and the input helpers.
They load on first use (PEP 562), so `import tdebug` stays cheap: pytest imports tdebug's plugin
(tdebug.pytest_plugin, a pytest11 entry point) in every session of an environment that has tdebug.
"""

from __future__ import annotations

import importlib
from typing import Any

_PUBLIC = {
    "randint": ".catalogue.inputs", "randn": ".catalogue.inputs", "torch_dtype": ".catalogue.inputs",
    "edge_sizes": ".catalogue.shapes",
    "Bug": ".catalogue.spec", "Case": ".catalogue.spec", "KernelSpec": ".catalogue.spec",
}

__all__ = sorted(_PUBLIC)
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name not in _PUBLIC:
        raise AttributeError(f"module 'tdebug' has no attribute {name!r}")
    value = getattr(importlib.import_module(_PUBLIC[name], __name__), name)
    globals()[name] = value
    return value
