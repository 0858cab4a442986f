"""A script run once per autotune-config rank by one worker: each run in a process forked from it, so torch,
Triton and tdebug's engine are imported and installed once for all the runs, while every run still starts
from the script's first line in a process of its own (its module state, its autotuner's cache, its crashes).

What an earlier run imported of the libraries the worker already holds (torch's lazily imported parts, such as
the DTensor and sympy modules torch.testing.assert_close pulls in: two seconds a process) and of the standard
library is imported in the worker before the next fork, so a run pays for it once. Nothing else is: a package
the script imports itself may read what the script sets up before importing it (environment variables, sys.path).

To the harness the worker looks like one child with a case per rank: a run's events (start, launch, result)
come from its forked process over the same pipe; a run that dies without its result ends the worker the same
way (the same signal, the same exit code), so the harness reports that case as it reports any crash and goes on
from the next rank in a fresh worker.
"""

from __future__ import annotations

import contextlib
import faulthandler
import importlib
import os
import signal
import stat
import sys
from pathlib import Path

from .job import Job
from .processes import die_with_parent, exit_now, flush_output
from .worker import Channel, exception_finding, run_script_job

REPORTED = b"1"  # what a run writes to the worker once its result is on the pipe


def run_script_sweep(job: Job, channel: Channel, sanitizer, follower=None) -> None:
    """Run job's script once per rank of job.sweep_ranks (from job.start on), each in a forked process."""
    ranks = job.sweep_ranks
    name = Path(job.target).name
    channel.send("plan", kernel=name, cases=[{"script": job.target, "config_rank": r} for r in ranks],
                 labels=[name] * len(ranks), lint=[])
    stdin_at = _rewindable_stdin()
    threads = _one_thread()
    for index in range(job.start, len(ranks)):
        if stdin_at is not None:  # every run reads the same input; forked processes share the file's offset
            os.lseek(0, stdin_at, os.SEEK_SET)
        read_fd, write_fd = os.pipe()
        flush_output()
        worker = os.getpid()
        pid = os.fork()
        if pid == 0:
            os.close(read_fd)
            die_with_parent(worker)
            _run(job.but(config_rank=ranks[index]), channel, sanitizer, follower, index, write_fd, threads)
        os.close(write_fd)
        with os.fdopen(read_fd, "rb") as pipe:
            reported = pipe.read()  # to its end (the run's exit) before the wait: a long list fills the pipe
        status = os.waitpid(pid, 0)[1]
        if not reported.startswith(REPORTED):
            _end_as(status)
        _preload(reported[len(REPORTED):].decode().split())


def _run(job: Job, channel: Channel, sanitizer, follower, index: int, reported: int, threads: int | None) -> None:
    """In the forked process: one run of the script, its result sent; never returns."""
    code = 1
    try:
        if threads is not None:
            import torch

            torch.set_num_threads(threads)  # the script's torch work as in a process of its own
        held = set(sys.modules)
        if follower is not None:  # this process runs the script: the processes it forks are followed from here
            follower.adopt(follower.folder / f"run{index}")
        run_script_job(job, channel, sanitizer, follower, index=index)
        with os.fdopen(reported, "wb") as pipe:  # write() to its end (os.write may write a part)
            pipe.write(REPORTED + "\n".join(_preloadable(held)).encode())
        code = 0
    except BaseException as exc:  # noqa: BLE001 - tdebug's own failure around the run: the whole job's
        if not isinstance(exc, KeyboardInterrupt):
            finding = exception_finding(exc)
            channel.send("fatal", message=f"tdebug could not finish the job: {finding.message}", usage=False)
            code = 3
    finally:
        exit_now(code)  # the script's own exit already ran; nothing of this process's teardown is wanted


def _one_thread() -> int | None:
    """torch's thread count, set to one in the worker until its runs are done (None: torch not imported): a
    process forked while an OpenMP pool runs cannot use one; each run sets the count back."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    return threads


def _preloadable(held: set[str]) -> list[str]:
    """The modules this run imported, in order, that the worker may import before the next fork: parts of a
    package it already holds (torch, triton, numpy) and the standard library's."""
    packages = {name.split(".")[0] for name in held}
    return [name for name in list(sys.modules) if name not in held and name != "__main__"
            and (name.split(".")[0] in packages or name.split(".")[0] in sys.stdlib_module_names)]


def _preload(names: list[str]) -> None:
    """Import what the last run imported (see _preloadable), so the next runs do not each import it again."""
    for name in names:
        if name in sys.modules:
            continue
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - not needed: the run imports it itself, as it did before
            continue


def _end_as(status: int) -> None:
    """End this worker as the run ended: killed by its signal, or exiting with its code."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        flush_output()
        faulthandler.disable()  # the run's own report was printed already; none of this process's
        with contextlib.suppress(OSError, ValueError):  # SIGKILL keeps its default action anyway
            signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
        exit_now(128 + sig)  # a signal this process cannot die of: the shell's way of saying it
    exit_now(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)


def _rewindable_stdin() -> int | None:
    """Where a regular file on stdin starts (runs after the first read it again from there), else None."""
    try:
        if stat.S_ISREG(os.fstat(0).st_mode):
            return os.lseek(0, 0, os.SEEK_CUR)
    except OSError:
        pass
    return None
