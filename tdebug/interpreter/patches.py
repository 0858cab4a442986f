"""Patches that make Triton's CPU interpreter a debugging tool. Installed in the child process, after
TRITON_INTERPRET=1 is set and before any kernel runs, all through versions.patch (Triton 3.6 to 3.9):

- tl.device_assert fires (Triton skips it: InterpreterOptions.debug is always False), reporting the
  message, the kernel's source line, the program id and how many lanes failed. This also turns on the
  interpreter's int32 overflow checks, which are built on device_assert.
- @triton.autotune runs one pinned config instead of benchmarking through a GPU driver (which crashes
  with "0 active drivers" on a CPU-only machine); which config ran is recorded.
- real kernels run: scalar arguments typed as on the GPU (scalars.py), libdevice math (libdevice.py),
  grids as compiled Triton reads them (grid.py), exact bf16 and fp8 casts (bf16.py), a * b + c rounded
  once as the GPU's fused multiply-add does (fma.py); fp16 <-> fp32 casts at torch's speed (casts.py).
- every launch is recorded (kernel name, grid, config) so a caller can tell that a Triton kernel ran.
- Triton 3.6 under numpy >= 2.4: `range()` over a scalar tensor works (3.6's tl.tensor.__index__ calls
  int() on a 1-element array, which numpy 2.4 refuses; 3.7 squeezes it first, and so does this patch).
- builtins bound to module-level names work in kernels (aliases.py); block-pointer masks reach the
  memory ops as TensorHandles (block_pointers.py).
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from dataclasses import dataclass, field

import numpy as np

from .batched import loop_lanes, predicated_ifs, predicated_loops
from .fast import front_end_shortcuts, launch_memo, reduce_scan
from .frames import KernelError, current_pid, user_frame
from .hooks import overflow
from .semantics import aliases, block_pointers, boolops, compiled, constexprs, device_tables, loop_counters, recursion
from .versions import TRITON, bind, patcher, take_faults


class DeviceAssertError(KernelError, AssertionError):
    def __init__(self, message: str, file: str, line: int, pid: tuple[int, ...], failed: int, total: int,
                 kind: str = "assert") -> None:
        self.message, self.file, self.line, self.pid = message, file, line, pid
        self.failed, self.total, self.kind = failed, total, kind
        super().__init__(f"{file}:{line}: device_assert failed in program {pid}: {message} "
                         f"({failed} of {total} lanes)")


@dataclass
class LaunchRecord:
    kernel: str
    grid: tuple[int, ...]
    config: str = ""
    config_index: int | None = None
    survivors: list[int] = field(default_factory=list)  # autotuned: the configs its pruning keeps (indices)
    config_count: int = 0  # how many autotune configs the kernel has (0: not autotuned)
    seconds: float = 0.0  # wall time of the launch, tdebug's checks in it included (layer "launch_clock")
    file: str = ""  # the kernel's source file (compute-sanitizer's line info names only its base name)


@dataclass
class State:
    config_index: int | None = None  # autotune config to run (index into the kernel's configs)
    config_rank: int = 0  # with no config_index: the rank-th config that survives the kernel's pruning
    clamp_config: bool = False  # a kernel with fewer configs runs its last one instead of failing
    launches: list[LaunchRecord] = field(default_factory=list)
    installed: bool = False


STATE = State()


def announce_launches(feed: list[LaunchRecord]) -> None:
    """Record this process's launches into `feed` from now on (a list that may announce them to the parent)."""
    STATE.launches = feed


def forget_launches(keep: int) -> None:
    """Drop every launch record after the first `keep` (launches tdebug made itself, a probe's)."""
    del STATE.launches[keep:]


def clamp_configs(flag: bool) -> None:
    """Whether a kernel with fewer autotune configs than asked runs its last one instead of failing."""
    STATE.clamp_config = flag


def begin_case(config_index: int | None, config_rank: int = 0, clamp_config: bool | None = None) -> None:
    """A case, test or script run begins: the autotune config it asks for, no launches yet (the list is
    emptied in place: it may announce launches to the parent), no fault or store record of an earlier one."""
    from .hooks.stores import RECORDER

    STATE.config_index, STATE.config_rank = config_index, config_rank
    if clamp_config is not None:
        STATE.clamp_config = clamp_config
    STATE.launches.clear()
    take_faults()  # a fault of an earlier case was reported with it
    RECORDER.clear()


