"""Reliability, round three (issue 29): launches in forked, spawned and threaded workers are followed (never
"clean", never "no kernel"), threads neither corrupt memory nor invent findings."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WORKERS = ROOT / "tests" / "cpu" / "data" / "workers.py"


def tdebug(*args: str, cwd: Path = ROOT, env: dict | None = None, stdin: str = "",
           timeout: float = 300) -> subprocess.CompletedProcess:
    """The `tdebug` console script as a user runs it (`python -m tdebug` would import a ./tdebug.py itself)."""
    full = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    command = [str(Path(sys.executable).with_name("tdebug"))]
    return subprocess.run([*command, *args], cwd=cwd, input=stdin, capture_output=True,
                          text=True, env=full, timeout=timeout)


@pytest.mark.parametrize("mode", ["fork_bad", pytest.param("fork_pool", marks=pytest.mark.slow),
                                  pytest.param("spawn_pool", marks=pytest.mark.slow),
                                  pytest.param("threads_one_bad", marks=pytest.mark.slow)])
def test_an_out_of_bounds_store_in_a_worker_is_found(mode):
    p = tdebug("sanitize", str(WORKERS), "--", mode)
    out = p.stdout + p.stderr
    assert p.returncode == 1, out
    assert "bounds: store past the end of 'out_ptr'" in out, out
    assert ": clean" not in out and "launched no Triton kernel" not in out
    if mode != "threads_one_bad":
        assert "(in child process " in out, out
    assert "free()" not in out and "corruption" not in out, out


@pytest.mark.parametrize("mode", [pytest.param("fork_pool_clean", marks=pytest.mark.slow), "threads"])
def test_correct_launches_in_workers_are_counted_and_clean(mode):
    p = tdebug("sanitize", str(WORKERS), "--", mode)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    assert ": clean (1 case(s)" in out, out
    assert "bounds" not in out and "wrong results" not in out, out


def test_a_forked_childs_launches_fail_its_test_under_pytest(tmp_path):
    test = tmp_path / "test_forks.py"
    test.write_text(f"import os, sys\nsys.path.insert(0, {str(WORKERS.parent)!r})\nfrom workers import add\n\n"
                    "def test_forked_bad():\n    add()\n    pid = os.fork()\n    if pid == 0:\n"
                    "        add(masked=False)\n        os._exit(0)\n    os.waitpid(pid, 0)\n\n"
                    "def test_forked_clean():\n    pid = os.fork()\n    if pid == 0:\n        add()\n"
                    "        os._exit(0)\n    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0\n")
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--tdebug", str(test)],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    out = p.stdout + p.stderr
    assert p.returncode == 1, out
    assert "1 failed, 1 passed" in out, out
    assert "FAILED test_forks.py::test_forked_bad" in out and "(in child process" in out, out


# --- the child's environment is tdebug's ---
CLOSES_FDS = """import os, sys
sys.path.insert(0, {data!r})
from workers import add
assert add() < 1e-5
os.closerange(3, 256)
print("closed")
"""


def test_a_user_tdebug_py_in_the_working_folder_and_closed_fds_do_not_break_the_worker(tmp_path):
    (tmp_path / "tdebug.py").write_text("raise SystemExit('the user tdebug.py was imported')\n")
    (tmp_path / "helper_mod.py").write_text("VALUE = 41\n")  # the script's own imports still work
    script = tmp_path / "closes_fds.py"
    script.write_text("import helper_mod\nassert helper_mod.VALUE == 41\n"
                      + CLOSES_FDS.format(data=str(WORKERS.parent)))
    p = tdebug("sanitize", script.name, cwd=tmp_path)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    assert "closed" in p.stdout and ": clean (1 case(s)" in out, out
    assert "Traceback" not in out and "user tdebug.py" not in out, out


# --- memory: a cap on the worker, runaway recursion, tdebug's own allocations ---
RECURSES = """import torch, triton, triton.language as tl

@triton.jit
def helper(x):
    return helper(x + 1)

