"""The compute-sanitizer log parser, on real logs captured on the H100 (tests/fixtures/compute_sanitizer/,
made by tests/gpu/capture_fixtures.py from the scripts in tests/gpu/scripts/)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tdebug.catalogue.spec import Case
from tdebug.report import Finding, render
from tdebug.runtime.job import Job, Plan, SanitizeOptions
from tdebug.runtime.results import CaseResult, ChildLog, JobResult
from tdebug.sanitize import compute_sanitizer as cs

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "compute_sanitizer"
SCRIPTS = Path(__file__).resolve().parents[1] / "gpu" / "scripts"


def log(name: str) -> str:
    return (FIXTURES / name).read_text()


def findings(name: str, tool: str) -> list[Finding]:
    parsed = cs.parse_log(log(name), tool)
    return [f for fs in cs.findings_from_errors(parsed.errors).values() for f in fs]


def test_memcheck_read_out_of_bounds():
    parsed = cs.parse_log(log("memcheck_read.log"), "memcheck")
    # the tool's count also holds the CUDA API errors that follow (launch failure at synchronize)
    assert parsed.summary_errors == len(parsed.errors) + log("memcheck_read.log").count("Program hit") == 14
    e = parsed.errors[0]
    assert (e.check, e.space, e.access, e.size) == ("bounds", "global", "read", 8)
    assert (e.kernel, e.file, e.line) == ("add_load_nomask", "oob_read.py", 11)
    assert e.block == (3, 0, 0) and e.thread == (116, 0, 0)
    assert e.distance == 1 and e.alloc_size == 4000
    fs = findings("memcheck_read.log", "memcheck")
    past = [f for f in fs if f.extra["distance"][0] > 0]
    assert past and all(f.check == "bounds" and f.source == "compute-sanitizer" for f in fs)
    f = past[0]
    assert f.kernel == "add_load_nomask" and f.line == 11 and f.pids == [(3, 0, 0)]
    assert "load outside every allocation" in f.message and "4,000 bytes" in f.message
    assert "bytes past the end of the nearest allocation" in f.message
    assert f.extra["access"] == "read" and f.extra["size"] == 8 and f.extra["alloc_size"] == 4000
    assert sum(f.count for f in fs) == len(parsed.errors) == 12
    # x's over-read reaches towards y, allocated right after it: reported as before y's start
    assert any(f.extra["distance"][1] < 0 for f in fs)


def test_memcheck_write_out_of_bounds():
    fs = findings("memcheck_write.log", "memcheck")
    assert len(fs) == 1
    f = fs[0]
    assert f.check == "bounds" and f.extra["access"] == "write" and f.kernel == "add_store_nomask"
    assert f.message.startswith("store outside every allocation")
    assert f.extra["distance"] == [1, 89] and f.count == 12


def test_initcheck_uninitialised_read():
    parsed = cs.parse_log(log("initcheck_uninit.log"), "initcheck")
    assert parsed.summary_errors == 1000  # not the "800 errors were not printed" line
    fs = findings("initcheck_uninit.log", "initcheck")
    assert len(fs) == 1
    f = fs[0]
    assert (f.check, f.kernel, f.file, f.line) == ("uninit", "add_bias", "uninit_read.py", 13)
    assert f.count == len(parsed.errors) == cs.PRINT_LIMIT
    assert "load of memory nothing has written" in f.message and "4 bytes" in f.message


@pytest.mark.parametrize("name,tool", [("memcheck_clean.log", "memcheck"), ("initcheck_clean.log", "initcheck"),
                                       ("synccheck_clean.log", "synccheck"), ("racecheck_matmul.log", "racecheck")])
def test_clean_runs_have_no_errors(name, tool):
    parsed = cs.parse_log(log(name), tool)
    assert parsed.errors == [] and parsed.summary_errors == 0


def test_racecheck_race_between_inline_store_and_reduction():
    parsed = cs.parse_log(log("racecheck_race.log"), "racecheck")
    assert parsed.summary_errors == 1 and len(parsed.errors) == 1
    e = parsed.errors[0]
    assert (e.check, e.access, e.kernel, e.file, e.line) == ("race", "write", "smem_race", "smem_race.py", 18)
    others = {(w["access"], w["file"], w["line"], w["hazards"]) for w in e.other["with"]}
    assert others == {("read", "standard.py", 293, 4), ("write", "smem_race.py", 18, 485)}
    (f,) = findings("racecheck_race.log", "racecheck")
    assert f.check == "race" and f.count == 489 and "shared-memory race" in f.message


def test_case_markers_split_a_multi_case_log():
    text = log("memcheck_cases.log")
    parsed = cs.parse_log(text, "memcheck")
    assert {e.case for e in parsed.errors} == {0}
    per_case = cs.findings_from_errors(parsed.errors)
    assert list(per_case) == [0]
    # the same log with the marker moved: errors follow the last marker before them
    moved = text.replace("@@tdebug-case 0", "@@tdebug-case 5")
    assert {e.case for e in cs.parse_log(moved, "memcheck").errors} == {5}


def test_attach_replaces_the_crash_it_explains_and_resolves_bare_file_names(tmp_path):
    (tmp_path / "nomask_store_spec.py").write_text("x\n" * 30)
    text = log("memcheck_cases.log")
    first, second = text.split("# tdebug: child from case 1")
    crash = Finding(check="crash", message="the launch crashed the process (exit code 86)")
    result = JobResult(kernel="k", labels=["1000", "1024"], cases=[
        CaseResult(index=0, label="1000", status="crash", error=crash.message, findings=[crash]),
        CaseResult(index=1, label="1024", status="pass")],
        logs=[ChildLog(0, first, "", cs.ERROR_EXITCODE), ChildLog(1, second, "", 0)])
    cs.attach_tool_findings(result, "memcheck", [tmp_path])
    bad, good = result.cases
    assert bad.status == "fail" and bad.error == ""
    assert [f.check for f in bad.findings] == ["bounds"]
    assert bad.findings[0].file == str(tmp_path / "nomask_store_spec.py")
    assert good.status == "pass" and good.findings == []
    assert "nomask_store_spec.py:17: bounds: store outside every allocation" in render(bad.findings[0])


def test_a_script_ended_by_the_tools_exit_code_is_a_consequence_not_a_second_finding():
    """On the H200 (gpu-verdict-parity.md, 11 seeded bugs): memcheck found the access, the script's process ended
    with memcheck's --error-exitcode before tdebug read its results, and the case showed '1 fail' beside the bounds
    finding, a verdict the CPU never gives. The exit is the error's consequence, as a crash is."""
    text = log("memcheck_cases.log")
    first = text.split("# tdebug: child from case 1")[0]
    ended = Finding(check="fail", message=f"the script exited with code {cs.ERROR_EXITCODE} before tdebug could "
                                          "read its results (os._exit, or a crash in native code)")
    own = Finding(check="fail", message="the script exited with code 3 before tdebug could read its results")
    result = JobResult(kernel="k", labels=["s", "t"], cases=[
        CaseResult(index=0, label="s", status="fail", findings=[ended]),
        CaseResult(index=1, label="t", status="fail", findings=[own])],
        logs=[ChildLog(0, first, "", cs.ERROR_EXITCODE)])
    cs.attach_tool_findings(result, "memcheck")
    bad, other = result.cases
    assert [f.check for f in bad.findings] == ["bounds"]
    assert other.findings == [own]  # the script's own exit code stays a finding


