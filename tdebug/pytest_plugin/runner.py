"""The plugin in a process that runs tests (a lone pytest, or each pytest-xdist worker): tdebug's
interpreter patches and sanitizer installed in-process, each test's call forked per autotune config,
findings turned into failures, the catalogue's cases collected as items."""

from __future__ import annotations

import functools
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from ..catalogue.poison import poisoned_empty
from ..catalogue.spec import has_spec
from ..interpreter.patches import begin_case
from ..runtime.recipe import Follow, Recipe, install
from ..runtime.worker import fault_finding
from ..sanitize.session import CHECKS, SanitizerSession
from .catalogue import CaseItem, CatalogueFile
from .in_process_timer import MARKS_KEY, Watchdog
from .plugin import MAX_MIB, REPRO_ROOT
from .sanitized_test import SANITIZED_TEST, SanitizedTest, TdebugFailure, crash_text
from .testrun import Settings, TestRun, explained_assert_close, pass_findings, revive, run_test


def check_names(names, where: str) -> frozenset[str]:
    unknown = sorted(set(names) - CHECKS)
    if unknown:
        raise pytest.UsageError(f"{where}: unknown check(s) {', '.join(unknown)}; the checks are "
                                + ", ".join(sorted(CHECKS)))
    return frozenset(names)


class Runner:
    def __init__(self, config: pytest.Config, seed: int) -> None:
        option = config.option
        self.checks = check_names(option.tdebug_check, "--tdebug-check") if option.tdebug_check else CHECKS
        self.config_index: int | None = option.tdebug_config
        self.timeout: float | None = option.tdebug_timeout or None
        self.catalogue: str | None = option.tdebug_catalogue
        self.quick = self.catalogue == "quick"
        self.seed = seed
        # A test's forked or spawned children: their launches are followed (a folder per test, made in its child)
        self.follow_root = Path(tempfile.mkdtemp(prefix="tdebug-follow-"))
        root = config.stash.get(REPRO_ROOT, None)
        self.session = SanitizerSession(sorted(self.checks))
        marks = getattr(config, "workerinput", {}).get(MARKS_KEY)  # an xdist worker: the controller reads them
        self.watchdog = Watchdog(Path(marks) if marks else None)
        # On a machine with a CUDA GPU each launch on CUDA tensors also runs compiled, from the same inputs; the test
        # goes on with the compiled results (as its GPU suite does) and the two are compared (divergence).
        from ..runtime import device

        self.gpu = device.resolve(getattr(option, "tdebug_device", "auto"), nvml=True) is device.Device.CUDA
        listeners = []
        self.divergence = None  # the GPU's compiled twin of each launch (its seconds waiting for host memory)
        if self.gpu:
            from ..sanitize.divergence import DivergenceCheck

            cap = getattr(option, "tdebug_max_mib", MAX_MIB)
            self.divergence = DivergenceCheck.into(self.session, "pytest", keep="compiled",
                                                   max_bytes=int(cap * 2**20), waiting=self.watchdog.paused)
            listeners.append(self.divergence)
        self.installed = install(Recipe(
            interpret=True, store_records=True,  # a failing assert_close says where (tdebug.explain)
            clamp_config=self.config_index is None, repro=(Path(root), "") if root else None,
            follow=Follow(self.follow_root, {"sanitize": {"checks": sorted(self.checks)}}, active=False),
            serialise=True), self.session, listeners)  # serialise: one launch at a time across threads
        self.follower = self.installed.follower
        import torch

        torch.set_num_threads(1)  # forked children cannot use an OpenMP pool the parent started
        warm_lazy_imports()

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        shutil.rmtree(self.follow_root, ignore_errors=True)

    # -- what one test runs under -----------------------------------------------------------------
    def settings_for(self, item: pytest.Item) -> Settings:
        checks, skip, timeout = self.checks, False, self.timeout
        marker = item.get_closest_marker("tdebug")
        if marker is not None:
            skip = bool(marker.kwargs.get("skip", False))
            timeout = marker.kwargs.get("timeout", timeout)
            if "checks" in marker.kwargs:
                try:
                    checks = check_names(marker.kwargs["checks"], "@pytest.mark.tdebug(checks=...)")
                except pytest.UsageError as e:
                    pytest.fail(str(e), pytrace=False)
        return Settings(checks, skip, self.config_index, timeout)

    def _arm(self, item: pytest.Item) -> None:
        """Launches in the parent (fixtures) are checked with the test's settings and attributed to it."""
        settings = self.settings_for(item)
        self.session.enabled = not settings.skip
        self.session.checks = settings.checks
        self.session.begin_case()

    # -- collection: the catalogue ----------------------------------------------------------------
    def pytest_collect_file(self, file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
        if self.catalogue and file_path.suffix == ".py" and has_spec(file_path):
            return CatalogueFile.from_parent(parent, path=file_path)
        return None

    # -- running ------------------------------------------------------------------------------------
    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item):
        self._arm(item)
        return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item):
        if isinstance(item, CaseItem):  # forks by itself
            return (yield)
        original = item.runtest
        item.runtest = functools.partial(self._sanitized_call, item, original)
        try:
            return (yield)
        finally:
            del item.runtest

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_teardown(self, item: pytest.Item, nextitem: pytest.Item | None):
        """Launches in a fixture's teardown run in the parent: their findings fail the teardown."""
        self._arm(item)
        result = yield
        tested = SanitizedTest(findings=self.session.end_case() if self.session.enabled else [])
        if tested.failed:
            raise TdebugFailure(tested.text(where="this test's teardown"))
        return result

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo):
        report = yield
        tested = item.stash.get(SANITIZED_TEST, None)
        if call.when == "call" and tested is not None:
            report.tdebug = tested.record()
        if report.failed and call.excinfo is not None:
            if isinstance(call.excinfo.value, TdebugFailure):
                report.longrepr = call.excinfo.value.text
            elif call.when == "call" and tested is not None and tested.own_failure:
                report.longrepr = tested.own_failure
        return report

    def _sanitized_call(self, item: pytest.Item, runtest: Callable[[], None]) -> None:
        settings = self.settings_for(item)
        if not isinstance(item, pytest.Function) or hasattr(item, "_testcase"):
            # unittest and other items report failures through the item, not by raising: run in-process.
            self._in_process(item, runtest, settings)
            return
        if cuda_initialised():
            # CUDA is up in this process (a fixture, a module-level tensor): a forked child could not use it. The
            # test runs here, a hang ends this process after the timeout with every thread's traceback (pytest-xdist
            # reports the test as crashed and starts a fresh worker).
            self._in_process(item, runtest, settings, watchdog=True)
            return
        run = run_test(item, runtest, self.session, settings, self.follower)
        tested = _sanitized_test(run, settings)
        item.stash[SANITIZED_TEST] = tested
        failures = [(index, child.result["failure"]) for index, child in run.passes
                    if child.result and child.result["failure"]]
        if failures:
            index, failure = failures[0]
            exc = revive(failure)
            if failure["kind"] != "failed" and not tested.failed:  # skip() or xfail() inside the test
                if isinstance(exc, pytest.skip.Exception):
                    exc._use_item_location = True
                if exc is None:
                    exc = {"skipped": pytest.skip.Exception, "xfailed": pytest.xfail.Exception}[failure["kind"]](
                        failure["message"])
                raise exc
            label = f"(in autotune config pass #{index}: each autotuned kernel ran its config #{index})\n"
            tested.own_failure = (label if index else "") + failure["text"]
            if not tested.failed:
                raise exc or TdebugFailure(tested.own_failure)
        if tested.failed:
            raise TdebugFailure(tested.text())

    def _in_process(self, item: pytest.Item, runtest: Callable[[], None], settings: Settings,
                    watchdog: bool = False) -> None:
        begin_case(settings.config or 0)
        started = time.perf_counter()
        waited = self.divergence.waited if self.divergence is not None else 0.0
        if watchdog and settings.timeout:
            self.watchdog.arm(settings.timeout, item.nodeid)
        try:
            if settings.skip:
                runtest()
            elif watchdog:  # a GPU test in pytest's process: a failing assert_close says where, as in a child
                with poisoned_empty(), explained_assert_close():
                    runtest()
            else:
                with poisoned_empty():
                    runtest()
        finally:
            self.watchdog.disarm()
            findings = [] if settings.skip else self.session.end_case()
            internal = fault_finding()  # tdebug's own error inside a patch, even one the test caught
            if internal is not None and not settings.skip:
                findings.append(internal)
            launches = self.installed.launches
            tested = item.stash[SANITIZED_TEST] = SanitizedTest(
                findings=findings, launches=len(launches), configs=[settings.config or 0],
                seconds=time.perf_counter() - started, launch_seconds=sum(r.seconds for r in launches),
                wait_seconds=self.divergence.waited - waited if self.divergence is not None else 0.0,
                in_process=watchdog, timed=[{"kernel": r.kernel, "seconds": r.seconds} for r in launches])
        if tested.failed:
            raise TdebugFailure(tested.text())


