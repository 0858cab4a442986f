"""A property-based fuzz test of the whole command line: every command and option, driven through click's
CliRunner with generated values (paths that are missing, folders, not Python, broken, raising at import,
launching no kernel; shapes, dtypes, configs, pids, lines, seeds, timeouts, bug ids, output paths).

For each command line: no traceback, an exit code in {0, 1, 2, 3} with its documented meaning, and for 2
and 3 a one-line message on stderr. An output path tdebug cannot or must not write is refused before any
work. In the default run the child processes are replaced by generated outcomes (a pass, a failure, a
crash, a hang, a script's exit code, no case, no launch, a fatal import error, the debugger quit), so the
CLI's handling of every outcome is checked in seconds; the slow run (`-m slow`, TDEBUG_FUZZ_EXAMPLES)
lets the real children run.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tdebug.cli import cli
from tdebug.exercises.workspace import load_bugs
from tdebug.report import Finding
from tdebug.runtime import harness
from tdebug.runtime.job import Job
from tdebug.runtime.results import CaseResult, JobResult

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "cpu" / "data"
BUGS = load_bugs(ROOT)
EXAMPLES = int(os.environ.get("TDEBUG_FUZZ_EXAMPLES", "250"))


# -- the files the command lines point at ---------------------------------------------------------------

@dataclass
class Files:
    root: Path
    targets: dict[str, str] = field(default_factory=dict)  # name -> path
    outputs: dict[str, str] = field(default_factory=dict)  # name -> an output file path
    folders: dict[str, str] = field(default_factory=dict)  # name -> an output folder path


# Refused before any work: unwritable, a folder, an input, a file tdebug did not write (the user's add.py).
BAD_OUTPUTS = {"proc", "target", "catalogue", "folder", "under_a_file"}


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Files:
    root = tmp_path_factory.mktemp("fuzz")
    f = Files(root)
    (root / "dir").mkdir()
    (root / "data.txt").write_text("not python\n")
    (root / "broken.py").write_text("def f(:\n    pass\n")
    (root / "raises.py").write_text("import math\nraise ValueError(math.pi)\n")
    (root / "no_kernel.py").write_text("import sys\nprint(sys.argv)\n")
    (root / "binary.py").write_bytes(b"\xff\xfe\x00\x01 not text")
    (root / "only_defs.py").write_text("def helper():\n    return 1\n")
    (root / "add.py").write_bytes((ROOT / "kernels" / "add.py").read_bytes())
    f.targets = {
        "missing": str(root / "missing.py"), "dir": str(root / "dir"), "text": str(root / "data.txt"),
        "broken": str(root / "broken.py"), "raises": str(root / "raises.py"),
        "no_kernel": str(root / "no_kernel.py"), "binary": str(root / "binary.py"),
        "only_defs": str(root / "only_defs.py"), "add_copy": str(root / "add.py"),
        "add": str(ROOT / "kernels" / "add.py"), "matmul": str(ROOT / "kernels" / "matmul.py"),
        "softmax": str(ROOT / "kernels" / "softmax.py"), "bug04": str(BUGS[3].path),
        "script": str(DATA / "script_outcomes.py"),
        "workers": str(DATA / "workers.py"),  # forked, spawned and threaded launches (issue 29)
    }
    (root / "users").mkdir()
    (root / "users" / "viz.html").write_text("the user's page")
    (root / "users" / "notes.json").write_text("the user's notes")
    (root / "linked.json").symlink_to(root / "users" / "notes.json")  # a link into a user's file
    f.outputs = {
        "fresh": str(root / "out" / "r.json"), "proc": "/proc/nope.json", "target": str(root / "add.py"),
        "symlink": str(root / "linked.json"),
        "catalogue": str(ROOT / "kernels" / "add.py"), "folder": str(root / "dir"),
        "under_a_file": str(root / "data.txt" / "r.json"),
        "full": "/dev/full",  # writable, but every write fails (ENOSPC): exit 3 naming it, never an internal error
    }
    f.folders = {"fresh": str(root / "pics"), "users": str(root / "users"), "proc": "/proc/nope",
                 "a_file": str(root / "data.txt")}
    return f


# -- generated command lines ----------------------------------------------------------------------------

SHAPES = st.sampled_from(["129x127", "1000", "33x17x9", "0x5", "-3", "abc", "129x", "1x2x3x4x5", "99999999999",
                          "8x8", " 7 ", "3.5"])
DTYPES = st.sampled_from(["fp32", "fp16", "bf16", "int7", ""])
LAYOUTS = st.sampled_from(["contiguous", "sliced", "transposed", "offset", "diagonal"])
INTS = st.one_of(st.integers(-3, 12), st.sampled_from([2**31, 2**64, -(2**63)])).map(str)
SECONDS = st.sampled_from(["0", "-1", "nan", "inf", "1e-9", "0.5", "30", "abc", "1e308"])
PIDS = st.sampled_from(["0", "1", "1,0", "x", "-1", "1,2,3,4", "", "3,"])
BUG_IDS = st.sampled_from(["4", "04", "99", "0", "abc", "", "04_gelu_missing_masks.py", "bugs/01", "-1"])


def _opt(name: str, values: st.SearchStrategy) -> st.SearchStrategy:
    return st.one_of(st.just([]), values.map(lambda v: [name, v]))


def _flag(name: str) -> st.SearchStrategy:
    return st.sampled_from([[], [name]])


@st.composite
def _options(draw, *opts: st.SearchStrategy) -> list[str]:
    chosen = draw(st.lists(st.sampled_from(range(len(opts))), max_size=4, unique=True))
    return [token for i in chosen for token in draw(opts[i])]


def command_lines(f: Files) -> st.SearchStrategy:
    target = st.sampled_from(sorted(f.targets)).map(f.targets.get)
    output = st.sampled_from(sorted(f.outputs)).map(lambda k: (k, f.outputs[k]))
    folder = st.sampled_from(sorted(f.folders)).map(f.folders.get)
    script_args = st.sampled_from([[], ["--", "ok"], ["--", "exit3"], ["--", "--size", "4"], ["--", "fork_bad"],
                                   ["--", "threads"], ["--", "fork_pool_clean"], ["--", "keyboard_interrupt"]])
    workspace = st.sampled_from([[], ["--workspace", str(f.root / "ws")], ["--workspace", str(ROOT / "bugs")],
                                 ["--workspace", "/proc/ws"], ["--workspace", f.targets["text"]]])

    def with_output(option: str):
        return output.map(lambda kv: ([option, kv[1]], kv[0]))

    run = st.tuples(target, _options(
        _opt("--mode", st.sampled_from(["interpret", "debug", "warp"])), _opt("--shape", SHAPES),
        _opt("--dtype", DTYPES), _opt("--layout", LAYOUTS), _opt("--seed", INTS), _opt("--config", INTS),
        _opt("--break", st.sampled_from(["0", "22", "3", "-4", "100000"])), _opt("--pid", PIDS),
        _opt("--timeout", SECONDS), _opt("--variant", st.sampled_from(["causal", "nope"]))), script_args
    ).map(lambda t: (["run", t[0], *t[1], *t[2]], None))
    check = st.tuples(st.lists(target, max_size=2), _options(
        _flag("--all"), _opt("--device", st.sampled_from(["cpu", "cuda", "auto", "tpu"])), _flag("--quick"),
        _opt("--seed", INTS), _opt("--timeout", SECONDS), _flag("-v")), st.one_of(st.none(), with_output("--json"))
    ).map(lambda t: (["check", *t[0], *t[1], *(t[2][0] if t[2] else [])], t[2][1] if t[2] else None))
    sanitize = st.tuples(st.one_of(st.just([]), target.map(lambda x: [x])), _options(
        _opt("--device", st.sampled_from(["auto", "cpu", "cuda"])),
        _opt("--tool", st.sampled_from(["memcheck", "all", "nope"])),
        _opt("--engine", st.sampled_from(["tdebug", "symbolic", "z3"])),
        _opt("--check", st.sampled_from(["bounds", "race", "nope"])), _opt("--shape", SHAPES),
        _opt("--dtype", DTYPES), _opt("--layout", LAYOUTS), _opt("--config", INTS), _flag("--full"),
        _opt("--seed", INTS), _opt("--max-findings", INTS), _opt("--timeout", SECONDS)),
        st.one_of(st.none(), with_output("--json"), with_output("--keep-log")), script_args
    ).map(lambda t: (["sanitize", *t[0], *t[1], *(t[2][0] if t[2] else []), *(t[3] if t[0] else [])],
                     t[2][1] if t[2] else None))
    viz = st.tuples(st.one_of(st.just([]), target.map(lambda x: [x])), _options(
        _opt("--shape", SHAPES), _opt("--dtype", DTYPES), _opt("--layout", LAYOUTS), _opt("--seed", INTS),
        _opt("--config", INTS), _opt("--variant", st.sampled_from(["causal", "nope"])), _opt("--pid", PIDS),
        _opt("--port", INTS), _opt("--timeout", SECONDS)), _opt("--out", folder)
    ).map(lambda t: (["viz", *t[0], *t[1], *t[2]], "proc" if "/proc/nope" in t[2] else None))
    bench = st.tuples(st.lists(st.sampled_from(["matmul", "nope", f.targets["add"], f.targets["text"]]),
                               max_size=2), _options(
        _flag("--all"), _opt("--shape", SHAPES), _opt("--dtype", DTYPES), _opt("--seed", INTS),
        _opt("--warmup-ms", SECONDS), _opt("--rep-ms", SECONDS)), st.one_of(st.none(), with_output("--json"))
    ).map(lambda t: (["bench", *t[0], *t[1], *(t[2][0] if t[2] else [])], t[2][1] if t[2] else None))
    bugs_simple = st.tuples(workspace, st.sampled_from(["list", "show", "hint", "start", "solution", "reset",
                                                        "nope"]), BUG_IDS
                            ).map(lambda t: (["bugs", *t[0], t[1], *([t[2]] if t[1] != "list" else [])], None))
    bugs_check = st.tuples(workspace, BUG_IDS, _options(_flag("--quick"), _opt("--seed", INTS),
                                                        _opt("--timeout", SECONDS))
                           ).map(lambda t: (["bugs", *t[0], "check", t[1], *t[2]], None))
    matrix = st.tuples(_options(
        _opt("--only", BUG_IDS), _flag("--kernels"), _flag("--no-kernels"),
        _opt("--detector", st.sampled_from(["check", "sanitize", "gpu:memcheck", "symbolic", "nope"])),
        _flag("--expected-only"), _opt("--jobs", INTS), _opt("--seed", INTS), _opt("--timeout", SECONDS)),
        st.sampled_from([["--no-markdown"], "output"])
    ).flatmap(lambda t: (with_output("--markdown") if t[1] == "output" else st.just((t[1], None))).map(
        lambda o: (["bugs", "matrix", *t[0], *o[0]], o[1])))
    junk = st.lists(st.sampled_from(["--version", "--help", "-h", "nope", "--json", "run", "--", "-x", ""]),
                    max_size=3).map(lambda args: (args, None))
    return st.one_of(run, check, sanitize, viz, bench, bugs_simple, bugs_check, matrix, junk)


# Settings in the environment (issue 49): good ones in any case, bad ones refused first (exit 2, the name said).
ENVIRONMENTS = [{}, {}, {}, {}, {"TDEBUG_EXECUTOR": "SERIAL"}, {"TDEBUG_EXECUTOR": "bogus"},
                {"TDEBUG_VERBOSE": "0"}, {"TDEBUG_VERBOSE": "maybe"}, {"TDEBUG_REPRO_MAX_MIB": "lots"},
                {"TDEBUG_MEMORY_LIMIT": "-3"}, {"TDEBUG_SWEEP": "Spawn"}, {"TDEBUG_BATCH_ELEMENTS": "0"}]


def bad_setting(env: dict[str, str]) -> str | None:
    from tdebug import settings

    try:
        settings.check_all(env)
    except settings.SettingError:
        return next(iter(env))
    return None


# -- generated outcomes of the child processes (the default run) ----------------------------------------

OUTCOMES = ["pass", "fail", "crash", "hang", "script_exit", "no_cases", "no_launch", "fatal", "fatal_usage",
            "quit"]


class FakeChildren:
    """Stands in for tdebug.runtime.harness.run_job: checks the job as the real harness would (it must go
    to a child as JSON) and answers with the outcome drawn for this command line (drawn once, before the
    command runs: bugs matrix calls from threads, and hypothesis needs the same draws on a replay)."""

    def __init__(self, outcome: str, exit_code: int) -> None:
        self.outcome, self.exit_code = outcome, exit_code
        self.outcomes: list[str] = []

    def __call__(self, job: Job, mode: str = "interpret", timeout=120.0, interactive: bool = False,
                 capture: bool = False, on_event=None, **_ignored) -> JobResult:
        assert Job.from_json(job.to_json()) == job  # what _Child writes for the child: a job that cannot go fails
        assert timeout is None or 0 < timeout < float("inf"), timeout
        script = job.kind == "script"
        outcome = self.outcome
        if outcome == "no_launch" and not script:
            outcome = "fail"  # a catalogue case that launched nothing: the worker's "no-kernel" finding
        self.outcomes.append(outcome)
        result = JobResult(kernel=Path(job.target).stem)
        if outcome == "fatal":
            result.fatal = "cannot import x.py: ValueError: boom (x.py:3)"
            return result
        if outcome == "fatal_usage":
            result.fatal, result.fatal_usage = "--config 9: add is not autotuned", True
            return result
        labels = [] if outcome == "no_cases" else ["x.py"] if script else ["128 fp32 contiguous", "1000 fp16 sliced"]
        result.labels = labels
        if on_event is not None:
            on_event("plan", {"kernel": result.kernel, "labels": labels, "lint": []})
        for i, label in enumerate(labels):
            status = {"fail": "fail", "crash": "crash", "hang": "hang", "script_exit": "error", "quit": "quit"
                      }.get(outcome, "pass") if i == len(labels) - 1 else "pass"
            case = CaseResult(index=i, label=label, status=status, launch_count=(0 if outcome == "no_launch" else 1)
                              if script and mode == "interpret" else None)
            if status != "pass" and status != "quit":
                case.error = f"{status}: generated"
                case.findings.append(Finding(check="exception" if status == "error" else status, message=case.error,
                                             file="/x/y.py", line=3))
            if outcome == "script_exit":
                case.exit_code = self.exit_code
            result.cases.append(case)
            if on_event is not None:
                on_event("result", {"index": i, "label": label, "status": status, "error": case.error})
        return result


@pytest.fixture(scope="module")
def catalogue():
    """The catalogue's files as they were: each command line must leave them unchanged (put back after)."""
    before = {p: p.read_bytes() for folder in ("kernels", "bugs") for p in (ROOT / folder).iterdir() if p.is_file()}
    yield before
    for path in {p for folder in ("kernels", "bugs") for p in (ROOT / folder).iterdir()} - set(before):
        path.unlink()
    for path, data in before.items():
        if not path.is_file() or path.read_bytes() != data:
            path.write_bytes(data)