@triton.jit
def kernel(x_ptr):
    tl.store(x_ptr, helper(tl.load(x_ptr)))

kernel[(1,)](torch.randn(4))
"""


def test_a_jit_helper_that_recurses_without_end_is_a_recursion_error_at_once(tmp_path):
    script = tmp_path / "recurses.py"
    script.write_text(RECURSES)
    p = tdebug("run", str(script), timeout=120)
    out = p.stdout + p.stderr
    assert p.returncode == 1, out
    assert "recurses.py:5: exception: JitRecursionError: @triton.jit function helper is 64 calls deep" in out, out
    assert "out-of-bounds" not in out and "Traceback" not in out, out


def test_the_worker_runs_under_a_memory_cap(tmp_path):
    script = tmp_path / "big.py"
    script.write_text("import resource, torch\nprint('cap', resource.getrlimit(resource.RLIMIT_DATA)[0] >> 20)\n"
                      "torch.empty(8 << 30, dtype=torch.uint8).fill_(1)\n")
    p = tdebug("run", str(script), env={"TDEBUG_MEMORY_LIMIT": "3000"}, timeout=120)
    out = p.stdout + p.stderr
    assert p.returncode == 1, out
    assert "cap 3000" in out and "big.py:3: exception: RuntimeError: the program ran out of memory" in out, out
    from tdebug.child import memory_cap

    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert memory_cap() == total * 3 // 4 or os.environ.get("TDEBUG_MEMORY_LIMIT")


def test_tdebugs_own_allocation_failing_is_could_not_run_and_the_scripts_is_its_exception():
    import tdebug.sanitize.memory as shadow_module
    from tdebug.runtime.worker import EXCEPTION_STATUS, exception_finding

    def raise_in(filename: str) -> BaseException:
        try:
            exec(compile("raise MemoryError()", filename, "exec"))
        except MemoryError as exc:
            return exc
        raise AssertionError("no MemoryError")

    ours = exception_finding(raise_in(shadow_module.__file__))
    assert ours.check == "not-checked" and "tdebug ran out of memory" in ours.message
    assert EXCEPTION_STATUS[ours.check] == "not-checked"  # exit 3: tdebug could not do the job
    theirs = exception_finding(raise_in("/tmp/user_script.py"))
    assert theirs.check == "exception" and theirs.file == "/tmp/user_script.py", theirs


# --- verdicts and claims ---
INPLACE = ROOT / "tests" / "cpu" / "data" / "inplace_add_one.py"


def test_check_of_an_in_place_kernel_compares_with_the_inputs_before_the_launch():
    p = tdebug("check", str(INPLACE))
    assert p.returncode == 0, p.stdout + p.stderr
    assert "6 passed, 0 failed" in p.stdout, p.stdout


def test_a_variant_on_a_kernel_without_variants_and_a_program_outside_the_grid_are_usage_errors():
    p = tdebug("run", str(INPLACE), "--variant", "causal")
    assert p.returncode == 2 and p.stderr.strip().splitlines() == [
        "tdebug: error: --variant 'causal': add_one_ has no variants (leave --variant out)"], p.stderr
    p = tdebug("run", str(INPLACE), "--shape", "200", "--break", "--pid", "3", stdin="c\n" * 5)
    assert p.returncode == 2, p.stdout + p.stderr
    assert p.stderr.strip().splitlines()[-1].startswith("tdebug: error: program (3) never ran: the grid was 2x1x1"), \
        p.stderr


def test_viz_of_a_program_outside_the_grid_is_a_usage_error(tmp_path):
    p = tdebug("viz", str(INPLACE), "--shape", "200", "--pid", "999", "--out", str(tmp_path / "pics"))
    assert p.returncode == 2, p.stdout + p.stderr
    assert "never ran: the grid was 2x1x1" in p.stderr and not (tmp_path / "pics").exists(), p.stderr


def test_sanitize_dash_dash_pytest_runs_the_suite_under_the_sanitizer(tmp_path):
    test = tmp_path / "test_kernel.py"
    test.write_text(f"import sys\nsys.path.insert(0, {str(WORKERS.parent)!r})\nfrom workers import add\n\n"
                    "def test_clean():\n    assert add() < 1e-5\n\n"
                    "def test_out_of_bounds():\n    add(masked=False)\n")
    p = tdebug("sanitize", "--", "pytest", "-q", "-p", "no:cacheprovider", str(test), cwd=tmp_path)
    out = p.stdout + p.stderr
    assert p.returncode == 1, out
    assert "1 failed, 1 passed" in out and "bounds" in out, out
    p = tdebug("sanitize", "--", "pytest", "-q", "-p", "no:cacheprovider", str(test), "-k", "nothing", cwd=tmp_path)
    assert p.returncode == 2 and "nothing was sanitized" in p.stderr, p.stdout + p.stderr


# --- ergonomics in the debugger ---
def test_the_debugger_in_a_pipe_has_no_colour_codes_hides_tdebugs_frames_and_follows_the_header():
    p = tdebug("run", "kernels/add.py", "--shape", "300", "--break", "--pid", "1", stdin="where\n" + "c\n" * 5)
    out = p.stdout
    assert p.returncode == 0, out + p.stderr
    assert "\x1b[" not in out + p.stderr, out
    assert "(Pdb++)" in out or "(Pdb)" in out, out
    assert "add: interpret mode, seed" in out and out.index("add: interpret mode") < out.index("(Pdb"), out
    where = out.split("where", 1)[-1] if "where" in out else out
    assert "tdebug/child.py" not in where and "tdebug/runtime/worker.py" not in where, where
    assert "kernels/add.py(40)add()" in out, out


def test_a_script_run_once_per_autotune_config_reads_the_same_stdin_each_time():
    p = tdebug("sanitize", str(ROOT / "tests" / "cpu" / "data" / "autotuned_reads_stdin.py"), stdin="300\n")
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    assert p.stdout.count("n = 300") == 2 and "run 2 of 2" in out, out


def test_pythonwarnings_error_in_the_users_environment_gives_no_traceback_from_tdebug():
    p = tdebug("run", "kernels/add.py", "--shape", "300", env={"PYTHONWARNINGS": "error"})
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    assert "Traceback" not in out and "ResourceWarning" not in out, out


# --- round four (issue 49): every setting parsed in one place, at start-up ---
def test_every_tdebug_variable_the_code_names_is_a_setting_or_plumbing():
    import ast

    from tdebug import settings

    named = {}
    for path in (ROOT / "tdebug").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                    re.fullmatch(r"TDEBUG_[A-Z_]+", node.value):
                named.setdefault(node.value, path.name)
    unknown = {n: f for n, f in named.items() if n not in settings.BY_NAME and n not in settings.PLUMBING}
    assert not unknown, f"read outside tdebug.settings: {unknown}"
    readers = []
    for path in (ROOT / "tdebug").rglob("*.py"):
        for line in path.read_text().splitlines() if path.name != "settings.py" else ():
            read = re.search(r'environ\.(get|pop)\(\s*"TDEBUG_([A-Z_]+)"', line) or \
                re.search(r'environ\[\s*"TDEBUG_([A-Z_]+)"\](?!\s*=)', line)
            if read and f"TDEBUG_{read.groups()[-1]}" not in settings.PLUMBING:
                readers.append(f"{path.name}: {line.strip()}")
    assert not readers, readers
    text = settings.help_text()
    assert all(s.name in text for s in settings.SETTINGS if not s.internal), text


@pytest.mark.parametrize("name, raw, want", [
    ("TDEBUG_EXECUTOR", "SERIAL", "serial"), ("TDEBUG_EXECUTOR", " Batched ", "batched"),
    ("TDEBUG_EXECUTOR", "", "auto"), ("TDEBUG_VERBOSE", "0", False), ("TDEBUG_VERBOSE", "off", False),
    ("TDEBUG_VERBOSE", "1", True), ("TDEBUG_VERBOSE", "TRUE", True), ("TDEBUG_REPRO_MAX_MIB", "12", 12),
    ("TDEBUG_MEMORY_LIMIT", "0", 0), ("TDEBUG_KEEP_FREED", "0", False), ("TDEBUG_SWEEP", "SPAWN", "spawn"),
])
def test_a_setting_reads_as_its_option_does(name, raw, want):
    from tdebug import settings

    assert settings.get(name, {name: raw}) == want


@pytest.mark.parametrize("name, raw", [("TDEBUG_EXECUTOR", "bogus"), ("TDEBUG_EXECUTOR", "fast"),
                                       ("TDEBUG_REPRO_MAX_MIB", "lots"), ("TDEBUG_REPRO_MAX_MIB", "-1"),
                                       ("TDEBUG_VERBOSE", "maybe"), ("TDEBUG_MEMORY_LIMIT", "-1"),
                                       ("TDEBUG_BATCH_ELEMENTS", "1e6"), ("TDEBUG_SWEEP", "thread")])
def test_a_bad_setting_is_one_line_naming_the_variable_and_what_it_takes(name, raw):
    from tdebug import settings

    with pytest.raises(settings.SettingError) as e:
        settings.check_all({name: raw})
    assert str(e.value).startswith(f"{name}={raw!r}: ") and "\n" not in str(e.value)


def test_a_bad_setting_stops_the_command_line_and_pytest_before_any_work(tmp_path):
    p = tdebug("run", "kernels/add.py", "--shape", "300", env={"TDEBUG_EXECUTOR": "bogus"})
    assert p.returncode == 2 and p.stdout == "", p.stdout + p.stderr
    assert p.stderr.strip() == "tdebug: error: TDEBUG_EXECUTOR='bogus': not one of auto, batched, serial " \
        "(as --executor)", p.stderr
    p = tdebug("sanitize", "kernels/add.py", env={"TDEBUG_REPRO_MAX_MIB": "lots"})
    assert p.returncode == 2 and "TDEBUG_REPRO_MAX_MIB='lots'" in p.stderr and "internal" not in p.stderr, p.stderr
    (tmp_path / "test_one.py").write_text("def test_one():\n    assert True\n")
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--tdebug", "test_one.py"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": str(ROOT), "TDEBUG_EXECUTOR": "fast"})
    assert p.returncode == 4 and "TDEBUG_EXECUTOR='fast'" in p.stderr and "passed" not in p.stdout, \
        p.stdout + p.stderr


def test_executor_serial_in_capitals_runs_serially_and_verbose_zero_is_off(tmp_path):
    script = tmp_path / "which.py"
    script.write_text("import torch, triton, triton.language as tl\n\n@triton.jit\n"
                      "def k(x_ptr, n, B: tl.constexpr):\n    o = tl.program_id(0) * B + tl.arange(0, B)\n"
                      "    tl.store(x_ptr + o, tl.load(x_ptr + o, mask=o < n) + 1, mask=o < n)\n\n"
                      "x = torch.randn(1000)\nk[(8,)](x, 1000, B=128)\n"
                      "from tdebug.interpreter.batched.grid_loop import STATS, executor\n"
                      "print('EXECUTOR', executor(), STATS.batches)\n")
    p = tdebug("run", str(script), env={"TDEBUG_EXECUTOR": "SERIAL", "TDEBUG_VERBOSE": "0"})
    assert p.returncode == 0 and "EXECUTOR serial 0" in p.stdout, p.stdout + p.stderr
    assert "tdebug: " not in p.stderr.replace("tdebug: error", ""), p.stderr  # verbose off: no engine notes


def test_a_builtin_whose_name_is_no_string_is_memoised_without_an_internal_error():
    """Issue 49: op_memo copied a builtin's `__name__` onto its wrapper whatever it was ("TypeError: __name__ must
    be set to a string object" at op_memo.py:471, on SGLang's attention and MoE kernels)."""
    import triton.language as tl

    from tdebug.interpreter.fast import op_memo

    class Builtin:  # a builtin need not be a function: a flagged callable whose __name__ answers a constexpr
        __triton_builtin__ = True

        def __getattr__(self, name):
            if name in ("__name__", "__qualname__"):
                return tl.constexpr(name)
            raise AttributeError(name)

        def __call__(self, x, _semantic=None):
            return x

    def plain(x, _semantic=None):
        return x

    plain.__triton_builtin__ = True
    member = Builtin()
    assert tl.core.is_builtin(member)
    try:
        wrapped = op_memo._memoised(member, semantic=None)
        assert wrapped.__wrapped__ is member and wrapped.__name__ == "Builtin"
        assert op_memo._memoised(member, semantic=None) is wrapped  # one wrapper per builtin
        assert op_memo._memoised(plain, semantic=None).__qualname__.endswith("plain")  # a function's own kept
    finally:
        op_memo._WRAPPED.pop(id(member), None)
        op_memo._WRAPPED.pop(id(plain), None)