def test_unparsed_errors_still_fail_the_case():
    result = JobResult(labels=["s"], cases=[CaseResult(index=0, label="s", status="pass")],
                       logs=[ChildLog(0, "========= COMPUTE-SANITIZER\n========= Something new\n", "",
                                      cs.ERROR_EXITCODE)])
    cs.attach_tool_findings(result, "memcheck")
    assert result.cases[0].status == "fail" and result.cases[0].findings[0].check == "gpu-error"


def test_combine_merges_tools_per_case():
    bounds = Finding(check="bounds", message="m", source="compute-sanitizer", extra={"tool": "memcheck"})
    cuda = Finding(check="exception", message="AcceleratorError: CUDA error: unspecified launch failure")
    mem = cs.ToolRun("memcheck", JobResult(labels=["a", "b"], cases=[
        CaseResult(0, "a", "fail", findings=[bounds, cuda]), CaseResult(1, "b", "pass")]), 1.0, "")
    init = cs.ToolRun("initcheck", JobResult(labels=["a", "b"], cases=[
        CaseResult(0, "a", "pass"), CaseResult(1, "b", "pass")]), 1.0, "")
    combined = cs.combine([mem, init])
    assert [c.status for c in combined.cases] == ["fail", "pass"]
    assert combined.cases[0].findings == [bounds]


