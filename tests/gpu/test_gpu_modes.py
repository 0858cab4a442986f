"""GPU modes on a real GPU: compute-sanitizer (memcheck, initcheck), debug mode (device asserts), guard bands.

Skipped without CUDA (and the compute-sanitizer tests without the tool). On the H100: scripts/gpu_tests.sh.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tdebug.catalogue.spec import Case
from tdebug.runtime.harness import run_job
from tdebug.runtime.job import Job
from tdebug.sanitize.compute_sanitizer import find_compute_sanitizer, sanitize_on_gpu
from tdebug.sanitize.gpu_debug import run_debug

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
SCRIPTS = HERE / "scripts"
DATA = HERE / "data"

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]
needs_cs = pytest.mark.skipif(find_compute_sanitizer() is None, reason="needs compute-sanitizer")


def script_job(name: str) -> Job:
    return Job(target=str(SCRIPTS / name), kind="script")


def spec_job(path: Path, shapes, guard: bool = False, dtype: str = "fp32") -> Job:
    return Job(target=str(path), kind="spec", guard=guard, pin_autotune=True,
               cases=tuple(Case(tuple(s), dtype, "contiguous", 0, "cuda") for s in shapes))


# The fixed kernels the clean-run tests use. matmul in fp16: in fp32, tl.dot runs in TF32 on the H100
# and misses the catalogue's fp32 tolerance (a reference-check matter, seen in every mode alike).
FIXED = [("add.py", (1000,), "fp32"), ("matmul.py", (129, 127, 65), "fp16")]


def line_of(path: Path, text: str) -> int:
    return next(i for i, ln in enumerate(path.read_text().splitlines(), 1) if text in ln)


def findings(result, check: str | None = None):
    return [f for c in result.cases for f in c.findings if check is None or f.check == check]


@needs_cs
def test_memcheck_reports_missing_mask_read_with_line_and_distance():
    result = sanitize_on_gpu(script_job("oob_read.py"), ["memcheck"], None, 300)
    bounds = findings(result, "bounds")
    assert bounds, result.cases
    f = bounds[0]
    assert f.file.endswith("oob_read.py")
    assert f.line in (line_of(SCRIPTS / "oob_read.py", "x = tl.load"), line_of(SCRIPTS / "oob_read.py", "y = tl.load"))
    assert f.extra["access"] == "read" and f.extra["tool"] == "memcheck"
    assert f.kernel == "add_load_nomask"
    assert f.extra["distance"][0] > 0 and f.extra["alloc_size"] == 4000
    assert result.cases[0].status == "fail"


@needs_cs
def test_memcheck_reports_missing_mask_write():
    result = sanitize_on_gpu(script_job("oob_write.py"), ["memcheck"], None, 300)
    writes = [f for f in findings(result, "bounds") if f.extra.get("access") == "write"]
    assert writes, result.cases
    assert writes[0].line == line_of(SCRIPTS / "oob_write.py", "tl.store(out_ptr + offs, x + y)")


@needs_cs
def test_initcheck_reports_read_of_torch_empty():
    result = sanitize_on_gpu(script_job("uninit_read.py"), ["initcheck"], None, 300)
    uninit = [f for f in findings(result, "uninit") if f.kernel == "add_bias"]
    assert uninit, result.cases
    assert uninit[0].line == line_of(SCRIPTS / "uninit_read.py", "b = tl.load")


@needs_cs
def test_case_markers_attribute_errors_to_their_case_and_keep_log(tmp_path):
    log = tmp_path / "cs.log"
    result = sanitize_on_gpu(spec_job(DATA / "nomask_store_spec.py", [(1000,), (1024,)]), ["memcheck"], str(log), 300)
    by_label = {c.label.split()[0]: c for c in result.cases}
    assert by_label["1000"].status == "fail" and findings_of(by_label["1000"], "bounds")
    assert by_label["1024"].status == "pass", by_label["1024"]
    assert "Invalid __global__ write" in log.read_text()


def findings_of(case, check):
    return [f for f in case.findings if f.check == check]


@needs_cs
@pytest.mark.parametrize("kernel,shape,dtype", FIXED)
def test_fixed_kernels_clean_under_memcheck_and_initcheck(kernel, shape, dtype):
    job = spec_job(ROOT / "kernels" / kernel, [shape], dtype=dtype)
    result = sanitize_on_gpu(job, ["memcheck", "initcheck"], None, 300)
    assert not result.fatal
    assert all(c.status == "pass" for c in result.cases), [(c.status, c.findings, c.comparisons) for c in result.cases]


def test_debug_mode_reports_assert_and_goes_on_to_the_next_case():
    result = run_debug(spec_job(DATA / "assert_spec.py", [(4096,), (1000,)]), timeout=300, tee=False)
    first, second = result.cases
    assert first.status == "assert", first
    f = first.findings[0]
    assert f.check == "assert" and "x too big" in f.message
    assert f.line == line_of(DATA / "assert_spec.py", "    tl.device_assert(")
    assert f.pids == [(8, 0, 0)]  # element 2048 lies in block 8 (BLOCK=256)
    assert f.extra["thread"] == [0, 0, 0]
    assert second.status == "pass", second


def test_debug_mode_cli_exits_nonzero_with_file_line_block_thread():
    proc = subprocess.run([sys.executable, "-m", "tdebug", "run", str(SCRIPTS / "assert_fires.py"), "--mode", "debug"],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    line = line_of(SCRIPTS / "assert_fires.py", "    tl.device_assert(")
    assert f"assert_fires.py:{line}: assert: device_assert failed: x too big (block [2, 0, 0]" in out, out


def test_debug_mode_clean_kernels_pass():
    for kernel, shape, dtype in FIXED:
        result = run_debug(spec_job(ROOT / "kernels" / kernel, [shape], dtype=dtype), timeout=300, tee=False)
        assert [c.status for c in result.cases] == ["pass"], result.cases


def test_guard_bands_catch_out_of_bounds_write_and_stay_quiet_on_fixed_kernels():
    result = run_job(spec_job(DATA / "nomask_store_spec.py", [(1000,), (1024,)], guard=True), mode="gpu", timeout=300)
    bad, good = result.cases
    writes = [f for f in bad.findings if f.source == "guard" and f.check == "bounds"]
    assert writes and writes[0].tensor == "output" and writes[0].extra["side"] == "after"
    assert writes[0].extra["nearest"] == 1 and writes[0].extra["farthest"] == 24
    assert good.status == "pass", good
    for kernel, shape, dtype in FIXED:
        job = spec_job(ROOT / "kernels" / kernel, [shape], guard=True, dtype=dtype)
        result = run_job(job, mode="gpu", timeout=300)
        assert [c.status for c in result.cases] == ["pass"], result.cases


@needs_cs
def test_memcheck_padding_catches_a_read_just_past_a_small_table():
    """An out-of-range embedding id reads one row past a 49 KB table: without --padding that row can lie in
    the next allocation (small cudaMallocs are packed) and memcheck stays silent."""
    story = ROOT / "bugs" / "11_embedding_out_of_range_id.py"
    if not story.exists():
        pytest.skip("bugs/11_embedding_out_of_range_id.py not present")
    job = Job(target=str(SCRIPTS / "run_story.py"), kind="script", argv=(str(story),))
    result = sanitize_on_gpu(job, ["memcheck"], None, 300)
    reads = [f for f in findings(result, "bounds") if f.extra.get("access") == "read"]
    assert reads and reads[0].kernel == "embedding_kernel", result.cases
