"""Trace every kernel launch of this process with triton-viz's Tracer and reduce it to a LaunchMap.

Runs in the child process (tdebug.viz.trace_child), with TRITON_INTERPRET=1 set before Triton was imported.
Every launch goes through InterpretedFunction.run, so patching that one method traces catalogue
kernels, autotuned kernels (after tdebug's autotune pinning picked a config) and kernels of arbitrary
scripts alike, with no change to their source. (Wrapping a kernel with `triton_viz.trace()` instead
fails on an autotuned kernel under the interpreter: its warm-up copy has no JIT function,
"'NoneType' object has no attribute 'warmup'".)
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from .model import LaunchMap
from .reduce import ArgTensor, Attributor, TensorAccumulator
from .safe_launch import GUARD

DTYPE_NAMES = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "float64": "fp64", "int32": "int32",
               "int64": "int64", "int8": "int8", "uint8": "uint8", "int16": "int16", "bool": "bool"}


@dataclass
class TraceSession:
    sink: Callable[[LaunchMap], None]
    pid: tuple[int, int, int] | None = None
    keep_for_server: bool = False  # leave the raw launches in triton-viz's list (for its visualizer)
    count: int = 0
    launches: list[LaunchMap] = field(default_factory=list)


SESSION: TraceSession | None = None


@dataclass
class AtomicAccess:
    """An atomic read-modify-write (the Tracer records loads and stores only)."""

    pid: tuple[int, int, int]
    addr: np.ndarray
    mask: np.ndarray | None


def _viz_tracer_class():
    from triton_viz.clients import Tracer
    from triton_viz.core.callbacks import OpCallbacks
    from triton_viz.core.data import AtomicCas, AtomicRMW

    class VizTracer(Tracer):
        """triton-viz's Tracer, also keeping each tensor argument's parameter name, the grid, and atomics."""

        def __init__(self, grid_idx=None) -> None:
            super().__init__(grid_idx=grid_idx)
            self.named_args: list[tuple[str, object]] = []
            self.launch_grid: tuple[int, int, int] = (1, 1, 1)
            self.atomics: list[AtomicAccess] = []
            self.current: tuple[int, int, int] = (0, 0, 0)

        def grid_idx_callback(self, grid_idx):
            super().grid_idx_callback(grid_idx)
            self.current = tuple(grid_idx)

        def register_op_callback(self, op_type):
            if op_type is AtomicRMW:
                return OpCallbacks(before_callback=lambda op, ptr, val, mask, *rest: self._atomic(ptr, mask))
            if op_type is AtomicCas:
                return OpCallbacks(before_callback=lambda ptr, *rest: self._atomic(ptr, None))
            return super().register_op_callback(op_type)

        def _atomic(self, ptr, mask) -> None:
            if self.sample:
                addr = np.asarray(ptr.data).astype(np.uint64).view(np.int64)
                self.atomics.append(AtomicAccess(self.current, addr, None if mask is None else np.asarray(mask.data)))

        def arg_callback(self, name, arg, arg_cvt):
            super().arg_callback(name, arg, arg_cvt)
            if hasattr(arg, "data_ptr") and hasattr(arg, "untyped_storage"):
                self.named_args.append((name, arg))
            elif hasattr(getattr(arg, "base", None), "untyped_storage"):  # a TensorDescriptor
                self.named_args.append((name, arg.base))
                super().arg_callback(name, arg.base, arg_cvt)

        def grid_callback(self, grid):
            super().grid_callback(grid)
            self.launch_grid = tuple(int(g) for g in grid)

    return VizTracer


def install(session: TraceSession) -> None:
    """Trace every launch from now on; call after tdebug.interpreter.patches.install() and safe_launch.install()."""
    global SESSION
    from triton.runtime.interpreter import InterpretedFunction
    from triton_viz.core.client import ClientManager
    from triton_viz.core.config import config

    config.num_sms = 1  # programs one after another, as the reduction (one writer per program) assumes
    SESSION = session
    viz_tracer = _viz_tracer_class()
    original_run = InterpretedFunction.run

    def run(self, *args, grid, warmup, **kwargs):
        if warmup:
            return original_run(self, *args, grid=grid, warmup=warmup, **kwargs)
        tracer = viz_tracer(grid_idx=session.pid)
        manager = ClientManager([tracer])
        config = _pending_config(self.fn.__name__)
        GUARD.begin()
        error = ""
        try:
            with manager.patch_run(self.fn, backend="triton"):
                return original_run(self, *args, grid=grid, warmup=False, client_manager=manager, jit_fn=None,
                                    **kwargs)
        except BaseException as exc:
            error = f"{type(exc).__name__}: {exc}"
            raise
        finally:
            GUARD.end()
            manager.finalize()
            session.count += 1
            launch = reduce_launch(session.count, self.fn, tracer, manager.launch.records, config, session.pid,
                                   error)
            session.launches.append(launch)
            session.sink(launch)
            if session.keep_for_server:
                sys.modules["triton_viz.core.trace"].launches.append(manager.launch)

    InterpretedFunction.run = run


def _pending_config(name: str) -> str:
    """The config tdebug's pinned autotuner chose for the launch about to run, if it is autotuned."""
    from ..interpreter.patches import STATE

    if STATE.launches and STATE.launches[-1].kernel == name and not STATE.launches[-1].grid:
        record = STATE.launches[-1]
        return f"config {record.config_index}: {record.config}"
    return ""


