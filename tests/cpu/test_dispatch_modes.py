"""The script's own torch dispatch modes and tensor subclasses under the sanitizer (tests/cpu/data/dispatch_modes.py):
the poisoner calls torch.empty & co. past the sanitizer's TorchWrites only when that is the only mode and no argument
dispatches through Python, so a script's mode still sees every factory and a FakeTensorMode still makes fakes."""

from pathlib import Path

import pytest

from tdebug.sanitize.jobs import sanitize_job
from tdebug.sanitize.sweep import sanitize_script

SCRIPT = Path(__file__).parent / "data" / "dispatch_modes.py"


@pytest.mark.parametrize("executor", ["serial", "batched"])
def test_a_scripts_dispatch_modes_see_its_factories(executor):
    job = sanitize_job(SCRIPT, "script").but(executor=executor)
    result = sanitize_script(job, 240, None)
    assert not result.fatal, result.fatal
    (case,) = result.cases
    assert case.status == "pass", [f.message for f in case.findings] or case.error
    assert case.findings == []
