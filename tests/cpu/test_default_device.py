"""A script that sets torch's default device (tests/cpu/data/default_device.py, `meta` standing in for `cuda` on a
CPU): under tdebug its own allocations still follow the default, and tdebug's own tensors do not (issue 47's
mixed-device errors and CUDA tensors reaching numpy on a GPU machine came from these two)."""

from pathlib import Path

import pytest

from tdebug.sanitize.jobs import sanitize_job
from tdebug.sanitize.sweep import sanitize_script

SCENARIOS = Path(__file__).parent / "data" / "default_device.py"


@pytest.mark.parametrize("executor", ["serial", "batched"])
@pytest.mark.parametrize("name", ["context", "whole_script", "internals"])
def test_default_device_is_the_scripts_alone(name, executor):
    """context: torch.empty/zeros inside `with torch.device("meta")` land on meta while tdebug poisons torch.empty;
    whole_script: the same under torch.set_default_device; internals: tdebug's write tracking, unwritten check and
    bounds over strided views of torch.empty buffers with a default device that holds no data."""
    job = sanitize_job(SCENARIOS, "script", argv=[name]).but(executor=executor)
    result = sanitize_script(job, 240, None)
    assert not result.fatal, result.fatal
    (case,) = result.cases
    assert case.status == "pass", [f.message for f in case.findings] or case.error
    assert case.findings == []
