"""Install every patch tdebug makes (interpreter, store records, sanitizer, size caps, reproducers, followed launches,
viz guard and trace, symbolic engine where triton-viz works) and print what tdebug.interpreter.versions says about
them, as JSON (test_versions.py). With `reversed`: the parts installed in the opposite order."""

import atexit
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

os.environ["TRITON_INTERPRET"] = "1"

from tdebug.interpreter import patches, versions  # noqa: E402
from tdebug.interpreter.batched import grid_loop, program_axis
from tdebug.interpreter.hooks import limits, memory_events, stores
from tdebug.runtime.follow import Follower, serialise_launches  # noqa: E402
from tdebug.runtime.reproducers import ReproWriter  # noqa: E402
from tdebug.sanitize.session import SanitizerSession  # noqa: E402
from tdebug.viz import safe_launch, trace  # noqa: E402

session = SanitizerSession()
folder = Path(tempfile.mkdtemp(prefix="tdebug-versions-"))
atexit.register(shutil.rmtree, folder, ignore_errors=True)  # ours: nothing of it outlives the run
parts = [
    patches.install,
    stores.install,
    session.install,
    lambda: limits.install(limits.Limits(1 << 20, 1 << 40)),
    lambda: ReproWriter(folder / "repro").install(session),
    lambda: Follower(folder / "follow", session, active=False).install(),
    serialise_launches,
    safe_launch.install,
    lambda: trace.install(trace.TraceSession(sink=lambda launch: None)),
    program_axis.install,  # the batched engine's layer (installed at the first batched launch, outermost)
]
if versions.triton_viz_problem() is None:
    from tdebug.sanitize.symbolic import SymbolicSession

    parts.append(SymbolicSession().install)
for part in reversed(parts) if sys.argv[1:] == ["reversed"] else parts:
    part()
layers = {}
for owner, name, _ in versions._ORIGINALS.values():
    layers[f"{versions.owner_label(owner)}.{name}"] = versions.layers_of(owner, name)
listening = {op: memory_events.listeners(op) for op in memory_events.OPS}
launching = {hook: grid_loop.LISTENING.names(hook) for hook in ("around_launch", "on_launch", "host_args",
                                                                 "before_host_args", "on_host_args", "on_launch_end")}
print(json.dumps({"version": versions.TRITON_VERSION, "patched": sorted(versions.PATCHED),
                  "problems": versions.problems(), "unregistered": versions.unregistered(), "layers": layers,
                  "listening": listening, "launching": launching}))