def test_run_reports_an_access_stopped_in_a_forked_child():
    """Issue 49: under `run` a forked child's out-of-bounds access was stopped (its status 256) and tdebug said
    nothing, exit 0; a pool's worker's error came back as pages of remote traceback."""
    p = tdebug("run", str(WORKERS), "--", "fork_bad")
    out = p.stdout + p.stderr
    assert p.returncode == 1, out
    assert "out-of-bounds" in out and "(in child process " in out, out
    p = tdebug("run", str(WORKERS), "--", "fork_pool")
    out = p.stdout + p.stderr
    assert p.returncode == 1 and "out-of-bounds" in out, out
    assert "RemoteTraceback" not in out and "Traceback" not in out, out


# --- pytest --tdebug -n 2 and signals (issue 49: Ctrl-C took 8.5-10.3 s, SIGTERM left workers running) ---
SLOW_TESTS = '''import pytest, torch, triton, triton.language as tl

@triton.jit
def slow_kernel(x_ptr, out_ptr, n, ITERS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for i in range(ITERS):
        acc += tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr + offs, acc, mask=offs < n)

@pytest.mark.parametrize("i", range(6))
def test_slow(i):
    x = torch.randn(4096)
    out = torch.empty_like(x)
    slow_kernel[(64,)](x, out, 4096, ITERS=100000, BLOCK=64)
'''


