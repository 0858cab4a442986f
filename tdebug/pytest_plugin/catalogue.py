"""`pytest --tdebug-catalogue`: the catalogue's case matrix (what `tdebug check --all` runs) as pytest items,
one per case, each in a forked child under the sanitizer, so pytest-xdist spreads it across cores."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ..catalogue.cases import plan_cases
from ..catalogue.spec import Case, KernelSpec, load_target
from ..runtime.harness import case_from_event
from ..runtime.results import render_case
from ..runtime.worker import Channel, run_case
from .forked import run_forked
from .sanitized_test import SANITIZED_TEST, SanitizedTest, TdebugFailure, crash_text
from .testrun import Settings, prepare_child


class CatalogueFile(pytest.File):
    """A catalogue file (kernels/ or bugs/): one item per case of its SPEC's matrix."""

    def collect(self) -> Iterator[pytest.Item]:
        target = load_target(self.path)
        if target.spec is None:
            return
        runner = self.config.pluginmanager.get_plugin("tdebug-runner")
        for case in plan_cases(target.spec, quick=runner.quick, device="cpu", seed=runner.seed):
            yield CaseItem.from_parent(self, name=f"{target.spec.name}[{case.label()}]", spec=target.spec, case=case)


class CaseItem(pytest.Item):
    """One case: inputs, launch with outputs poisoned, findings, the float64 comparison (tdebug check's
    judgement) in a forked child; a crash or hang fails this case only."""

    def __init__(self, *, spec: KernelSpec, case: Case, **kwargs) -> None:
        super().__init__(**kwargs)
        self.spec, self.case = spec, case

    def runtest(self) -> None:
        runner = self.config.pluginmanager.get_plugin("tdebug-runner")
        settings: Settings = runner.settings_for(self)
        session = runner.session

        def work(channel: Channel) -> dict:
            prepare_child(channel, session, settings)
            return run_case(self.spec, self.case, session)

        child = run_forked(work, settings.timeout)
        tested = SanitizedTest(configs=[self.case.config] if self.case.config is not None else [])
        self.stash[SANITIZED_TEST] = tested
        if child.result is None:
            tested.crash = crash_text(child, settings.timeout)
            tested.launches = len(child.launches())
            raise TdebugFailure(tested.crash)
        result = case_from_event({"index": 0, **child.result})
        tested.findings = result.findings
        tested.launches = len(result.launches)
        tested.seconds = result.time  # the case: inputs, launches, comparison with the reference
        tested.timed = [{"kernel": launch.get("kernel", "?"), "seconds": launch["seconds"]}
                         for launch in result.launches if "seconds" in launch]
        tested.launch_seconds = sum(launch["seconds"] for launch in tested.timed)
        if not result.ok:
            raise TdebugFailure("\n".join(render_case(result)))

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, TdebugFailure):
            return excinfo.value.text
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self):
        return self.path, None, self.name
