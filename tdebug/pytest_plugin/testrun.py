"""One test's call under the sanitizer: run in a forked child once per autotune config (config 0 first;
as many passes as the test's most-configured kernel has), each pass reporting the test's own outcome,
the sanitizer's findings and the launches it made."""

from __future__ import annotations

import base64
import contextlib
import faulthandler
import functools
import io
import os
import pickle
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

from ..catalogue.poison import poisoned_empty
from ..interpreter.patches import STATE, LaunchRecord, announce_launches, begin_case
from ..report import Finding
from ..runtime import reproducers
from ..runtime.localise import explain
from ..runtime.processes import exit_now
from ..runtime.store_maps import dropped_launch
from ..runtime.worker import Channel, exception_finding, fault_finding
from .forked import ChildRun, run_forked

# Exceptions from tdebug's patches that are findings as well as the test's failure.
EXCEPTION_CHECKS = ("assert", "overflow", "dtype")


@dataclass(frozen=True)
class Settings:
    """What one test runs under: its checks (the marker's, else --tdebug-check's, else all), whether it
    is sanitized at all, the one config asked for (None: every config), the hang timeout."""

    checks: frozenset[str]
    skip: bool = False
    config: int | None = None
    timeout: float | None = 300.0


@dataclass
class TestRun:
    """The passes of one test: (config index, how its child ended)."""

    passes: list[tuple[int, ChildRun]] = field(default_factory=list)


class LaunchFeed(list):
    """STATE.launches in a child: each launch is also announced to the parent as it starts, so a crash
    or hang can be pinned on the launch in flight."""

    def __init__(self, channel: Channel) -> None:
        super().__init__()
        self.channel = channel

    def append(self, record: LaunchRecord) -> None:
        super().append(record)
        self.channel.send("launch", index=len(self), kernel=record.kernel, config=record.config,
                          config_index=record.config_index, config_count=record.config_count)


def prepare_child(channel: Channel, session, settings: Settings) -> None:
    """Child side, before the work: one CPU thread (the parent's OpenMP pool does not survive a fork;
    the interpreter is single-threaded anyway), a fatal signal's Python traceback into the test's
    captured stderr (fd 2), launches announced, the test's checks."""
    import torch

    torch.set_num_threads(1)
    faulthandler.enable(file=2)
    announce_launches(LaunchFeed(channel))
    session.enabled = not settings.skip
    session.checks = settings.checks


@contextlib.contextmanager
def explained_assert_close():
    """While a test runs, `torch.testing.assert_close` on a kernel's output also says where the output went
    wrong when it fails: the programs and store lines that wrote the wrong elements and the `tdebug run`
    command that stops there (tdebug.explain). Calls through a name bound before the test started (`from
    torch.testing import assert_close` at import) keep the plain message."""
    import torch.testing

    original = torch.testing.assert_close

    @functools.wraps(original)
    def assert_close(actual, expected, *args, **kwargs):
        try:
            return original(actual, expected, *args, **kwargs)
        except AssertionError as exc:
            where = _where(actual, expected, kwargs)
            if not where:
                raise
            raise AssertionError(f"{exc}\n\n{where}") from None

    torch.testing.assert_close = assert_close
    try:
        yield
    finally:
        torch.testing.assert_close = original


def _where(actual, expected, kwargs: dict) -> str:
    """tdebug.explain's report for a failed comparison of a floating-point tensor ('' when it has none)."""
    import torch

    if not (isinstance(actual, torch.Tensor) and actual.is_floating_point()):
        return ""
    said = io.StringIO()
    try:
        found = explain(actual, expected, rtol=kwargs.get("rtol"), atol=kwargs.get("atol"), file=said)
    except Exception as e:  # noqa: BLE001 - the test's own failure stays the message; say why there is no more
        return f"(tdebug could not localise it: {type(e).__name__}: {e})"
    if found is None:  # a tensor no kernel wrote says nothing more; one whose launch was too large to record does
        return said.getvalue().strip() if dropped_launch(actual) is not None else ""
    # Under pytest there is no script to hand to `tdebug run --break`: the report without that command.
    return "\n".join(line for line in found.lines if not line.lstrip().startswith("stop there"))


