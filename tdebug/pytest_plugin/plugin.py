"""The pytest11 entry point: `pytest --tdebug` runs every Triton launch of each test under tdebug's
interpreter sanitizer. Importing this module is cheap (pytest imports it in every session of an
environment that has tdebug); torch, Triton and tdebug's layers load only when --tdebug is given."""

from __future__ import annotations

import os

import pytest

MARKER = ("tdebug(checks=None, skip=False, timeout=None): tdebug's sanitizer for this test under pytest --tdebug: "
          "checks=[...] runs only those checks, skip=True runs its launches unchecked, timeout=SECONDS "
          "overrides --tdebug-timeout")


REPRO_ROOT = pytest.StashKey[str | None]()  # --tdebug-repro's folder, as prepared (None: not asked)
CONTROLLER = pytest.StashKey[bool]()  # this process is an xdist controller under --tdebug
MAX_MIB = 2048  # on a GPU: a launch over this many MiB of tensor arguments runs compiled only (--tdebug-max-mib)
SIGTERM_BEFORE = pytest.StashKey[object]()  # the controller's SIGTERM handler before the session's
_CONFIGS: list[pytest.Config] = []  # the session's config, for pytest_keyboard_interrupt (it gets none)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("tdebug", "tdebug: Triton launches under the CPU interpreter sanitizer")
    group.addoption("--tdebug", action="store_true",
                    help="run every Triton launch of each test under tdebug's interpreter sanitizer (on the CPU, "
                         "TRITON_INTERPRET=1); a test whose launches have findings fails with the report")
    group.addoption("--tdebug-check", action="append", metavar="CHECK", default=[],
                    help="run only this check (repeatable): bounds, uninit, race, unwritten, assert, overflow")
    group.addoption("--tdebug-config", type=int, metavar="N", default=None,
                    help="@triton.autotune kernels: run config N only (default: every config, one pass each)")
    group.addoption("--tdebug-json", metavar="PATH", default=None,
                    help="write every finding with its test id as JSON")
    group.addoption("--tdebug-durations", type=int, metavar="N", default=None,
                    help="list the N tests whose Triton launches took longest (0: every test), as --durations "
                         "does: seconds in launches and in the test's own code, launches, the slowest kernel")
    group.addoption("--tdebug-timeout", type=float, metavar="SECONDS", default=300.0,
                    help="seconds one test's call may run from its first Triton launch before it is killed as hung "
                         "(before a first launch: 4 times as long; 0: no limit; default 300)")
    group.addoption("--tdebug-catalogue", nargs="?", const="full", choices=["full", "quick"], default=None,
                    help="collect the catalogue's case matrix (kernels/ by default; catalogue files or folders "
                         "given as arguments) as tests, as `tdebug check` plans it; 'quick': its quick shapes")
    group.addoption("--tdebug-repro", metavar="DIR", default=None,
                    help="write a reproducer for each launch with a finding under DIR (a folder per launch: the "
                         "kernel's module, its tensors and arguments, a repro.py for `tdebug sanitize`); a DIR "
                         "holding files tdebug did not write gets a fresh subfolder")
    group.addoption("--tdebug-seed", type=int, metavar="N", default=None,
                    help="input seed of the catalogue's cases (default: fresh, printed in the summary)")
    group.addoption("--tdebug-device", choices=["auto", "cpu", "cuda"], default="auto",
                    help="auto (default): on a machine with a CUDA GPU, each launch on CUDA tensors runs compiled as "
                         "in plain pytest (the test sees its results) and also under the interpreter sanitizer on "
                         "copies, the two compared (divergence); cpu: the interpreter's results only, as on a "
                         "CPU-only machine; cuda: as auto, an error where no GPU is visible")
    group.addoption("--tdebug-max-mib", type=float, metavar="MIB", default=MAX_MIB,
                    help="on a GPU: a launch whose tensor arguments take more than MIB runs compiled only, with a "
                         "note that the interpreter did not check it (its host copies and shadows would take several "
                         f"times its size in host memory; default {MAX_MIB}, 0: no cap)")


def _active(namespace) -> bool:
    return bool(getattr(namespace, "tdebug", False) or getattr(namespace, "tdebug_catalogue", None))