def _session(pid: int) -> list[tuple[int, int, str]]:
    """(pid, ppid, state) of every live process of the session `pid` leads (zombies left out)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[3]) == pid and fields[0] != "Z":
            found.append((int(entry), int(fields[1]), fields[0]))
    return found


def _pytest_n2(tmp_path: Path) -> subprocess.Popen:
    (tmp_path / "test_slow.py").write_text(SLOW_TESTS)
    # hypothesis's own plugin imports hypothesis as the session ends (1.5 s on a loaded machine): not tdebug's
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:hypothesispytest", "--tdebug",
            "-n", "2", "test_slow.py"]
    return subprocess.Popen(argv, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)


def _wait_for(p: subprocess.Popen, depth: int, limit: float = 240) -> None:
    """Until the session has processes `depth` levels below pytest (1: xdist workers, 2: a test's process)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline and p.poll() is None:
        procs = _session(p.pid)
        level = {p.pid}
        for _ in range(depth):
            level = {pid for pid, ppid, _ in procs if ppid in level}
        if level:
            return
        time.sleep(0.1)
    raise AssertionError(f"pytest never reached depth {depth}")


@pytest.mark.parametrize("phase, signum", [
    ("workers starting", signal.SIGTERM),
    pytest.param("inside a launch", signal.SIGINT, marks=pytest.mark.slow),
    pytest.param("inside a launch", signal.SIGTERM, marks=pytest.mark.slow),
])
def test_pytest_n2_stops_at_once_on_ctrl_c_and_sigterm_leaving_nothing(tmp_path, phase, signum):
    p = _pytest_n2(tmp_path)
    try:
        _wait_for(p, 1 if phase == "workers starting" else 2)
        if phase != "workers starting":
            time.sleep(1)
        sent = time.monotonic()
        if signum == signal.SIGINT:
            os.killpg(p.pid, signum)  # Ctrl-C: the terminal signals the foreground group
        else:
            p.send_signal(signum)
        p.wait(timeout=30)
        took = time.monotonic() - sent
        time.sleep(0.3)
        left = _session(p.pid)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
        for pid, _, _ in _session(p.pid):
            os.kill(pid, signal.SIGKILL)
        out = p.communicate()[0].decode(errors="replace")
    assert not left, f"still alive {took:.1f} s after {signum!r}: {left}\n{out[-2000:]}"
    assert took < 2.5, f"{took:.1f} s to stop after {signum!r}\n{out[-2000:]}"  # 2 s, and slack for a loaded machine


TIMED_TESTS = '''import time, torch, triton, triton.language as tl

@triton.jit
def add_one(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)

def test_slow_setup_then_a_quick_launch():
    time.sleep(2.5)  # the test's own code (a loaded machine, a slow fixture): not the launch the timeout names
    x = torch.randn(300)
    y = x.clone()
    add_one[(3,)](x, 300, BLOCK=128)
    assert torch.equal(x, y + 1)

def test_never_launches():
    time.sleep(60)
'''


def test_the_pytest_timeout_counts_from_the_first_launch_and_says_what_it_measured(tmp_path):
    """Issue 49: under a loaded machine clean tests hit --tdebug-timeout "before any Triton launch"."""
    (tmp_path / "test_timed.py").write_text(TIMED_TESTS)
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--tdebug",
                        "--tdebug-timeout", "1.5", "test_timed.py"], cwd=tmp_path, capture_output=True, text=True,
                       timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
    out = p.stdout + p.stderr
    assert "1 failed, 1 passed" in out, out
    assert "FAILED test_timed.py::test_never_launches" in out, out
    assert "began no Triton launch (the limit before a first launch is 4 x --tdebug-timeout 1.5 s)" in out, out


