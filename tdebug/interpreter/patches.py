"""Patches that make Triton 3.6's CPU interpreter a debugging tool. Installed in the child process,
after TRITON_INTERPRET=1 is set and before any kernel runs:

- tl.device_assert fires (Triton skips it: InterpreterOptions.debug is always False), reporting the
  message, the kernel's source line, the program id and how many lanes failed. This also turns on the
  interpreter's int32 overflow checks, which are built on device_assert.
- @triton.autotune runs one pinned config instead of benchmarking through a GPU driver (which crashes
  with "0 active drivers" on a CPU-only machine); which config ran is recorded.
- bf16 is refused (Triton 3.6's interpreter computes wrong bf16 results).
- every launch is recorded (kernel name, grid, config) so a caller can tell that a Triton kernel ran.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from dataclasses import dataclass, field

import numpy as np

from .frames import current_pid, user_frame


class DeviceAssertError(AssertionError):
    def __init__(self, message: str, file: str, line: int, pid: tuple[int, ...], failed: int, total: int,
                 kind: str = "assert") -> None:
        self.message, self.file, self.line, self.pid = message, file, line, pid
        self.failed, self.total, self.kind = failed, total, kind
        super().__init__(f"{file}:{line}: device_assert failed in program {pid}: {message} "
                         f"({failed} of {total} lanes)")


class UnsupportedDtypeError(TypeError):
    pass


@dataclass
class LaunchRecord:
    kernel: str
    grid: tuple[int, ...]
    config: str = ""
    config_index: int | None = None
    config_count: int = 0  # how many autotune configs the kernel has (0: not autotuned)


@dataclass
class State:
    config_index: int | None = None  # autotune config to run; None -> 0
    clamp_config: bool = False  # a kernel with fewer configs runs its last one instead of failing
    launches: list[LaunchRecord] = field(default_factory=list)
    installed: bool = False


STATE = State()


def _enable_device_assert() -> None:
    from triton.runtime import interpreter

    builder = interpreter.interpreter_builder
    builder.options = dataclasses.replace(builder.options, debug=True)

    def create_assert(condition, message):
        data = np.asarray(condition.data)
        if bool(data.all()):
            return None
        frame = user_frame()
        file = frame.f_code.co_filename if frame else ""
        line = frame.f_lineno if frame else 0
        kind = "overflow" if "overflow detected" in str(message) else "assert"
        raise DeviceAssertError(str(message), file, line, current_pid(), int((~data.astype(bool)).sum()),
                                int(data.size), kind=kind)

    builder.create_assert = create_assert


def config_text(config) -> str:
    """BLOCK_M=128 BLOCK_N=256 warps=8 stages=3: a config as a person reads it."""
    parts = [f"{k}={v}" for k, v in config.kwargs.items()]
    parts += [f"warps={config.num_warps}", f"stages={config.num_stages}"]
    return " ".join(parts)


def pin_autotune() -> None:
    """@triton.autotune kernels run the case's config (STATE.config_index, default 0) instead of
    benchmarking every config: under the interpreter there is no GPU to time them on (plain Triton
    crashes with "0 active drivers"), and on a GPU every case must run its own config. A config that
    does not fit the GPU (OutOfResources: shared memory, registers) is skipped for the next one that
    fits, as the autotuner would skip it, and the skip is said on stderr. Which config ran is recorded."""
    from triton.runtime import autotuner
    from triton.runtime.errors import OutOfResources

    def run(self, *args, **kwargs):
        self.nargs = dict(zip(self.arg_names, args))
        want = STATE.config_index or 0
        if STATE.clamp_config:
            want = min(want, len(self.configs) - 1)
        if want >= len(self.configs):
            raise IndexError(f"config {want} requested but {self.base_fn.__name__} has "
                             f"{len(self.configs)} autotune configs (0..{len(self.configs) - 1})")
        if len(self.configs) > 1:
            self.prune_configs(kwargs)  # runs the user's early_config_prune: a bad signature fails here
        order = [want] + [i for i in range(len(self.configs)) if i != want]
        try:
            for n, index in enumerate(order):
                config = self.configs[index]
                record = LaunchRecord(self.base_fn.__name__, (), config_text(config), index, len(self.configs))
                STATE.launches.append(record)  # the interpreter's launch fills in the grid
                if config.pre_hook is not None:
                    config.pre_hook({**self.nargs, **kwargs, **config.all_kwargs()})
                try:
                    out = self.fn.run(*args, **kwargs, **config.all_kwargs())
                except OutOfResources as e:
                    STATE.launches.remove(record)
                    if n + 1 == len(order):
                        raise
                    print(f"tdebug: {self.base_fn.__name__} config #{index} ({config_text(config)}) does not fit "
                          f"this GPU ({e}); running the next config that fits", file=sys.stderr)
                    continue
                self.best_config = config
                return out
        finally:
            self.nargs = None

    autotuner.Autotuner.run = run


def _check_dtypes_and_record() -> None:
    import torch
    from triton.runtime import interpreter

    original = interpreter.GridExecutor._init_args_hst

    def _init_args_hst(self, args_dev, kwargs):
        for a in list(args_dev) + list(kwargs.values()):
            if isinstance(a, torch.Tensor) and a.dtype == torch.bfloat16:
                raise UnsupportedDtypeError(
                    "bf16 gives wrong results in Triton 3.6's CPU interpreter; use fp32/fp16 here, "
                    "or bf16 on a GPU (--mode debug / tdebug check --device cuda)")
        return original(self, args_dev, kwargs)

    interpreter.GridExecutor._init_args_hst = _init_args_hst
    original_call = interpreter.GridExecutor.__call__

    def __call__(self, *args, **kwargs):
        name = self.fn.__name__
        if STATE.launches and STATE.launches[-1].kernel == name and not STATE.launches[-1].grid:
            record = STATE.launches[-1]  # opened by the autotuner
        else:
            record = LaunchRecord(name, ())
            STATE.launches.append(record)
        return original_call(self, *args, **kwargs)

    interpreter.GridExecutor.__call__ = __call__
    builder = interpreter.interpreter_builder
    original_set_grid_dim = builder.set_grid_dim

    def set_grid_dim(nx, ny, nz):
        if STATE.launches:
            STATE.launches[-1].grid = (nx, ny, nz)
        return original_set_grid_dim(nx, ny, nz)

    builder.set_grid_dim = set_grid_dim


def install() -> None:
    if STATE.installed:
        return
    if os.environ.get("TRITON_INTERPRET") != "1":
        raise RuntimeError("tdebug's interpreter patches need TRITON_INTERPRET=1 set before import")
    _enable_device_assert()
    pin_autotune()
    _check_dtypes_and_record()
    STATE.installed = True