def assert_unchanged(catalogue: dict[Path, bytes], where: str) -> None:
    now = {p for folder in ("kernels", "bugs") for p in (ROOT / folder).iterdir() if p.is_file()}
    assert now == set(catalogue), where + f"\nfiles appeared or went in the catalogue: {now ^ set(catalogue)}"
    changed = [p for p, data in catalogue.items() if p.read_bytes() != data]
    assert not changed, where + f"\nthe catalogue's files were changed: {changed}"


@pytest.fixture
def fakes(monkeypatch, files):
    """Children replaced; default outputs and the workspace kept under the fuzz folder; the catalogue parsed once."""
    monkeypatch.chdir(files.root)
    monkeypatch.setenv("TDEBUG_WORKSPACE", str(files.root / "workspace"))
    monkeypatch.setattr("tdebug.cli.bugs.load_bugs", lambda: BUGS)
    monkeypatch.setattr("tdebug.cli.bugs.repo_root", lambda: files.root)  # a full matrix's default markdown
    holder: dict = {}

    def run_job(*args, **kwargs):
        return holder["children"](*args, **kwargs)

    import importlib
    import pkgutil
    import sys

    import tdebug

    # Every module that imports run_job, imported now: one first imported under the fake below would keep
    # it after the test (the CLI loads its subcommands lazily).
    for info in pkgutil.walk_packages(tdebug.__path__, "tdebug."):
        if not info.name.endswith(("__main__", ".probe")):
            importlib.import_module(info.name)
    real = harness.run_job
    for name, module in list(sys.modules.items()):  # modules that imported it already...
        if name.startswith("tdebug") and getattr(module, "run_job", None) is real:
            monkeypatch.setattr(module, "run_job", run_job)
    monkeypatch.setattr(harness, "run_job", run_job)  # ...and those that import it later
    monkeypatch.setattr(harness, "_Child", None)  # nothing may start a real child

    def viz_trace(job, timeout=300.0, meanwhile=None):
        from tdebug.viz.trace_parent import TraceResult

        outcome = {"no_launch": "nothing", "crash": "crash", "fatal_usage": "usage", "hang": "timeout"}.get(
            holder["children"].outcome, "nothing")
        holder["children"].outcomes.append({"nothing": "no_launch", "crash": "crash", "usage": "fatal_usage",
                                            "timeout": "hang"}[outcome])
        if outcome == "usage":
            return TraceResult(info={"usage_error": "--variant 'nope': no such variant"})
        return TraceResult(exit_code=-11 if outcome == "crash" else 0, timed_out=outcome == "timeout",
                           info={} if outcome != "nothing" else {"kernel": "k"})

    monkeypatch.setattr("tdebug.viz.trace_parent.trace", viz_trace)
    return holder