def dtype_name(dtype) -> str:
    text = str(dtype).replace("torch.", "")
    return DTYPE_NAMES.get(text, text)


def arg_tensors(named_args: list[tuple[str, object]]) -> list[ArgTensor]:
    args = []
    for name, t in named_args:
        if t.numel() == 0:
            continue
        lo, hi = GUARD.region_of(t)
        args.append(ArgTensor(name=name, shape=tuple(t.shape), strides=tuple(t.stride()), elsize=t.element_size(),
                              dtype=dtype_name(t.dtype), base=t.data_ptr(), region_start=lo, region_end=hi))
    return args


def reduce_launch(index: int, fn, tracer, records: list, config: str, pid: tuple[int, int, int] | None,
                  error: str) -> LaunchMap:
    from triton_viz.core.data import Grid, Load, Store

    grid = tracer.launch_grid
    args = arg_tensors(tracer.named_args)
    attributor = Attributor(args)
    accumulators = [TensorAccumulator(a) for a in args]
    current = stray = 0
    for rec in records:
        if isinstance(rec, Grid):
            x, y, z = (tuple(rec.idx) + (0, 0))[:3]
            current = x + y * grid[0] + z * grid[0] * grid[1]
            continue
        kind = "load" if isinstance(rec, Load) else "store" if isinstance(rec, Store) else None
        if kind is None or not args:
            continue
        addr = (np.asarray(rec.offsets).astype(np.uint64) + np.uint64(rec.ptr)).view(np.int64).reshape(
            np.shape(rec.offsets))
        which = attributor.attribute(addr.reshape(-1))
        if which is None:
            stray += int(np.asarray(rec.masks, dtype=bool).sum())
        else:
            accumulators[which].add(kind, current, addr, rec.masks)
    for atomic in tracer.atomics:
        which = attributor.attribute(atomic.addr.reshape(-1))
        if which is None:
            stray += int(np.asarray(atomic.mask if atomic.mask is not None else True).sum())
        else:
            x, y, z = atomic.pid
            accumulators[which].add("atomic", x + y * grid[0] + z * grid[0] * grid[1], atomic.addr, atomic.mask)
    tensors = [acc.finish(is_output=False, partial=pid is not None) for acc in accumulators]
    return LaunchMap(index=index, kernel=fn.__name__, grid=grid, config=config, pid=pid, error=error,
                     source=_source(fn), stray_lanes=stray, tensors=tensors)


def _source(fn) -> str:
    try:
        lines, start = inspect.getsourcelines(fn)
        return f"{inspect.getsourcefile(fn)}:{start}"
    except (OSError, TypeError):
        return ""