def _enable_device_assert() -> None:
    from triton.runtime import interpreter

    builder = interpreter.interpreter_builder
    builder.options = dataclasses.replace(builder.options, debug=True)

    def make(original):
        def create_assert(*args, **kwargs):
            call = bind(original, args, kwargs)
            data = np.asarray(call.arguments["condition"].data)
            if bool(data.all()):
                return None
            message = str(call.arguments["message"])
            frame = user_frame()
            file = frame.f_code.co_filename if frame else ""
            line = frame.f_lineno if frame else 0
            kind = "overflow" if "overflow detected" in message else "assert"
            if kind == "overflow" and not overflow.STRICT:
                overflow.overflowed(file, line, message)  # a finding only where it reaches an address or a store
                return None
            raise DeviceAssertError(message, file, line, current_pid(), int((~data.astype(bool)).sum()),
                                    int(data.size), kind=kind)

        return create_assert

    patcher("device_assert")(builder, "create_assert", make)
    from triton.language.semantic import TritonSemantic

    patcher("device_assert")(TritonSemantic, "binary_op_sanitize_overflow_impl", _signed_overflow_only)


def _signed_overflow_only(original):
    """Triton's overflow check asserts on unsigned operands too (naming them int32): unsigned arithmetic
    wraps by definition, and kernels rely on it (Liger's MoE scan adds packed uint32 keys), so only
    signed operands are checked; and 8- and 16-bit arithmetic, which kernels wrap on purpose (bytes, pixels,
    packed fields), only under --check overflow-all."""

    def binary_op_sanitize_overflow_impl(*args, **kwargs):
        scalar = bind(original, args, kwargs).arguments["lhs"].type.scalar
        if scalar.is_int_unsigned() or (scalar.int_bitwidth < 32 and not overflow.STRICT):
            return None
        return original(*args, **kwargs)

    return binary_op_sanitize_overflow_impl


def config_text(config) -> str:
    """BLOCK_M=128 BLOCK_N=256 warps=8 stages=3: a config as a person reads it."""
    parts = [f"{k}={v}" for k, v in config.kwargs.items()]
    parts += [f"warps={config.num_warps}", f"stages={config.num_stages}"]
    return " ".join(parts)


def surviving_configs(tuner, kwargs: dict) -> list[int]:
    """Indices of the configs that the tuner's prune_configs_by / early_config_prune keep for this call,
    pruned by the tuner's own prune_configs (so the user's function is called as Triton calls it)."""
    if len(tuner.configs) < 2:
        return list(range(len(tuner.configs)))
    kept = tuner.prune_configs(kwargs)  # a bad early_config_prune signature fails here, as on a GPU
    ids = {id(c): i for i, c in enumerate(tuner.configs)}
    return [ids[id(c)] if id(c) in ids else tuner.configs.index(c) for c in kept]


def pin_autotune() -> None:
    """@triton.autotune kernels run one pinned config instead of benchmarking every config: under the
    interpreter there is no GPU to time them on (plain Triton crashes with "0 active drivers"), and on a
    GPU every case must run its own config. The config is STATE.config_index when set (catalogue cases,
    --config N), else the STATE.config_rank-th one that survives the kernel's pruning (a script is run
    once per surviving config). A config that does not fit the GPU (OutOfResources: shared memory,
    registers) is skipped for the next one that fits, as the autotuner would skip it, and the skip is
    said on stderr. Which config ran, and which survived pruning, is recorded."""
    from triton.runtime import autotuner
    from triton.runtime.errors import OutOfResources

    def run(self, *args, **kwargs):  # Autotuner.run(self, *args, **kwargs) in 3.6 to 3.9
        self.nargs = dict(zip(self.arg_names, args))
        want = STATE.config_index
        if want is not None and STATE.clamp_config:
            want = min(want, len(self.configs) - 1)
        if want is not None and want >= len(self.configs):
            raise IndexError(f"config {want} requested but {self.base_fn.__name__} has "
                             f"{len(self.configs)} autotune configs (0..{len(self.configs) - 1})")
        survivors = surviving_configs(self, kwargs)
        if want is None:
            want = survivors[STATE.config_rank] if STATE.config_rank < len(survivors) else survivors[0]
        order = [want] + [i for i in range(len(self.configs)) if i != want]
        try:
            for n, index in enumerate(order):
                config = self.configs[index]
                record = LaunchRecord(self.base_fn.__name__, (), config_text(config), index, survivors,
                                      len(self.configs), file=source_file(self.base_fn))
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

    patcher("autotune")(autotuner.Autotuner, "run", lambda original: run)


