"""Trace every kernel launch of this process through the interpreter's own hooks; reduce it to a LaunchMap.

Runs in the child process (tdebug.viz.trace_child), with TRITON_INTERPRET=1 set before Triton was
imported, after tdebug.interpreter.patches.install() and safe_launch.install(). It listens to the
builder's memory ops (interpreter.hooks.memory_events, the events the sanitizer checks) outside safe_launch's
guard, so it records each access with the kernel's own mask before the guard masks off lanes outside
every argument. Every launch
goes through InterpretedFunction.run, so catalogue kernels, autotuned kernels (after tdebug's autotune
pinning picked a config) and kernels of arbitrary scripts are traced alike, with no change to their
source, on every Triton tdebug supports. triton-viz (which imports with Triton 3.6 and 3.7 only) is
used for `--serve` alone: its Tracer then records, in the same launch, what its visualizer shows.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..interpreter.batched import program_axis
from ..interpreter.hooks import memory_events
from ..interpreter.versions import bind, patcher
from .model import LaunchMap
from .reduce import ArgTensor, Attributor, TensorAccumulator
from .safe_launch import GUARD

patch = patcher("trace")

DTYPE_NAMES = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "float64": "fp64", "int32": "int32",
               "int64": "int64", "int8": "int8", "uint8": "uint8", "int16": "int16", "bool": "bool"}


@dataclass
class TraceSession:
    sink: Callable[[LaunchMap], None]
    pid: tuple[int, int, int] | None = None
    keep_for_server: bool = False  # also record the launches with triton-viz's Tracer (for its visualizer)
    count: int = 0
    launches: list[LaunchMap] = field(default_factory=list)

    def install(self) -> None:
        install(self)


SESSION: TraceSession | None = None


@dataclass
class Access:
    """One load, store or atomic of one program: every lane's address and the kernel's own mask."""

    kind: str  # load, store, atomic
    pid: int  # linear program id
    addr: np.ndarray  # int64 byte addresses
    mask: np.ndarray | None


@dataclass
class LaunchTrace:
    """What one launch touched: its tensor arguments by parameter name, its grid, its accesses."""

    fn: Callable
    only: tuple[int, int, int] | None = None  # record this program only (--pid)
    named_args: list[tuple[str, object]] = field(default_factory=list)
    grid: tuple[int, int, int] = (1, 1, 1)
    accesses: list[Access] = field(default_factory=list)

    def add_args(self, names: list[str], args_hst: list, kwargs_hst: dict) -> None:
        for name, arg in list(zip(names, args_hst)) + list(kwargs_hst.items()):
            if hasattr(arg, "data_ptr") and hasattr(arg, "untyped_storage"):
                self.named_args.append((name, arg))
            elif hasattr(getattr(arg, "base", None), "untyped_storage"):  # a TensorDescriptor
                self.named_args.append((name, arg.base))

    def record(self, kind: str, ptrs, mask) -> None:
        from triton.runtime.interpreter import interpreter_builder

        pid = tuple(interpreter_builder.grid_idx)
        if self.only is not None and pid != self.only:
            return
        self.grid = tuple(interpreter_builder.grid_dim)
        addr = np.asarray(ptrs.data).astype(np.uint64).view(np.int64)
        lanes = None if mask is None else np.broadcast_to(np.asarray(mask.data, dtype=bool), addr.shape)
        linear = pid[0] + self.grid[0] * (pid[1] + self.grid[1] * pid[2])
        self.accesses.append(Access(kind, linear, addr, lanes))


CURRENT: LaunchTrace | None = None


class _Recorder:
    """Each memory op of the launch traced (interpreter.hooks.memory_events), with the mask the kernel gave it; the
    batched engine undoes a batch it splits (its checkpoints): the accesses it traced go too."""

    @staticmethod
    def on_host_args(launch, args_hst: list, kwargs_hst: dict) -> None:
        """The launch's arguments by name, as the interpreter's host copies (relocated by safe_launch: the
        addresses traced)."""
        if CURRENT is not None:
            CURRENT.add_args(list(launch.executor.arg_names), args_hst, kwargs_hst)

    @staticmethod
    def before(access: memory_events.Access) -> None:
        if CURRENT is not None:
            CURRENT.record(access.kind, access.ptrs, access.mask)

    def checkpoint(self) -> tuple:
        launch = CURRENT
        return launch, len(launch.accesses) if launch is not None else 0

    def rollback(self, token: tuple) -> None:
        launch, count = token
        if launch is not None:
            del launch.accesses[count:]

    def commit(self, token: tuple) -> None:
        pass


def install(session: TraceSession) -> None:
    """Trace every launch from now on; call after interpreter.patches.install() and safe_launch.install()."""
    global SESSION
    from triton.runtime import interpreter

    SESSION = session
    builder = interpreter.interpreter_builder
    memory_events.listen("trace", _Recorder())  # and each launch's host copies
    program_axis.set_per_lane(False)  # its records are one program's accesses at a time
    serve = _viz_server_run() if session.keep_for_server else None

    def make(original):
        def run(*args, **kwargs):
            global CURRENT
            call = bind(original, args, kwargs)
            if call.arguments["warmup"]:
                return original(*args, **kwargs)
            fn = call.arguments["self"].fn
            config = _pending_config(fn.__name__)
            only = None if session.pid is None else (tuple(session.pid) + (0, 0, 0))[:3]
            CURRENT = launch = LaunchTrace(fn, only=only)
            GUARD.begin()
            error = ""
            try:
                if serve is not None:
                    return serve(original, args, kwargs)
                return original(*args, **kwargs)
            except BaseException as exc:
                error = f"{type(exc).__name__}: {exc}"
                raise
            finally:
                GUARD.end()
                CURRENT = None
                launch.grid = tuple(getattr(builder, "grid_dim", None) or launch.grid)
                session.count += 1
                mapped = reduce_launch(session.count, launch, config, session.pid, error)
                session.launches.append(mapped)
                session.sink(mapped)

        return run

    patch(interpreter.InterpretedFunction, "run", make)


def _viz_server_run():
    """`--serve` (triton-viz imports: Triton 3.6/3.7): run each launch under triton-viz's Tracer as well
    and keep its records for its visualizer. triton-viz swaps in its own grid loop and builder-op
    wrappers for the launch; those call the ops it captured at import, so point them at tdebug's."""
    from triton.runtime.interpreter import interpreter_builder
    from triton_viz.clients import Tracer
    from triton_viz.core.client import ClientManager
    from triton_viz.core.config import config as viz_config
    from triton_viz.frontends.base import OPERATION_REGISTRY

    viz_config.num_sms = 1  # programs one after another, as the reduction (one writer per program) assumes
    ops = OPERATION_REGISTRY["triton"].original_ops[interpreter_builder]
    for name in ops:
        ops[name] = getattr(interpreter_builder, name)

    def run(original, args, kwargs):
        manager = ClientManager([Tracer()])
        fn = args[0].fn
        try:
            with manager.patch_run(fn, backend="triton"):
                return original(*args, **kwargs, client_manager=manager, jit_fn=None)
        finally:
            manager.finalize()
            sys.modules["triton_viz.core.trace"].launches.append(manager.launch)

    return run


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


def reduce_launch(index: int, launch: LaunchTrace, config: str, pid: tuple[int, int, int] | None,
                  error: str) -> LaunchMap:
    args = arg_tensors(launch.named_args)
    attributor = Attributor(args)
    accumulators = [TensorAccumulator(a) for a in args]
    stray = 0
    for access in launch.accesses:
        if not args:
            break
        which = attributor.attribute(access.addr.reshape(-1))
        if which is None:
            stray += int(np.asarray(access.mask if access.mask is not None else True, dtype=bool).sum())
        else:
            accumulators[which].add(access.kind, access.pid, access.addr, access.mask)
    tensors = [acc.finish(is_output=False, partial=pid is not None) for acc in accumulators]
    fn = launch.fn
    return LaunchMap(index=index, kernel=fn.__name__, grid=launch.grid, config=config, pid=pid, error=error,
                     source=_source(fn), stray_lanes=stray, tensors=tensors)


def _source(fn) -> str:
    try:
        lines, start = inspect.getsourcelines(fn)
        return f"{inspect.getsourcefile(fn)}:{start}"
    except (OSError, TypeError):
        return ""
