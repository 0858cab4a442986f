"""Install every patch tdebug makes (interpreter, store records, sanitizer, viz guard and trace, symbolic engine where
triton-viz works) and print what tdebug.interpreter.versions says about them, as JSON (test_versions.py)."""

import json
import os

os.environ["TRITON_INTERPRET"] = "1"

from tdebug.interpreter import patches, program_axis, stores, versions  # noqa: E402
from tdebug.sanitize.session import SanitizerSession  # noqa: E402
from tdebug.viz import safe_launch, trace  # noqa: E402

patches.install()
stores.install()
SanitizerSession().install()
safe_launch.install()
trace.install(trace.TraceSession(sink=lambda launch: None))
program_axis.install()  # the batched engine's layer (installed at the first batched launch, outermost)
if versions.triton_viz_problem() is None:
    from tdebug.sanitize.symbolic import SymbolicSession

    SymbolicSession().install()
print(json.dumps({"version": versions.TRITON_VERSION, "patched": sorted(versions.PATCHED),
                  "problems": versions.problems(), "unregistered": versions.unregistered()}))