def _failure(item: pytest.Item, exc: BaseException) -> dict:
    """The test's own exception as the parent needs it: pytest's rendering (made here, where the
    traceback lives) and the exception itself when it pickles (so xfail(raises=...) still works)."""
    if isinstance(exc, pytest.skip.Exception):
        kind = "skipped"
    elif isinstance(exc, pytest.xfail.Exception):
        kind = "xfailed"
    else:
        kind = "failed"
    text = str(item.repr_failure(pytest.ExceptionInfo.from_exception(exc))) if kind == "failed" else ""
    try:
        blob = base64.b64encode(pickle.dumps(exc)).decode()
    except Exception:  # noqa: BLE001 - an exception that does not pickle is shown as text only
        blob = ""
    return {"kind": kind, "text": text, "message": str(exc), "type": type(exc).__name__, "exception": blob}


def revive(failure: dict) -> BaseException | None:
    """The child's exception object, or None when it did not pickle."""
    if not failure.get("exception"):
        return None
    try:
        return pickle.loads(base64.b64decode(failure["exception"]))
    except Exception:  # noqa: BLE001 - a class the parent cannot rebuild
        return None


def _call_work(item: pytest.Item, runtest: Callable[[], None], session, settings: Settings,
               config_index: int, follower=None) -> Callable[[Channel], dict]:
    def work(channel: Channel) -> dict:
        prepare_child(channel, session, settings)
        if follower is not None:  # this child is the test's process; the processes it forks are followed
            follower.adopt(follower.folder / str(os.getpid()))
        begin_case(config_index, clamp_config=settings.config is None)
        failure = None
        findings: list[dict] = []
        if reproducers.WRITER is not None:
            reproducers.WRITER.begin_case(item.nodeid)
        started = time.perf_counter()
        try:
            if settings.skip:
                runtest()
            else:
                with poisoned_empty(), explained_assert_close():
                    runtest()
        except BaseException as exc:  # noqa: BLE001 - the test's outcome, sent to the parent
            if isinstance(exc, KeyboardInterrupt):
                raise
            failure = _failure(item, exc)
            finding = exception_finding(exc)
            if finding.check in EXCEPTION_CHECKS and not settings.skip:
                findings.append(finding.to_dict())
        internal = fault_finding()  # tdebug's own error inside a patch, even one the test caught
        if internal is not None and not settings.skip:
            findings.append(internal.to_dict())
        seconds = time.perf_counter() - started
        if follower is not None and follower.away:  # a process the test forked came back here: it is done
            follower.exited(findings)  # what stopped it (a device_assert, tdebug's own error) reaches the test
            exit_now(0)
        launches = [r.__dict__ for r in STATE.launches]
        if not settings.skip:
            findings += [f.to_dict() for f in session.end_case()]
            if follower is not None:
                followed = follower.collect()
                findings += followed.findings
                launches += [{"kernel": "(in a child process)"}] * followed.launches
        if reproducers.WRITER is not None and findings:
            reproducers.WRITER.case_done(findings)
        return {"failure": failure, "findings": findings, "launches": launches, "seconds": seconds}

    return work


def run_test(item: pytest.Item, runtest: Callable[[], None], session, settings: Settings,
             follower=None) -> TestRun:
    """The passes of one test: config 0 (or the one asked for), then each further config of its
    autotuned kernels, each pass in a fresh child forked from the parent (fixtures as set up, same
    random state). Stops at a crash, a hang, a skip."""
    run = TestRun()
    index = settings.config or 0
    count = index + 1
    while index < count:
        child = run_forked(_call_work(item, runtest, session, settings, index, follower), settings.timeout)
        run.passes.append((index, child))
        result = child.result
        if result is None or settings.config is not None or settings.skip:
            break
        if result["failure"] and result["failure"]["kind"] != "failed":
            break
        count = max([count] + [launch.get("config_count", 0) for launch in result["launches"]])
        index += 1
    return run


def pass_findings(run: TestRun) -> list[Finding]:
    """Every pass's findings, one per cause; extra["configs"] names the autotune configs it showed in."""
    merged: dict[tuple, Finding] = {}
    for _, child in run.passes:
        result = child.result or {}
        configs = {launch["kernel"]: launch for launch in result.get("launches", []) if launch.get("config_count")}
        for data in result.get("findings", []):
            finding = Finding.from_dict(data)
            launch = configs.get(finding.kernel)
            tag = f"#{launch['config_index']} ({launch['config']})" if launch else ""
            known = merged.get(finding.key())
            if known is None:
                finding.extra = {**finding.extra, "configs": [tag] if tag else []}
                merged[finding.key()] = finding
            elif tag and tag not in known.extra["configs"]:
                known.extra["configs"].append(tag)
    return list(merged.values())
