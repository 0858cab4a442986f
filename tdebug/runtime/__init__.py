"""How a job runs: the harness (parent side: child processes that survive crashes and hangs, events over a
pipe), the worker (child side: cases and scripts, findings, comparisons) and the results they exchange."""

from .harness import child_env, run_job
from .results import CaseResult, JobResult

__all__ = ["CaseResult", "JobResult", "child_env", "run_job"]
