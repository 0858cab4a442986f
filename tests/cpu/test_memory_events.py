"""The engine's memory events (tdebug.interpreter.hooks.memory_events): every load, store and atomic reaches the checks
as one Access, outermost listener first; a listener narrows the mask the ones inside it see, or refuses the op."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

SCRIPT = """
import json, os
os.environ["TRITON_INTERPRET"] = "1"
import numpy as np
import torch, triton, triton.language as tl
from tdebug.interpreter.hooks import memory_events
from tdebug.runtime.recipe import Recipe, install
from tdebug.sanitize.session import SanitizerSession

@triton.jit
def kernel(x_ptr, y_ptr, lock_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)  # no mask: reads past x (n < BLOCK)
    tl.store(y_ptr + offs, x * 2.0, mask=offs < n)
    tl.atomic_add(y_ptr + offs, 1.0, mask=offs < BLOCK)  # masked, but past y
    tl.atomic_cas(lock_ptr + 4, 0, 1)  # no mask, past the one-word lock: refused

class Seen:
    def __init__(self, name):
        self.name, self.events = name, []
    def before(self, access):
        mask = access.mask
        lanes = None if mask is None else int(np.asarray(mask.data).sum())
        self.events.append(["before", access.op, access.kind, access.unmasked, lanes])
    def after(self, access, result):
        self.events.append(["after", access.op, access.refused, np.asarray(result.data).tolist()
                            if access.op == "create_atomic_cas" else None])

outer, inner = Seen("outer"), Seen("inner")
memory_events.listen("test", outer)  # outside every check
memory_events.listen("probe", inner)  # inside every check: sees what the sanitizer let through
installed = install(Recipe(interpret=True, store_records=True), SanitizerSession(["bounds"]))
installed.sanitizer.begin_case()
x, y, lock = torch.randn(10), torch.randn(10), torch.zeros(1, dtype=torch.int32)
kernel[(1,)](x, y, lock, 10, BLOCK=16)
findings = installed.sanitizer.end_case()
order = {op: memory_events.listeners(op) for op in ("create_atomic_cas", "create_masked_store")}
print(json.dumps({"outer": outer.events, "inner": inner.events, "order": order,
                  "findings": sorted(f.check + ":" + f.tensor for f in findings), "lock": lock.tolist()}))
"""


def test_listeners_see_each_access_in_layer_order_and_a_refused_op_goes_no_further(tmp_path):
    script = tmp_path / "events.py"
    script.write_text(SCRIPT)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                         env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout.splitlines()[-1])
    assert seen["order"] == {"create_atomic_cas": ["test", "locks", "sanitizer", "probe"],
                             "create_masked_store": ["test", "sanitizer", "stores", "probe"]}
    load, store, atomic, cas = "create_masked_load", "create_masked_store", "create_atomic_rmw", "create_atomic_cas"
    # The outermost listener sees the kernel's own masks (16 lanes: the unmasked load's all-true one, flagged)
    # and the refused atomic_cas with the zeros the sanitizer returned in its place.
    assert seen["outer"] == [
        ["before", load, "load", True, 16], ["after", load, False, None],
        ["before", store, "store", False, 10], ["after", store, False, None],
        ["before", atomic, "atomic", False, 16], ["after", atomic, False, None],
        ["before", cas, "atomic", False, None], ["after", cas, True, [0]],
    ]
    # Inside the sanitizer: the lanes past x and y are cut from the masks, and the atomic_cas never arrives.
    assert seen["inner"] == [
        ["before", load, "load", True, 10], ["after", load, False, None],
        ["before", store, "store", False, 10], ["after", store, False, None],
        ["before", atomic, "atomic", False, 10], ["after", atomic, False, None],
    ]
    assert seen["findings"] == ["bounds:lock_ptr", "bounds:x_ptr", "bounds:y_ptr"]
    assert seen["lock"] == [0]