def _is_xdist_controller(config: pytest.Config) -> bool:
    """A pytest-xdist controller hands the tests to its workers and runs none itself."""
    return not hasattr(config, "workerinput") and getattr(config.option, "dist", "no") != "no"


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser, args: list[str]) -> None:
    """TRITON_INTERPRET is read when @triton.jit decorates: set it before any conftest imports kernels."""
    if _active(early_config.known_args_namespace):
        os.environ["TRITON_INTERPRET"] = "1"
        # torch.cuda.is_available() asked of NVML, not of the CUDA driver: a test's process forked later can still
        # use CUDA (a suite's `device = "cuda" if torch.cuda.is_available() else "cpu"` at import would poison it)
        os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")
        if os.environ.get("PYTEST_XDIST_WORKER"):  # before conftests import torch: gone with the controller
            from .stopping import die_with_parent

            die_with_parent()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER)
    _CONFIGS[:] = [config]
    if not _active(config.option):
        return
    from .. import settings

    try:
        settings.check_all()  # every TDEBUG_* variable, as the command line checks them
    except settings.SettingError as e:
        raise pytest.UsageError(str(e)) from None
    if config.option.tdebug_config is not None and config.option.tdebug_config < 0:
        raise pytest.UsageError("--tdebug-config: a config index is 0 or more")
    if getattr(config.option, "tdebug_device", "auto") == "cuda":
        from ..runtime import device

        try:
            device.resolve("cuda", nvml=True)
        except device.NoGpu:
            raise pytest.UsageError("--tdebug-device cuda: no CUDA GPU is visible") from None
    if config.option.tdebug_durations is not None and config.option.tdebug_durations < 0:
        raise pytest.UsageError("--tdebug-durations: a number of tests, 0 or more (0: every test)")
    if config.option.tdebug_max_mib < 0:
        raise pytest.UsageError("--tdebug-max-mib: MiB, 0 or more (0: no cap)")
    if hasattr(config, "workerinput"):
        seed = config.workerinput.get("tdebug_seed", 0)
    else:
        from ..runtime.job import fresh_seed

        seed = config.option.tdebug_seed if config.option.tdebug_seed is not None else fresh_seed()
    if hasattr(config, "workerinput"):
        config.stash[REPRO_ROOT] = config.workerinput.get("tdebug_repro")
    elif config.option.tdebug_repro:
        from ..runtime.files import OutputError, distinct_outputs
        from ..runtime.reproducers import ReproError, prepare_root

        try:
            distinct_outputs(("--tdebug-json", config.option.tdebug_json),
                             ("--tdebug-repro", config.option.tdebug_repro))
        except OutputError as e:
            raise pytest.UsageError(str(e)) from None
        try:
            config.stash[REPRO_ROOT] = str(prepare_root(config.option.tdebug_repro))
        except ReproError as e:
            raise pytest.UsageError(str(e).replace("--repro", "--tdebug-repro")) from None
    if config.option.tdebug_catalogue and config.args_source != pytest.Config.ArgsSource.ARGS:
        from ..catalogue.files import repo_root

        config.args = [str(repo_root() / "kernels")]
    if _is_xdist_controller(config):  # SIGTERM and Ctrl-C end the workers' trees at once (stopping.py)
        from .stopping import stop_on_sigterm

        config.stash[SIGTERM_BEFORE] = stop_on_sigterm()
        config.stash[CONTROLLER] = True
    if not hasattr(config, "workerinput"):
        from .reporter import Reporter, check_json_path

        check_json_path(config)

        config.pluginmanager.register(Reporter(config, seed), "tdebug-reporter")
    if not _is_xdist_controller(config):
        from .runner import Runner

        config.pluginmanager.register(Runner(config, seed), "tdebug-runner")


def pytest_keyboard_interrupt(excinfo) -> None:
    """Ctrl-C in an xdist controller: its workers' trees killed now, not after xdist's 10 s wait for each."""
    if _CONFIGS and _CONFIGS[0].stash.get(CONTROLLER, False):
        from .stopping import kill_descendants

        kill_descendants()


def pytest_unconfigure(config: pytest.Config) -> None:
    before = config.stash.get(SIGTERM_BEFORE, None)
    if before is not None:  # the session is over: SIGTERM as it was (None: not set from Python, left)
        import signal

        signal.signal(signal.SIGTERM, before)
    if _CONFIGS and _CONFIGS[0] is config:
        _CONFIGS.clear()