# -- the property ---------------------------------------------------------------------------------------

def check_outcome(argv: list[str], bad_output: str | None, r, outcomes: list[str], env: dict | None = None) -> None:
    env = env or {}
    where = (f"{' '.join(f'{k}={v}' for k, v in env.items())} tdebug {' '.join(argv)}\nexit {r.exit_code}\n"
             f"stdout: {r.stdout[-1500:]}\nstderr: {r.stderr[-1500:]}")
    assert r.exception is None or isinstance(r.exception, SystemExit), where + f"\n{r.exception!r}"
    assert "Traceback" not in r.output and "internal error in tdebug" not in r.output, where
    assert r.exit_code in (0, 1, 2, 3), where
    if r.exit_code in (2, 3):
        last = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else ""
        assert last.startswith("tdebug: error: ") and len(last) > len("tdebug: error: "), where
        assert "\n" not in last
    bad_env = bad_setting(env)
    if bad_env:
        assert r.exit_code == 2 and not outcomes and not r.stdout, where + "\na bad setting: refused first"
        assert r.stderr.strip().startswith(f"tdebug: error: {bad_env}="), where
        return
    if bad_output in BAD_OUTPUTS:
        assert r.exit_code == 2 and not outcomes, where + "\nan output path that cannot be written: refused first"
    if bad_output == "full":
        assert r.exit_code in (2, 3), where + "\na write that failed at the end: exit 3, never 0 or 1"
        if "/dev/full: could not write it: No space left on device" in r.stderr:
            assert r.exit_code == 3, where
            return  # whatever the run found, its report was not written: exit 3
    command = argv[0] if argv else ""
    if command in ("run", "check", "sanitize") and outcomes:
        if r.exit_code == 0:
            assert set(outcomes) <= {"pass", "quit"}, where + f"\noutcomes {outcomes}: exit 0 must mean clean"
        if set(outcomes) & {"fail", "crash", "hang", "script_exit"} and "fatal_usage" not in outcomes:
            assert r.exit_code in (1, 2), where + f"\noutcomes {outcomes}: a failure is exit 1"
        if set(outcomes) <= {"no_cases", "no_launch"} and "--mode" not in argv:
            assert r.exit_code == 2, where + f"\noutcomes {outcomes}: nothing was checked"


