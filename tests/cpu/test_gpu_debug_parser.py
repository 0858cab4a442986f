"""Debug mode's device-assert parser, on real TRITON_DEBUG=1 output captured on the H100."""

from __future__ import annotations

from pathlib import Path

from tdebug.report import Finding
from tdebug.runtime.results import CaseResult, ChildLog, JobResult
from tdebug.sanitize.gpu_debug import attach_asserts, kernel_at, parse_asserts

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "compute_sanitizer"
SCRIPTS = Path(__file__).resolve().parents[1] / "gpu" / "scripts"


def test_device_assert_line():
    (f,) = parse_asserts((FIXTURES / "triton_debug_assert.log").read_text())
    assert f.check == "assert" and f.line == 13 and f.file.endswith("tests/gpu/scripts/assert_fires.py")
    assert f.pids == [(2, 0, 0)] and f.extra["thread"] == [94, 0, 0]
    assert f.message == "device_assert failed: x too big (block [2, 0, 0], thread [94, 0, 0])"
    assert f.source == "triton-debug"


def test_int32_overflow_lines_grouped():
    text = (FIXTURES / "triton_debug_overflow.log").read_text()
    (f,) = parse_asserts(text)
    assert f.check == "overflow" and f.line == 11
    assert "int32 overflow detected for operation mul" in f.message
    assert f.count == text.count("Assertion `int32 overflow") > 1
    assert f.pids == [(0, 0, 0)] and len(f.extra["threads"]) == 4


def test_format_variants():
    text = ("noise\n/k/a.py:7: fn_name: block: [1, 2, 0], thread: [3, 0, 0] Assertion 'bad value' failed.\n"
            "/k/a.py:7: fn_name: block: [5,2,0], thread: [4,0,0] Assertion 'bad value' failed.\n")
    (f,) = parse_asserts(text)
    assert f.kernel == "fn_name" and f.pids == [(1, 2, 0), (5, 2, 0)] and f.count == 2
    assert "2 failing threads in 2 block(s)" in f.message
    assert parse_asserts("RuntimeError: CUDA error: device-side assert triggered\n") == []


def test_kernel_at_finds_the_enclosing_def():
    assert kernel_at(str(SCRIPTS / "assert_fires.py"), 13) == "checked_scale"
    assert kernel_at("/no/such/file.py", 3) == ""


def test_attach_moves_asserts_onto_the_case_the_child_died_in():
    text = (FIXTURES / "triton_debug_assert.log").read_text()
    cuda = Finding(check="exception", message="AcceleratorError: CUDA error: device-side assert triggered")
    result = JobResult(labels=["a", "b", "c"], cases=[
        CaseResult(0, "a", "pass"), CaseResult(1, "b", "error", findings=[cuda], error=cuda.message),
        CaseResult(2, "c", "pass")],
        logs=[ChildLog(0, "", text, 0), ChildLog(2, "", "", 0)])
    attach_asserts(result)
    a, b, c = result.cases
    assert a.status == "pass" and c.status == "pass"
    assert b.status == "assert" and [f.check for f in b.findings] == ["assert"] and "x too big" in b.error