COMPILED = '''import torch, triton, triton.language as tl

@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)

def add(x, y):
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 128),)](x, y, out, x.numel(), BLOCK=128)
    return out

@torch.compile
def f(x, y):
    return add(x * 2, y) + 1

x, y = torch.randn(1000), torch.randn(1000)
assert float((f(x, y) - (x * 2 + y + 1)).abs().max()) < 1e-5
'''


def test_torch_compile_under_sanitize_gives_no_dynamo_warning_about_tdebugs_frames(tmp_path):
    """Issue 49: dynamo traced tdebug's TorchDispatchMode into the compiled region and warned that it "does not
    know how to trace the builtin sys._getframe"."""
    script = tmp_path / "compiled.py"
    script.write_text(COMPILED)
    p = tdebug("sanitize", str(script))
    out = p.stdout + p.stderr
    assert p.returncode == 0 and ": clean (1 case(s)" in out, out
    assert "sys._getframe" not in out and "UserWarning" not in out, out


def test_the_editable_install_prints_no_setuptools_warning(tmp_path):
    """Issue 49: a fresh clone's first scripts/demo.sh printed setuptools' "Please be careful with folders in your
    working directory with the same name as your package" (its meta path finder, chosen for a flat layout with no
    package-dir): the install is a .pth entry for the repository root instead."""
    code = f"from setuptools import build_meta; print(build_meta.build_editable({str(tmp_path)!r}))"
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    assert "Please be careful" not in out and "meta path finder" not in out and "!!" not in out, out
    import zipfile

    (wheel,) = tmp_path.glob("tdebug-*.whl")
    with zipfile.ZipFile(wheel) as z:
        pth = [n for n in z.namelist() if n.endswith(".pth")]
        assert [z.read(n).decode().strip() for n in pth] == [str(ROOT)], pth


