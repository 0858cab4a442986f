"""The detectors: tdebug's interpreter sanitizer (bounds, uninitialised reads, races, unwritten outputs,
live device_assert, int32 overflow), triton-viz's symbolic engine adapter, GPU guard bands,
compute-sanitizer wrapped and parsed, and the GPU debug mode (TRITON_DEBUG=1)."""

from .jobs import CHECKS, sanitize_file, sanitize_job

__all__ = ["CHECKS", "sanitize_file", "sanitize_job"]
