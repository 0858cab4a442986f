"""The GPU's merged report (tdebug/sanitize/combined.py) from hand-made engine results, the interpreter pass's
size caps on a real interpreter run, and `tdebug sanitize` on a machine without a GPU (unchanged)."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from tdebug.cli import cli
from tdebug.cli.common import CouldNotRun
from tdebug.cli.sanitize import plan_engines
from tdebug.report import Finding
from tdebug.runtime.results import CaseResult, JobResult
from tdebug.sanitize.combined import engine_names, merge_engines, tag_gpu_run

SCENARIOS = Path(__file__).parent / "data" / "sanitize_scenarios.py"
KERNEL = "/x/script.py"


def cs_finding(check: str, line: int, tool: str = "memcheck") -> Finding:
    return Finding(check=check, message=f"{tool} says {check}", kernel="k", file="script.py", line=line,
                   source="compute-sanitizer", extra={"tool": tool})


def td_finding(check: str, line: int) -> Finding:
    return Finding(check=check, message=f"tdebug says {check}", kernel="k", file=KERNEL, line=line,
                   tensor="out_ptr")


def job(*cases: CaseResult) -> JobResult:
    return JobResult(kernel="script.py", labels=[c.label for c in cases], cases=list(cases))


def test_a_finding_both_engines_make_is_shown_once_naming_both():
    gpu = job(CaseResult(0, "script.py", "fail", [cs_finding("bounds", 12), cs_finding("uninit", 14, "initcheck")]))
    interp = job(CaseResult(0, "script.py", "fail", [td_finding("bounds", 12), td_finding("race", 20)]))
    result, notes, coverage = merge_engines(gpu, interp)
    (case,) = result.cases
    by = {(f.check, f.line): f for f in case.findings}
    assert sorted(by) == [("bounds", 12), ("race", 20), ("uninit", 14)]
    assert engine_names(by[("bounds", 12)]) == ["tdebug interpreter", "compute-sanitizer memcheck"]
    assert by[("bounds", 12)].tensor == "out_ptr"  # tdebug's record kept: it names the tensor
    assert by[("bounds", 12)].extra["also"] == "memcheck says bounds"
    assert engine_names(by[("uninit", 14)]) == ["compute-sanitizer initcheck"]
    assert engine_names(by[("race", 20)]) == ["tdebug interpreter"]
    assert case.status == "fail" and notes == [] and coverage == []


def test_the_scripts_exception_on_both_devices_is_one_finding_and_no_stop():
    """The script raised at the same line in the GPU run and in the interpreter pass: it ends there on both
    devices, so the interpreter pass checked all the script ran (no note), and the exception is shown once."""
    boom = Finding(check="exception", message="TypeError: bad call", file=KERNEL, line=8)  # source: the default
    gpu = tag_gpu_run(job(CaseResult(0, "script.py", "error", [boom], error=boom.message)))
    interp = job(CaseResult(0, "script.py", "error", [boom]))
    result, notes, _ = merge_engines(gpu, interp)
    (f,) = result.cases[0].findings
    assert engine_names(f) == ["tdebug interpreter", "the run on the GPU"]
    assert result.cases[0].status == "error" and notes == []
    elsewhere = Finding(check="exception", message="RuntimeError: interpreter only", file=KERNEL, line=20)
    result, notes, _ = merge_engines(gpu, job(CaseResult(0, "script.py", "error", [elsewhere])))
    (f,) = result.cases[0].findings  # the interpreter pass broke where the GPU run did not: a note, not a finding
    assert engine_names(f) == ["the run on the GPU"] and len(notes) == 1 and "stopped" in notes[0]


def test_a_detection_raised_in_the_kernel_is_a_finding_beside_the_gpus_hang():
    """tdebug's spin detection ends the interpreter pass with the kernel's exception (FlagNeverSet): on the GPU the
    compiled run hangs. Both are findings, as the CPU path reports the exception: no 'stopped' note."""
    spin = Finding(check="exception", message="FlagNeverSet: hang: program 0 spins ...", file=KERNEL, line=34,
                   extra={"kernel_error": True})
    hang = Finding(check="hang", message="hang: no result after 120 s")
    gpu = tag_gpu_run(job(CaseResult(0, "script.py", "hang", [hang])))
    result, notes, _ = merge_engines(gpu, job(CaseResult(0, "script.py", "error", [spin])))
    assert sorted((f.check, f.line) for f in result.cases[0].findings) == [("exception", 34), ("hang", 0)]
    assert notes == [] and result.cases[0].status == "hang"


def test_the_worker_marks_tdebugs_detections_raised_as_exceptions(monkeypatch):
    from tdebug.interpreter import frames
    from tdebug.runtime.worker import exception_finding
    from tdebug.sanitize.locks import FlagNeverSet

    monkeypatch.setattr(frames, "library_dirs", lambda: ())  # no Triton import here (a neighbour test stubs it)

    for exc, marked in ((FlagNeverSet("hang: program 0 spins"), True), (ValueError("the script's own"), False)):
        try:
            raise exc
        except Exception as caught:  # noqa: BLE001 - a traceback as the worker sees one
            f = exception_finding(caught)
        assert f.check == "exception" and bool(f.extra.get("kernel_error")) is marked


def test_interpreter_only_detection_fails_a_case_the_gpu_passed():
    gpu = job(CaseResult(0, "script.py", "pass"))
    interp = job(CaseResult(0, "script.py", "fail", [td_finding("unwritten", 30)]))
    result, notes, _ = merge_engines(gpu, interp)
    assert result.cases[0].status == "fail"
    assert [f.check for f in result.cases[0].findings] == ["unwritten"]
    assert notes == []


def test_an_interpreter_pass_that_stopped_is_a_note_and_its_unwritten_are_dropped():
    stop = Finding(check="not-checked", message="launch of big not interpreted: grid of programs 99 is over the "
                                                "cap of 2 (--max-programs); ...", kernel="big")
    gpu = job(CaseResult(0, "script.py", "pass"))
    interp = job(CaseResult(0, "script.py", "error", [stop, td_finding("unwritten", 30), td_finding("race", 9)]))
    result, notes, _ = merge_engines(gpu, interp)
    assert [f.check for f in result.cases[0].findings] == ["race"]  # found before the stop: stands
    assert any("over the cap" in n and "checked only before it" in n for n in notes)
    assert any("unwritten outputs not judged" in n for n in notes)


@pytest.mark.parametrize("failure", ["exception", "dtype", "crash"])
def test_an_interpreter_failure_is_never_a_finding_of_the_kernel(failure):
    gpu = job(CaseResult(0, "script.py", "pass"))
    interp = job(CaseResult(0, "script.py", "error", [Finding(check=failure, message="it broke")]))
    result, notes, _ = merge_engines(gpu, interp)
    assert result.cases[0].status == "pass" and result.cases[0].findings == []
    assert len(notes) == 1 and "stopped" in notes[0] and "NOT" not in notes[0].split("(")[0]


def test_hang_and_fatal_of_the_interpreter_pass_are_notes():
    gpu = job(CaseResult(0, "script.py", "pass"))
    _, notes, _ = merge_engines(gpu, job(CaseResult(0, "script.py", "hang", [Finding(check="hang", message="slow")])))
    assert "--timeout" in notes[0]
    _, notes, _ = merge_engines(gpu, JobResult(fatal="cannot import"))
    assert "could not start" in notes[0]


def test_cases_matched_by_label_and_coverage_said():
    gpu = job(CaseResult(0, "8 fp16 contiguous", "pass"), CaseResult(1, "8 bf16 contiguous", "pass"))
    interp = job(CaseResult(0, "8 fp32 contiguous", "pass"), CaseResult(1, "8 fp16 contiguous", "fail",
                                                                          [td_finding("race", 3)]))
    result, notes, coverage = merge_engines(gpu, interp)
    assert [c.label for c in result.cases] == ["8 fp16 contiguous", "8 bf16 contiguous", "8 fp32 contiguous"]
    assert result.cases[0].status == "fail"
    assert any("compute-sanitizer only" in c and "bf16" in c for c in coverage)
    assert any("tdebug interpreter only" in c for c in coverage)
    assert notes == []


def test_engine_plan_without_a_gpu(monkeypatch):
    monkeypatch.setattr("tdebug.runtime.device.gpu_visible", lambda: False)
    assert plan_engines("cpu", "auto") == (False, False, "")
    use_tools, interp, line = plan_engines("auto", "auto")
    assert (use_tools, interp) == (False, False) and "using the interpreter sanitizer on the CPU" in line
    for device, engine in (("cuda", "auto"), ("auto", "compute-sanitizer")):
        with pytest.raises(CouldNotRun):  # a missing GPU: exit 3
            plan_engines(device, engine)
    with pytest.raises(click.UsageError):  # asking for the GPU tools and the CPU at once: exit 2
        plan_engines("cpu", "compute-sanitizer")


def test_engine_plan_with_a_gpu(monkeypatch):
    monkeypatch.setattr("tdebug.runtime.device.gpu_visible", lambda: True)
    monkeypatch.setattr("tdebug.cli.sanitize._compute_sanitizer_found", lambda: True)
    assert plan_engines("cuda", "auto") == (True, True, "")
    assert plan_engines("auto", "compute-sanitizer") == (True, False, "")
    assert plan_engines("cuda", "tdebug") == (False, True, "")
    assert plan_engines("cuda", "symbolic") == (False, False, "")
    monkeypatch.setattr("tdebug.cli.sanitize._compute_sanitizer_found", lambda: False)
    assert plan_engines("auto", "auto")[:2] == (False, True)
    with pytest.raises(CouldNotRun):  # a missing GPU or tool: exit 3
        plan_engines("cuda", "auto")


def test_compute_sanitizer_engine_on_a_cpu_is_a_usage_error():
    result = CliRunner().invoke(cli, ["sanitize", "--device", "cpu", "--engine", "compute-sanitizer",
                                       str(SCENARIOS), "--", "histogram"])
    assert result.exit_code == 2
    assert "needs a GPU" in result.output


def test_size_cap_stops_the_interpreter_with_a_note_never_clean(tmp_path):
    """A real interpreter run (CPU): the histogram scenario launches 8 programs; a cap of 2 stops it."""
    out = tmp_path / "r.json"
    result = CliRunner().invoke(cli, ["sanitize", "--device", "cpu", "--max-programs", "2", "--json", str(out),
                                       str(SCENARIOS), "--", "histogram"])
    report = json.loads(out.read_text())
    (case,) = report["targets"][0]["cases"]
    stops = [f for f in case["findings"] if f["check"] == "not-checked"]
    assert stops and "--max-programs" in stops[0]["message"] and "over the cap of 2" in stops[0]["message"]
    assert result.exit_code == 3  # not everything was checked: tdebug could not do the whole job
    assert "clean" not in result.output


def test_zero_means_no_cap(tmp_path):
    out = tmp_path / "r.json"
    CliRunner().invoke(cli, ["sanitize", "--device", "cpu", "--max-mib", "0", "--max-programs", "0", "--json",
                              str(out), str(SCENARIOS), "--", "histogram"])
    (case,) = json.loads(out.read_text())["targets"][0]["cases"]
    assert case["status"] == "pass", case  # 0: no cap


@pytest.mark.parametrize("gpu_status, gpu_findings, summary", [
    ("pass", [], "no findings, NOT fully checked"),
    ("fail", [cs_finding("bounds", 12)], "1 bounds, NOT fully checked"),
])
def test_an_internal_error_of_the_interpreter_pass_exits_3_never_1(gpu_status, gpu_findings, summary):
    """Issue 49: on the GPU path an internal error was counted as a finding ("1 internal", exit 1)."""
    from tdebug.runtime.verdict import Verdict

    internal = Finding(check="internal", message="internal error in tdebug (Triton 3.6.0) at tdebug/x.py:1: "
                                                 "TypeError: boom (a bug in tdebug, not in the kernel)")
    gpu = job(CaseResult(0, "script.py", gpu_status, list(gpu_findings)))
    interp = job(CaseResult(0, "script.py", "internal", [internal]))
    result, notes, _ = merge_engines(gpu, interp)
    verdict = Verdict.of(result.cases, unchecked_notes=notes)
    assert verdict.exit_code == 3, (verdict, result.cases)
    assert verdict.summary() == summary
    assert "internal" not in verdict.findings
    assert any("internal error in tdebug" in f.message for f in result.cases[0].findings)  # said, not lost
    cpu = Verdict.of(interp.cases)  # the CPU path: the same verdict
    assert (cpu.exit_code, cpu.summary()) == (3, "no findings, NOT fully checked")


def test_a_kernels_file_comes_from_the_interpreter_pass_and_its_descriptor_reads_are_dropped(tmp_path):
    """compute-sanitizer names a kernel's file by its base name; the interpreter pass's launch records give the
    path (a kernel imported from elsewhere), so initcheck's reads at a tl.make_tensor_descriptor line are known
    for what they are (the TMA descriptor Triton builds in scratch memory) and dropped; others keep the path."""
    source = tmp_path / "kernels_mod.py"
    source.write_text("def k(X, Y):\n    xd = tl.make_tensor_descriptor(X, [M], [1], [B])\n    y = tl.load(Y)\n")
    at_descriptor = Finding(check="uninit", message="initcheck says uninit", kernel="k", file="kernels_mod.py",
                            line=2, source="compute-sanitizer", extra={"tool": "initcheck"})
    at_load = Finding(**{**at_descriptor.__dict__, "line": 3, "extra": {"tool": "initcheck"}})
    files = {"k": str(source)}
    for found, status, lines in (([at_descriptor], "pass", []), ([at_descriptor, at_load], "fail", [3])):
        gpu = job(CaseResult(0, "script.py", "fail", [Finding(**f.__dict__) for f in found]))
        interp = job(CaseResult(0, "script.py", "pass", kernel_files=files))
        result, notes, _ = merge_engines(gpu, interp)
        (case,) = result.cases
        assert case.status == status and [f.line for f in case.findings] == lines and notes == []
        assert all(f.file == str(source) for f in case.findings)