def test_tools_and_command():
    assert cs.expand_tools([]) == ["memcheck", "initcheck"]
    assert cs.expand_tools(["all"]) == list(cs.TOOLS)
    with pytest.raises(ValueError):
        cs.expand_tools(["nope"])
    cmd = cs.tool_command("/cs", "initcheck")
    assert cmd[:3] == ["/cs", "--tool", "initcheck"] and "--error-exitcode" in cmd
    assert cs.tool_env("initcheck")["PYTORCH_NO_CUDA_MEMORY_CACHING"] == "1"
    assert cs.tool_env("initcheck")["TDEBUG_NO_POISON"] == "1" and "TDEBUG_NO_POISON" not in cs.tool_env("memcheck")
    assert cs.log_path("x/run.log", "memcheck", 2) == Path("x/run.memcheck.log")
    assert cs.log_path("x/run.log", "memcheck", 1) == Path("x/run.log")


def test_prepare_job_moves_everything_to_the_gpu():
    job = Job(target="t.py", kind="spec", sanitize=SanitizeOptions(checks=()), plan=Plan(device="cpu"),
              breaks=("t.py:3",))
    prepared = cs.prepare_job(job)
    assert prepared.sanitize is None and prepared.plan.device == "cuda" and prepared.breaks is None
    assert prepared.pin_autotune and job.plan.device == "cpu" and prepared.device == "cuda"
    cased = Job(target="t.py", kind="spec", cases=(Case((4,)), Case((8,), "fp16"))).for_gpu()
    assert [c.device for c in cased.cases] == ["cuda", "cuda"] and cased.device == "cuda"


def test_find_compute_sanitizer_honours_override(tmp_path, monkeypatch):
    exe = tmp_path / "compute-sanitizer"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    monkeypatch.setenv("TDEBUG_COMPUTE_SANITIZER", str(exe))
    assert cs.find_compute_sanitizer() == str(exe)
    monkeypatch.setenv("TDEBUG_COMPUTE_SANITIZER", str(tmp_path / "missing"))
    assert cs.find_compute_sanitizer() is None


def test_initcheck_reads_by_pytorch_kernels_are_tdebugs_own_and_dropped():
    lib = cs.ToolError("initcheck", "uninit", "Uninitialized __global__ memory read of size 8 bytes",
                       kernel="at::native::k")
    triton = cs.ToolError("initcheck", "uninit", "Uninitialized __global__ memory read of size 4 bytes",
                          kernel="add_bias", file="uninit_read.py", line=13)
    assert cs._tdebug_own_read(lib) and not cs._tdebug_own_read(triton)
    assert cs._short_name("void at::native::vectorized_elementwise_kernel<(int)4, F<short>>(int, F)") == \
        "at::native::vectorized_elementwise_kernel<(int)4, F<short>>"


def test_initcheck_reads_of_a_kernels_own_tensor_descriptor_are_not_the_users_uninit(tmp_path):
    """initcheck does not see the writes that build a device-side TMA descriptor (tl.make_tensor_descriptor) in
    Triton's scratch memory: its reads there are dropped; an uninit read on any other line stays."""
    source = tmp_path / "desc.py"
    source.write_text("    xd = tl.make_tensor_descriptor(X, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])\n"
                      "    x = tl.load(X + offs)\n")
    at_descriptor = cs.ToolError("initcheck", "uninit", "h", file=str(source), line=1)
    at_load = cs.ToolError("initcheck", "uninit", "h", file=str(source), line=2)
    memcheck_there = cs.ToolError("memcheck", "bounds", "h", file=str(source), line=1)
    assert cs._descriptor_scratch_read(at_descriptor)
    assert not cs._descriptor_scratch_read(at_load)
    assert not cs._descriptor_scratch_read(memcheck_there)