INPLACE_STRIDELESS = '''"""An in-place kernel (x += 1) ignoring strides: right on contiguous x, wrong on a view."""
import torch, triton, triton.language as tl
import tdebug

@triton.jit
def add_one_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1.0, mask=mask)

def add_one_(x):
    add_one_kernel[(triton.cdiv(x.numel(), 64),)](x, x.numel(), BLOCK=64)
    return x

SPEC = tdebug.KernelSpec(name="add_one_", launch=add_one_, reference=lambda x: x + 1.0,
                         make_inputs=lambda case: (tdebug.randn(case, case.shape, salt=1),), kernel=add_one_kernel,
                         dims=("N",), default_shape=(300,), shapes=[(300,)], quick_shapes=[(300,)],
                         layouts=("contiguous", "sliced"))
'''


def test_in_place_kernels_are_judged_against_the_inputs_before_the_launch(tmp_path):
    """Issue 49: `check` ended "internal error ... describe.py:26: min() arg is an empty sequence" when an in-place
    output's wrong elements were stored by no program (they kept their old values); viz compared an in-place
    kernel's output with a reference computed from its already-changed input."""
    target = tmp_path / "inplace.py"
    target.write_text(INPLACE_STRIDELESS)
    p = tdebug("check", str(target), "--quick", "--device", "cpu")
    out = p.stdout + p.stderr
    assert p.returncode == 1 and "internal error" not in out, out
    assert "PASS  300 fp32 contiguous" in out and "FAIL  300 fp32 sliced" in out, out
    assert "wrong elements were stored by no program: they keep the value they had before the launch" in out, out
    p = tdebug("viz", str(target), "--out", str(tmp_path / "pics"))
    out = p.stdout + p.stderr
    assert p.returncode == 0 and "WRONG VALUES" not in out, out
    p = tdebug("sanitize", str(INPLACE), "--device", "cpu")
    assert p.returncode == 0 and ": clean" in p.stdout + p.stderr, p.stdout + p.stderr