@settings(max_examples=EXAMPLES, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.data_too_large, HealthCheck.filter_too_much])
@given(data=st.data())
def test_every_command_line_ends_cleanly(fakes, files, catalogue, data):
    argv, bad_output = data.draw(command_lines(files), label="command line")
    children = FakeChildren(data.draw(st.sampled_from(OUTCOMES), label="outcome of every child"),
                            data.draw(st.sampled_from([1, 2, 3, 9, 130, 255]), label="a script's exit code"))
    fakes["children"] = children
    env = data.draw(st.sampled_from(ENVIRONMENTS), label="settings in the environment")
    r = CliRunner().invoke(cli, argv, env=env)
    check_outcome(argv, bad_output, r, children.outcomes, env)
    assert_unchanged(catalogue, f"tdebug {' '.join(argv)}")
    assert_user_files(files, argv)


@pytest.mark.parametrize("argv", [["check", "{add}", "--quick", "--json", "{out}"],
                                  ["sanitize", "{add}", "--json", "{out}"]])
def test_an_output_that_cannot_be_written_at_the_end_names_the_path_and_exits_3(fakes, files, monkeypatch, argv):
    """Issue 49: no descriptors left (EMFILE) or a full disk when the JSON is written: one line, exit 3."""
    import errno

    def no_descriptors(path, data):
        raise OSError(errno.EMFILE, "Too many open files")

    monkeypatch.setattr("tdebug.runtime.files.write_atomic", no_descriptors)
    fakes["children"] = FakeChildren("pass", 0)
    out = str(files.root / "emfile" / "r.json")
    (files.root / "emfile").mkdir(exist_ok=True)
    r = CliRunner().invoke(cli, [a.format(add=files.targets["add"], out=out) for a in argv])
    assert r.exit_code == 3, r.output
    assert r.stderr.strip().splitlines()[-1] == f"tdebug: error: --json {out}: could not write it: Too many open files"