def cuda_initialised() -> bool:
    """CUDA is initialised in this process (torch's lazy init ran): a child forked from it cannot use CUDA."""
    import torch

    return bool(torch.cuda.is_initialized())


def warm_lazy_imports() -> None:
    """What a test's first call imports lazily, imported once here: each test runs in a child forked from this
    process, so an import left to the child is paid again by every test. torch.testing.assert_close imports
    torch.distributed.tensor at its first call (torch 2.13: about 2 s, sympy among it, in every test that
    compares its output); Triton 3.9 imports triton.experimental.gluon at a process's first launch."""
    import importlib.util

    import torch

    try:
        torch.testing.assert_close(torch.zeros(2), torch.zeros(2))
    except Exception:  # noqa: BLE001 - a torch whose assert_close fails here: the tests will say so themselves
        pass
    try:
        if importlib.util.find_spec("triton.experimental.gluon") is not None:
            import triton.experimental.gluon  # noqa: F401
    except Exception:  # noqa: BLE001 - a Triton without it (3.6): nothing to warm
        pass


def _sanitized_test(run: TestRun, settings: Settings) -> SanitizedTest:
    tested = SanitizedTest(findings=pass_findings(run), configs=[index for index, _ in run.passes])
    first = run.passes[0][1]
    tested.launches = len(first.result["launches"]) if first.result else len(first.launches())
    for _, child in run.passes:
        if child.result:
            tested.seconds += child.result.get("seconds", 0.0)
            tested.launch_seconds += sum(launch.get("seconds", 0.0) for launch in child.result["launches"])
            tested.timed += [{"kernel": launch.get("kernel", "?"), "seconds": launch["seconds"]}
                              for launch in child.result["launches"] if "seconds" in launch]
    dead = [(index, child) for index, child in run.passes if child.result is None]
    if dead:
        index, child = dead[0]
        tested.crash = crash_text(child, settings.timeout) + (f" (autotune config pass #{index})" if index else "")
    return tested