FORKING_LAUNCHER = """'''A launcher that forks: the child runs the kernel unmasked, the parent the masked one.'''
import os
import torch, triton, triton.language as tl
import tdebug

@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr, MASKED: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if MASKED:
        m = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)
    else:
        tl.store(out_ptr + offs, tl.load(x_ptr + offs) + tl.load(y_ptr + offs))

def add(x, y):
    out = torch.empty_like(x)
    pid = os.fork()
    if pid == 0:
        scratch = torch.empty_like(x)
        add_kernel[(triton.cdiv(x.numel(), 256),)](x, y, scratch, x.numel(), BLOCK=256, MASKED=False)
        os._exit(0)
    os.waitpid(pid, 0)
    add_kernel[(triton.cdiv(x.numel(), 256),)](x, y, out, x.numel(), BLOCK=256, MASKED=True)
    return out

SPEC = tdebug.KernelSpec(name="fork_add", launch=add, reference=lambda x, y: x + y,
                         make_inputs=lambda c: (tdebug.randn(c, c.shape, salt=1), tdebug.randn(c, c.shape, salt=2)),
                         kernel=add_kernel, dims=("N",), default_shape=(1000,), shapes=[(1000,)],
                         quick_shapes=[(1000,)], layouts=("contiguous",))
"""


def test_check_follows_a_launcher_that_forks_and_runs_each_case_once(tmp_path):
    """Issue 49: a catalogue launcher's forked child fell back into the case loop (every case ran twice, its
    results sent twice) and its stopped out-of-bounds access never reached the verdict."""
    target = tmp_path / "fork_spec.py"
    target.write_text(FORKING_LAUNCHER)
    p = tdebug("check", str(target), "--quick", "--device", "cpu")
    out = p.stdout + p.stderr
    assert p.returncode == 1, out
    assert "fork_add (" in out and ": 3 cases" in out and "0 passed, 3 failed" in out, out
    assert out.count("out-of-bounds") >= 3 and "(in child process " in out, out