class _LaunchRecorder:
    """Every launch recorded (a listener of grid_loop): its kernel now, its grid from set_grid_dim."""

    @staticmethod
    def on_launch(launch) -> None:
        name = launch.executor.fn.__name__
        if STATE.launches and STATE.launches[-1].kernel == name and not STATE.launches[-1].grid:
            pass  # opened by the autotuner: the grid comes next
        else:
            STATE.launches.append(LaunchRecord(name, (), file=source_file(launch.executor.fn)))


_SOURCE_FILES: dict[str, str] = {}  # a code object's file name -> its absolute path


def source_file(fn) -> str:
    code = getattr(fn, "__code__", None)
    if code is None or code.co_filename.startswith("<"):
        return ""
    found = _SOURCE_FILES.get(code.co_filename)
    if found is None:
        found = _SOURCE_FILES[code.co_filename] = os.path.abspath(code.co_filename)
    return found


class _LaunchClock:
    """A launch's seconds, all of tdebug's work in it included (a listener of grid_loop's, layer "launch_clock":
    around every layer but the lock's)."""

    @staticmethod
    def around_launch(proceed, executor, *args, **kwargs):
        started = time.perf_counter()
        try:
            return proceed(executor, *args, **kwargs)
        finally:
            if STATE.launches:  # the record this launch opened (or the autotuner opened for it)
                STATE.launches[-1].seconds += time.perf_counter() - started


def _record_grid(original):
    def set_grid_dim(*args, **kwargs):
        if STATE.launches:
            if len(args) == 3 and not kwargs:  # (grid_loop's call: nx, ny, nz)
                STATE.launches[-1].grid = args
            else:
                call = bind(original, args, kwargs)
                STATE.launches[-1].grid = (call.arguments["nx"], call.arguments["ny"], call.arguments["nz"])
        return original(*args, **kwargs)

    return set_grid_dim


def _squeeze_index(original):
    """Triton 3.6: tl.tensor.__index__ as 3.7 has it (numpy >= 2.4 refuses int() of a 1-element array)."""

    def _patch_lang_tensor(*args, **kwargs):
        out = original(*args, **kwargs)
        call = bind(original, args, kwargs)
        call.arguments["scope"].set_attr(call.arguments["tensor"], "__index__",
                                         lambda self: int(self.handle.data.squeeze()))
        return out

    return _patch_lang_tensor


def _record_launches() -> None:
    from triton.runtime import interpreter

    from .batched import grid_loop

    patch = patcher("launch_record")
    grid_loop.listen("launch_record", _LaunchRecorder())
    grid_loop.listen("launch_clock", _LaunchClock())
    patch(interpreter.interpreter_builder, "set_grid_dim", _record_grid)
    if TRITON < (3, 7):
        patch(interpreter, "_patch_lang_tensor", _squeeze_index)  # Triton 3.6 under numpy >= 2.4


def install(exact_values: bool = True) -> None:
    """Install every patch. exact_values=False leaves out exact bf16/fp8 and fused multiply-add rounding
    (for triton-viz's symbolic engine, whose values are expressions, not numbers). What runs inside what on
    one internal is versions.LAYERS, not the order below."""
    if STATE.installed:
        return
    if os.environ.get("TRITON_INTERPRET") != "1":
        raise RuntimeError("tdebug's interpreter patches need TRITON_INTERPRET=1 set before import")
    from .batched import batch_memory, grid_loop, launch_replay
    from .fast import casts, op_memo
    from .hooks import memory_guard, provenance
    from .semantics import bf16, compat, fma, grid, libdevice, scalars, tf32

    grid_loop.install()
    memory_guard.install()
    batch_memory.install()
    provenance.install()
    _enable_device_assert()
    pin_autotune()
    _record_launches()
    device_tables.install()  # pointer tables of device addresses, on a GPU: to the launch's host copies
    for module in (scalars, compat, grid, libdevice, casts) + ((bf16, fma, tf32) if exact_values else ()):
        module.install()
    aliases.install()
    launch_memo.install()
    front_end_shortcuts.install()
    if exact_values:  # triton-viz's symbolic engine: its values are expressions, its ops its own
        op_memo.install()
        reduce_scan.install()
        launch_replay.install()
    block_pointers.install()
    boolops.install()
    if exact_values:
        predicated_loops.install()
        predicated_ifs.install()
        loop_lanes.install()
        loop_counters.install()
    constexprs.install()
    overflow.install()
    recursion.install()
    compiled.install()  # launches from torch.compile'd code run eagerly
    STATE.installed = True