@pytest.mark.parametrize("argv", [["sanitize", "{add}", "--repro", "{p}", "--json", "{p}"],
                                  ["sanitize", "{add}", "--keep-log", "{p}", "--json", "{p}"],
                                  ["check", "{add}", "--json", "{p}", "--repro", "{p}"]])
def test_two_outputs_naming_one_path_are_refused_before_any_work(fakes, files, argv):
    fakes["children"] = FakeChildren("pass", 0)
    p = str(files.root / "same" / "P")
    r = CliRunner().invoke(cli, [a.format(add=files.targets["add"], p=p) for a in argv])
    assert r.exit_code == 2 and not fakes["children"].outcomes, r.output
    assert "name one path" in r.stderr and not Path(p).exists(), r.stderr


def assert_user_files(f: Files, argv: list[str]) -> None:
    """Whatever an output path was (a symlink into a user's file, say), the user's files are as they were."""
    assert (f.root / "users" / "notes.json").read_text() == "the user's notes", f"tdebug {' '.join(argv)}"
    assert (f.root / "users" / "viz.html").read_text() == "the user's page", f"tdebug {' '.join(argv)}"


def _minutes_at_most(argv: list[str]) -> bool:
    """Leaves out what runs the whole catalogue or waits for a person (the debugger)."""
    if "--break" in argv or argv[:1] == ["run"] and "--pid" in argv or "--all" in argv \
            or argv[:1] == ["bugs"] and ("matrix" in argv or "check" in argv):
        return False
    if argv[:1] == ["sanitize"] and (len(argv) < 2 or argv[1].startswith("-")):
        return False  # no target: the whole catalogue
    return not (argv[:1] == ["check"] and "--quick" not in argv)


@pytest.mark.slow
def test_every_command_line_ends_cleanly_with_real_children(files, catalogue, monkeypatch):
    """The slow profile: real child processes (TDEBUG_FUZZ_EXAMPLES command lines, default 60)."""
    monkeypatch.chdir(files.root)
    monkeypatch.setenv("TDEBUG_WORKSPACE", str(files.root / "workspace"))
    monkeypatch.setattr("tdebug.cli.bugs.repo_root", lambda: files.root)
    started = time.monotonic()

    @settings(max_examples=int(os.environ.get("TDEBUG_FUZZ_EXAMPLES", "60")), deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def one(data):
        argv, bad_output = data.draw(command_lines(files).filter(lambda c: _minutes_at_most(c[0])),
                                     label="command line")
        r = CliRunner().invoke(cli, argv)
        check_outcome(argv, bad_output, r, [])
        assert_unchanged(catalogue, f"tdebug {' '.join(argv)}")
        assert_user_files(files, argv)

    one()
    print(f"real-children fuzz: {time.monotonic() - started:.0f} s")
