"""The launch's grid loop, serial or batched: which engine runs a launch, and the batched engine's loop.

Triton's interpreter runs `for x: for y: for z: set_grid_idx(x, y, z); kernel(**args)`. The batched engine runs
the programs of a launch in batches (program_axis.py: every value carries a program axis), each batch once
through the kernel's Python code. A batch whose programs disagree on a value used for Python control flow (a
loop bound, an `if`, an early return) is split by that value and each part runs again from the start of the
batch: what the batch had done is undone first (the memory of the launch's tensors is put back by
batch_memory.MemoryUndo: the old values of the elements its stores wrote, or a copy of every storage taken before
its first store or atomic that Triton runs itself; and every listener that registered here - the sanitizer,
the store records, the nan check - goes back to its checkpoint), so no side effect happens twice. A part of
one program runs on the serial engine. A launch the batched engine cannot run (a spin lock found taken,
device_print, a breakpoint, block pointers: program_axis.Unported, or prescan.py says so before it starts) runs
on the serial engine, from a clean state.

Which engine: TDEBUG_EXECUTOR = auto (default: batched where it can), batched, or serial (the reference).
"""

from __future__ import annotations

import contextlib
import inspect
import operator
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ... import settings
from ..frames import ReplayAbort
from ..versions import LAYERS, forget_fault, layers_of, patcher
from . import launch_replay, prescan, program_axis
from .atomic_order import AtomicConflict
from .batch_memory import MemoryUndo
from .launch import Launch, current_launch, enter, leave, storages
from .program_axis import Batch, Divergent, LanesRefused, Unported

patch = patcher("grid_loop")

EXECUTORS = ("auto", "batched", "serial")
MAX_BATCH = 4096  # programs in one batch, at most
# A value of one batch holds about this many elements (a memory op's block times the programs of a batch).
BATCH_ELEMENTS = settings.get("TDEBUG_BATCH_ELEMENTS")
FIRST_BATCH = 64  # until a launch's block sizes are known


class Listener(Protocol):
    """The one listener protocol: every hook is optional, a listener offers the ones it needs and is registered
    once, at its layer's place in versions.LAYERS (`listen` here, or `memory_events.listen` for one that also
    hears memory ops: `before(access)` / `after(access, result)`, see memory_events.py).

    A launch: `around_launch(proceed, executor, *args, **kwargs)` around all of it, the other hooks included
    (outermost layer first; it calls `proceed(executor, *args, **kwargs)` for the layers inside it and the launch
    itself, once, or again for a launch of its own: the sanitizer's probe past the grid); `on_launch(launch)`
    before anything of it runs (outermost first); `host_args(launch)` the host copies of the arguments it already
    has, or None (outermost first; the first one's stand in for Triton's own: the probe reuses its launch's);
    `before_host_args(launch)` before the interpreter copies the arguments to the host (outermost first);
    `on_host_args(launch,
    args_hst, kwargs_hst)` once the interpreter made its host copies of the arguments (innermost first, as
    wrappers of `_init_args_hst` would see them: one may return copies of its own, (args_hst, kwargs_hst), that
    the ones outside it get); `on_launch_end(launch, error)` after the launch (innermost first; error: what it
    raised, None), also after a launch whose `on_launch` of another listener raised. A batch of the batched
    engine: `checkpoint()`, then `rollback(token)` or `commit(token)`, and `serial_reason(token)`."""

    def checkpoint(self) -> Any: ...

    def rollback(self, token: Any) -> None: ...

    def commit(self, token: Any) -> None: ...

    def serial_reason(self, token: Any) -> str | None:
        """Why the batch since `token` must run again on the serial engine (None: it need not)."""
        ...


@dataclass
class Stats:
    launches_batched: int = 0
    launches_serial: int = 0
    batches: int = 0
    splits: int = 0
    predicated_loops: int = 0  # loops run once to the largest trip count of a batch (predicated_loops.py)
    compacted_iterations: int = 0  # their iterations run on the programs in the loop only (predicated_loops.py)
    predicated_ifs: int = 0  # `if`s whose branches each ran for the programs taking it (predicated_ifs.py)
    lane_chunks: int = 0  # chunks of a loop's iterations run as lanes of one batch (loop_lanes.py)
    lane_iterations: int = 0  # the iterations in them
    lane_folds: int = 0  # accumulators folded over a chunk as whole numpy ops (lane_folds.py)
    lanes_refused: int = 0  # batches run again with a loop iterating as written (program_axis.LanesRefused)
    recordings: int = 0  # batches recorded for replays of their key (launch_replay.py), kept
    replays: int = 0  # batches replayed from a recording
    replay_aborts: int = 0  # replays that gave up (the batch ran the ordinary way)
    fallbacks: list[str] = field(default_factory=list)  # why a launch ran serially

    def predicated_loop(self, compacted: bool = False) -> None:
        """One more loop run to the largest trip count of a batch (compacted: one more iteration of one run on
        the programs still in the loop only)."""
        if compacted:
            self.compacted_iterations += 1
        else:
            self.predicated_loops += 1

    def predicated_if(self) -> None:
        """One more `if` run as both its branches, each for the programs taking it (predicated_ifs.py)."""
        self.predicated_ifs += 1

    def lane_fold(self) -> None:
        """One more accumulator folded over a chunk as whole numpy ops (lane_folds.py)."""
        self.lane_folds += 1

    def lane_chunk(self, iterations: int) -> None:
        """One more chunk of a loop's iterations run as lanes (loop_lanes.py)."""
        self.lane_chunks += 1
        self.lane_iterations += iterations


STATS = Stats()
FORCE_SERIAL: list[str] = []  # reasons the whole process runs serially (a breakpoint is set)
REFUSED_LANES: set[tuple] = set()  # (code, line, constants) of each loop whose lanes met what they cannot run


def executor() -> str:
    return settings.get("TDEBUG_EXECUTOR")  # checked at start-up (tdebug.settings): never a silent "auto"


def force_serial(reason: str) -> None:
    """Every later launch of this process runs on the serial engine, for `reason` (a breakpoint is set)."""
    FORCE_SERIAL.append(reason)
    launch_replay.forget()


@contextlib.contextmanager
def serially(reason: str) -> Iterator[None]:
    """Launches inside the block run on the serial engine, for `reason` (the unwritten check's probe past the
    grid: its program's id comes from set_grid_idx)."""
    FORCE_SERIAL.append(reason)
    try:
        yield
    finally:
        FORCE_SERIAL.remove(reason)


class _Listening:
    """The registered listeners, outermost layer first, and each hook's callers in the order it runs."""

    def __init__(self) -> None:
        # (rank in versions.LAYERS, listener, the memory ops it hears: memory_events.listen)
        self.entries: list[tuple[int, Any, frozenset[str]]] = []
        self.batch: list[Any] = []  # listeners with a batch's checkpoint (outermost first)
        self.around_launch: list[Callable] = []  # outermost first
        self.host_args: list[Callable] = []  # outermost first
        self.on_launch: list[Callable] = []  # outermost first
        self.before_host_args: list[Callable] = []  # outermost first
        self.on_host_args: list[Callable] = []  # innermost first
        self.on_launch_end: list[Callable] = []  # innermost first

    def add(self, layer: str, listener: Any, ops: frozenset[str] = frozenset()) -> None:
        rank = LAYERS.index(layer)
        self.entries = [e for e in self.entries if e[1] is not listener] + [(rank, listener, ops)]
        self.entries.sort(key=lambda e: -e[0])  # the same order whatever the order of listen() calls
        outer_first = [e[1] for e in self.entries]
        self.batch[:] = [x for x in outer_first if hasattr(x, "checkpoint")]
        self.around_launch[:] = [x.around_launch for x in outer_first if hasattr(x, "around_launch")]
        self.host_args[:] = [x.host_args for x in outer_first if hasattr(x, "host_args")]
        self.on_launch[:] = [x.on_launch for x in outer_first if hasattr(x, "on_launch")]
        self.before_host_args[:] = [x.before_host_args for x in outer_first if hasattr(x, "before_host_args")]
        self.on_host_args[:] = [x.on_host_args for x in reversed(outer_first) if hasattr(x, "on_host_args")]
        self.on_launch_end[:] = [x.on_launch_end for x in reversed(outer_first) if hasattr(x, "on_launch_end")]

    def names(self, hook: str) -> list[str]:
        """The layers of the listeners that offer `hook`, outermost first."""
        return [LAYERS[rank] for rank, x, _ in self.entries if hasattr(x, hook)]


LISTENING = _Listening()
LISTENERS = LISTENING.batch  # the batch's undo: every listener with a checkpoint


def listen(layer: str, listener: Any, ops: frozenset[str] = frozenset()) -> None:
    """Hand `listener` the hooks it offers (Listener) from now on, at `layer`'s place among the others
    (versions.LAYERS); listening again replaces its earlier registration. A listener of memory ops registers
    through memory_events.listen, which calls this with the ops it hears."""
    LISTENING.add(layer, listener, ops)
    launch_replay.forget()  # what a launch's listeners do may differ now
    hooks = (LISTENING.on_launch, LISTENING.before_host_args, LISTENING.on_host_args, LISTENING.on_launch_end,
             LISTENING.around_launch, LISTENING.host_args)
    if any(hooks) and not _installed():
        install()


def _verbose() -> bool:
    return settings.get("TDEBUG_VERBOSE")


def _say(text: str) -> None:
    if _verbose():
        print(f"tdebug: {text}", file=sys.stderr)


# -- the engine ------------------------------------------------------------------------------------------------
_ORDERS: dict[tuple[int, int, int], np.ndarray] = {}  # grid -> _order(grid), for grids of up to _ORDERS_KEPT programs
_ORDERS_KEPT = 1 << 16


def _order(grid: tuple[int, int, int]) -> np.ndarray:
    """Every program id, as (3, n), in the serial engine's order (x outermost, z innermost); read-only (kept per
    grid: a suite launches the same small grids again and again)."""
    found = _ORDERS.get(grid)
    if found is not None:
        return found
    xs, ys, zs = np.meshgrid(np.arange(grid[0]), np.arange(grid[1]), np.arange(grid[2]), indexing="ij")
    order = np.stack([xs.ravel(), ys.ravel(), zs.ravel()]).astype(np.int64)
    order.flags.writeable = False
    if order.shape[1] <= _ORDERS_KEPT:
        if len(_ORDERS) >= 256:
            _ORDERS.clear()
        _ORDERS[grid] = order
    return order


def _serial_program(fn, args: dict, pid: tuple[int, int, int]) -> None:
    from triton.runtime.interpreter import interpreter_builder

    interpreter_builder.set_grid_idx(*pid)
    fn(**args)


class BatchedLaunch:
    """One launch run by the batched engine; after an op it cannot batch, the rest of the launch runs serially."""

    def __init__(self, fn, launch: Launch, rebind: Callable[[], dict] | None = None) -> None:
        self.fn, self.launch = fn, launch
        # Where a replay left the language unpatched and the arguments unbound: patches it and binds them (for the
        # kernel's code to run after all), returning the arguments. (Not a closure over this object: no cycle.)
        self.rebind = rebind
        self.args, self.grid, self.storages = launch.args, launch.grid, launch.storages
        self.batch_size = FIRST_BATCH
        self.batch_cap = MAX_BATCH  # programs in one batch at most (less after atomics met: atomic_order.py)
        self.serial_from: str | None = None  # why the rest of the launch runs serially
        # A part of one program runs as a batch of one where the kernel has loops whose iterations may run as lanes
        # of a batch (loop_lanes.py), on the serial engine otherwise (None: not asked yet; the prescan parses the
        # kernel's source, which a launch whose parts all have several programs never needs)
        self.one_as_batch: bool | None = None
        self.replay: tuple | None = None  # (key, plan): the first batch, the whole launch, replays the plan
        self.record: tuple | None = None  # the key the first batch, the whole launch, is recorded for

    def _one_as_batch(self) -> bool:
        if self.one_as_batch is None:
            self.one_as_batch = prescan.lane_loops(self.fn)
        return self.one_as_batch

    def unreplayed(self) -> None:
        """The replay gave up (or this launch runs no replay after all): its kernel's code runs on its own
        arguments in the patched language."""
        if self.rebind is not None:
            self.args, self.rebind = self.rebind(), None

    def run(self) -> None:
        order = _order(self.grid)
        start = 0
        while start < order.shape[1]:
            if self.serial_from is not None:
                for i in range(start, order.shape[1]):
                    _serial_program(self.fn, self.args, tuple(int(v) for v in order[:, i]))
                return
            size = self.batch_size
            self._run_batch(order[:, start:start + size])
            start += size

    def _run_batch(self, pids: np.ndarray) -> None:
        todo = [pids]
        while todo:
            part = todo.pop(0)
            if (part.shape[1] == 1 and not self._one_as_batch()) or self.serial_from is not None:
                for i in range(part.shape[1]):
                    _serial_program(self.fn, self.args, tuple(int(v) for v in part[:, i]))
                continue
            if self.replay is not None:
                replay, self.replay = self.replay, None
                if self._replayed(part, *replay):
                    continue
            memory = MemoryUndo(self.storages)
            tokens = [listener.checkpoint() for listener in LISTENERS]
            batch = Batch(part, memory=memory)
            STATS.batches += 1
            launch = self.launch
            launch.batch = batch
            recording = None
            if self.record is not None:
                recording = launch_replay.Recording(launch, self.record)
                self.record, before = None, _engine_counts()
            try:
                try:
                    if recording is not None:
                        with _recorded(recording):
                            self.fn(**self.args)
                    else:
                        self.fn(**self.args)
                except Exception as error:
                    raise _engine_signal(error) or error  # noqa: B904 - the engine's own signal, unwrapped
            except (Divergent, Unported, LanesRefused) as signal:
                _undo(launch, memory, tokens, recording)
                if isinstance(signal, Divergent) and batch.open_lanes is not None:
                    # Lanes of a loop's iterations that disagree inside it (a predicated loop of a helper): that
                    # loop iterates as written
                    signal = LanesRefused(batch.open_lanes.key, "iterations of a loop diverge")
                if isinstance(signal, LanesRefused):
                    _refuse_lanes(signal.key)
                    _say(f"a loop's iterations as lanes: {signal.why}; the batch runs again")
                    if part.shape[1] == 1:
                        self.one_as_batch = False  # one program: the serial engine is the faster then
                    todo.insert(0, part)
                elif part.shape[1] == 1:  # a batch of one program gave up a predicated loop: the serial engine
                    self.one_as_batch = False
                    todo.insert(0, part)
                elif isinstance(signal, Unported):
                    self.serial_from = f"{signal.what} is not batched"
                    todo.insert(0, part)
                else:
                    STATS.splits += 1
                    todo = _split(part, signal.values) + todo
                    if isinstance(signal, AtomicConflict):  # batches as large as a lock's groups from here
                        self.batch_cap = min(self.batch_cap, todo[0].shape[1])
                continue
            except Exception as error:
                _undo(launch, memory, tokens, recording)
                forget_fault(error)
                if batch.open_lanes is not None:
                    # Raised while a loop's iterations ran as lanes: the batch again, that loop as written, so that
                    # a real error comes from the iteration that makes it.
                    _refuse_lanes(batch.open_lanes.key)
                    todo.insert(0, part)
                elif batch.predicated:
                    # Raised while programs were out of a loop (their values are stand-ins): run the programs again
                    # grouped by trip count, without the predicate, so a real error comes from the program making it.
                    STATS.splits += 1
                    todo = _split(part, batch.trip_counts) + todo
                else:
                    # The kernel's own error: the serial engine runs these programs again, so that it comes from
                    # the program that makes it, after what the programs before it did and nothing after (the
                    # batch ran every program up to the failing line: other programs' stores, findings, records).
                    self.serial_from = f"an error in the batch ({type(error).__name__})"
                    todo.insert(0, part)
                continue
            except BaseException:
                for listener, token in zip(LISTENERS, tokens):
                    listener.commit(token)
                raise
            finally:
                launch.batch = None
            why = _serial_reason(tokens)
            if why is not None:  # e.g. a race between programs: its findings depend on the programs' order
                _undo(launch, memory, tokens, recording)
                self.serial_from = why
                todo.insert(0, part)
                continue
            if recording is not None:
                _keep_recording(recording, batch, tokens, before, todo)
            self._commit(batch, tokens)

    def _replayed(self, part: np.ndarray, key: tuple, plan: launch_replay.Plan) -> bool:
        """Run the batch `part` (every program of the launch) by replaying `plan`; False: it gave up (ReplayAbort, or
        an error the ordinary run raises again where it belongs), and what it did is undone."""
        memory = MemoryUndo(self.storages)
        tokens = [listener.checkpoint() for listener in LISTENERS]
        batch = Batch(part, memory=memory)
        launch = self.launch
        launch.batch = batch
        try:
            launch_replay.run(plan, launch, batch)
        except Exception as error:
            _undo(launch, memory, tokens)
            forget_fault(error)
            launch_replay.aborted(key, plan)
            STATS.replay_aborts += 1
            reason = str(error) if isinstance(error, ReplayAbort) else f"{type(error).__name__}: {error}"
            _say(f"{self.launch.name}: its replay gave up ({reason}); the batch runs again")
            self.unreplayed()
            return False
        except BaseException:
            for listener, token in zip(LISTENERS, tokens):
                listener.commit(token)
            raise
        finally:
            launch.batch = None
        why = _serial_reason(tokens)
        if why is not None:
            _undo(launch, memory, tokens)
            launch_replay.aborted(key, plan)
            STATS.replay_aborts += 1
            self.unreplayed()
            return False
        STATS.batches += 1
        STATS.replays += 1
        self._commit(batch, tokens)
        return True

    def _commit(self, batch: Batch, tokens: list) -> None:
        """A batch done: every listener keeps what it did; the next batches sized by the largest block seen."""
        for listener, token in zip(LISTENERS, tokens):
            listener.commit(token)
        batch.memory = None  # its undo (old values, element indices) is let go: the store records keep the batch
        self.batch_size = int(max(2, min(MAX_BATCH, self.batch_cap,
                                         BATCH_ELEMENTS // max(1, program_axis.largest()))))


def _undo(launch: Launch, memory: MemoryUndo, tokens: list, recording: launch_replay.Recording | None = None) -> None:
    """What a batch did, undone: its memory writes and every listener's state since its checkpoint (a recording of
    it refused: the batch runs again otherwise)."""
    launch.batch = None
    memory.restore()
    for listener, token in zip(LISTENERS, tokens):
        listener.rollback(token)
    if recording is not None:
        recording.refuse("the batch was run again (split, given to the serial engine, or an error)")
        launch_replay.refuse(recording.key, recording.why)


def _serial_reason(tokens: list) -> str | None:
    """Why the batch since `tokens` must run again on the serial engine (the first listener's reason), or None."""
    return next(filter(None, (getattr(listener, "serial_reason", _never)(token)
                              for listener, token in zip(LISTENERS, tokens))), None)


_COUNTED = ("splits", "predicated_loops", "compacted_iterations", "predicated_ifs", "lane_chunks", "lanes_refused")


def _engine_counts() -> tuple[int, ...]:
    """The engine's counts of what a recorded batch may not have done (split, predicated, lanes)."""
    return tuple(getattr(STATS, name) for name in _COUNTED)


@contextlib.contextmanager
def _recorded(recording: launch_replay.Recording) -> Iterator[None]:
    """Inside the block the kernel's builder ops go through the recording (launch_replay's outermost layer)."""
    launch = recording.launch
    launch.recording = recording
    try:
        yield
    finally:
        launch.recording = None


def _keep_recording(recording: launch_replay.Recording, batch: Batch, tokens: list, before: tuple,
                    todo: list) -> None:
    """A recorded batch that ran through: its plan is kept when nothing in it was out of the ordinary."""
    why = recording.why if not recording.ok else None
    if why is None and (todo or _engine_counts() != before or batch.predicated or batch.atomics):
        why = "a split, a predicated loop or branch, loop lanes or an atomic"
    for listener, token in zip(LISTENERS, tokens):
        if why is not None:
            break
        check = getattr(listener, "unreplayable", None)
        why = f"{type(listener).__name__} cannot tell" if check is None else check(token)
    if why is not None:
        launch_replay.refuse(recording.key, why)
        _say(f"{recording.launch.name}: not recorded for replays ({why})")
        return
    launch_replay.keep(recording.key, recording.plan(), recording.launch.kernel)
    STATS.recordings += 1
    _say(f"{recording.launch.name}: recorded for replays of its key")


def _refuse_lanes(key: tuple) -> None:
    """The loop known by `key` iterates as written from now on (its lanes met what they cannot run)."""
    STATS.lanes_refused += 1
    REFUSED_LANES.add(key)


def _engine_signal(error: BaseException) -> Divergent | Unported | LanesRefused | None:
    """The batched engine's signal that `error` carries: Triton's interpreter wraps what a nested @jit function
    (tl.sum, a kernel's helper) raises in an InterpreterError, the signal as its cause."""
    seen = 0
    while error is not None and seen < 32:
        if isinstance(error, (Divergent, Unported, LanesRefused)):
            return error
        error, seen = error.__cause__, seen + 1
    return None


def _never(token: Any) -> None:
    return None


def _split(pids: np.ndarray, values: np.ndarray) -> list[np.ndarray]:
    """The programs of a batch split where the value they disagreed on changes: runs of consecutive programs, so
    that running the parts one after the other runs every program's memory effects in the serial engine's order
    (atomics' sums and tickets, which of two racing accesses came second). Values all alike: the two halves, so
    that a split always makes progress."""
    values = values.tolist()
    starts = [0] + [i for i in range(1, len(values)) if values[i] != values[i - 1]
                    and not (values[i] != values[i] and values[i - 1] != values[i - 1])]  # NaN == NaN here
    if len(starts) == 1:
        half = pids.shape[1] // 2
        return [pids[:, :half], pids[:, half:]]
    return [pids[:, a:b] for a, b in zip(starts, starts[1:] + [len(values)])]


def _why_serial(executor_obj, grid: tuple[int, int, int]) -> str | None:
    if executor() == "serial":
        return "TDEBUG_EXECUTOR=serial"
    if FORCE_SERIAL:
        return FORCE_SERIAL[0]
    if grid[0] * grid[1] * grid[2] < 2 and not prescan.lane_loops(executor_obj.fn):
        return "one program"
    return prescan.serial_only(executor_obj.fn)


_ARGSPECS: dict[int, tuple] = {}  # id(kernel function) -> (it, its argspec): read once, not at every launch


def _argspec(fn) -> inspect.FullArgSpec:
    found = _ARGSPECS.get(id(fn))
    if found is None or found[0] is not fn:
        found = _ARGSPECS[id(fn)] = (fn, inspect.getfullargspec(fn))
    return found[1]


def _call_args(fn, args: tuple | list, kwargs: dict) -> dict[str, Any]:
    """inspect.getcallargs(fn, *args, **kwargs) for a kernel's plain parameters, from the argspec read once (a
    launch called getcallargs, which reads the signature again: ~45 us); the same dict in the same order. Anything
    else (a method, *args, **kwargs, keyword-only parameters, a call getcallargs refuses) goes to getcallargs."""
    spec = _argspec(fn)
    names = spec.args
    if spec.varargs or spec.varkw or spec.kwonlyargs or inspect.ismethod(fn) or len(args) > len(names):
        return inspect.getcallargs(fn, *args, **kwargs)
    bound = dict(zip(names, args))
    for key, value in kwargs.items():
        if key in bound or key not in names:  # a value twice, or no such parameter: getcallargs says so
            return inspect.getcallargs(fn, *args, **kwargs)
        bound[key] = value
    if len(bound) < len(names):
        defaults = spec.defaults or ()
        first = len(names) - len(defaults)
        if any(name not in bound for name in names[:first]):  # a required argument missing: the TypeError
            return inspect.getcallargs(fn, *args, **kwargs)
        for name, default in zip(names[first:], defaults):
            if name not in bound:
                bound[name] = default
    return bound


def _call(original):
    def inner(self, *args_dev, **kwargs):
        """GridExecutor.__call__ with the grid loop run by the batched engine where it can; the serial engine
        (Triton's own __call__) otherwise. The steps before and after the loop are Triton's, in its order."""
        launch = Launch(self, args_dev, kwargs, current_launch())
        outer = enter(launch)
        ends = LISTENING.on_launch_end
        if not (LISTENING.on_launch or ends):
            try:
                return _launch(original, self, launch, args_dev, kwargs)
            finally:
                leave(outer)
        try:
            for hook in LISTENING.on_launch:
                hook(launch)
            out = _launch(original, self, launch, args_dev, kwargs)
        except BaseException as error:
            leave(outer)
            _end(ends, launch, error)
            raise
        leave(outer)
        _end(ends, launch, None)
        return out

    chain: list = [(), inner]  # (the hooks, the chain made of them): made again when the hooks change

    def __call__(self, *args_dev, **kwargs):
        """The listeners' around_launch hooks, outermost first, then the launch (inner)."""
        arounds = LISTENING.around_launch
        if not arounds:
            return inner(self, *args_dev, **kwargs)
        if chain[0] != arounds:
            chain[:] = [tuple(arounds), _around(tuple(arounds), 0, inner)]
        return chain[1](self, *args_dev, **kwargs)

    return __call__


def _around(arounds: tuple, i: int, inner: Callable) -> Callable:
    """What around_launch hook `i` gets as `proceed`: the hooks inside it, then the launch."""
    if i == len(arounds):
        return inner

    def proceed(executor, *args, **kwargs):
        return arounds[i](_around(arounds, i + 1, inner), executor, *args, **kwargs)

    return proceed


def _end(ends: list[Callable], launch: Launch, error: BaseException | None) -> None:
    """Every listener's on_launch_end, innermost first, each one run even if one inside it raised (as the
    `finally` of nested wrappers); the first error raised is raised."""
    raised = None
    for hook in ends:
        try:
            hook(launch, error)
        except BaseException as e:  # noqa: PERF203 - a launch's end, not a hot loop
            raised = raised or e
    if raised is not None:
        raise raised


def _host_args(original):
    def _init_args_hst(*args, **kwargs):
        """Triton's host copies of a launch's arguments, handed to every listener's on_host_args."""
        launch = current_launch()
        if launch is not None:
            for hook in LISTENING.host_args:
                copies = hook(launch)
                if copies is not None:
                    return copies
            for hook in LISTENING.before_host_args:
                hook(launch)
        args_hst, kwargs_hst = _cpu_host_args(*args, **kwargs) or original(*args, **kwargs)
        if launch is not None and LISTENING.on_host_args:
            for hook in LISTENING.on_host_args:
                copies = hook(launch, args_hst, kwargs_hst)
                if copies is not None:
                    args_hst, kwargs_hst = copies
        return args_hst, kwargs_hst

    return _init_args_hst


def _cpu_host_args(executor, args_dev, kwargs: dict) -> tuple[list, dict] | None:
    """Triton's host copies of a launch's arguments where every tensor among them is a plain CPU tensor: the tensors
    themselves. Triton's copy of one is a new tensor over the same storage, offset, sizes and strides (new_empty,
    then set_: two ops through torch's dispatcher and tdebug's TorchWrites, ~60 us a launch of three tensors), so
    the kernel sees the same memory either way. None (Triton makes its copies): a tuple, a tensor descriptor, a
    tensor on another device, of a subclass or a wrapper (triton.reinterpret), or one that requires grad."""
    import torch
    from triton.runtime import interpreter

    tensor = torch.Tensor
    for arg in (*args_dev, *kwargs.values()):
        kind = type(arg)
        if kind is tensor:
            if not arg.is_cpu or arg.requires_grad:
                return None
        elif kind is int or kind is float or kind is bool or arg is None:
            continue
        elif hasattr(arg, "data_ptr") or isinstance(arg, (tuple, interpreter.TensorDescriptor)):
            return None
    return list(args_dev), dict(kwargs)


def _copies_home(args_dev, args_hst, kwargs: dict, kwargs_hst: dict) -> dict[int, tuple]:
    """What Triton's _restore_args_dev copies home: per device storage (by address), the last (device storage,
    host storage) pair its walk of the arguments finds (tensors, tuples of them, a descriptor's base)."""
    from triton.runtime import interpreter

    pairs: dict[int, tuple] = {}

    def walk(dev, hst) -> None:
        if hasattr(dev, "data_ptr"):
            dev, hst = interpreter._unwrap_tensor(dev), interpreter._unwrap_tensor(hst)
            pairs[dev.untyped_storage().data_ptr()] = (dev.untyped_storage(), hst.untyped_storage())
        elif isinstance(dev, tuple):
            for d, h in zip(dev, hst):
                walk(d, h)
        elif isinstance(dev, interpreter.TensorDescriptor):
            walk(dev.base, hst.base)

    for dev, hst in zip(args_dev, args_hst):
        walk(dev, hst)
    for key, dev in kwargs.items():
        walk(dev, kwargs_hst[key])
    return pairs


def _same_memory(dev, hst) -> bool:
    return dev.device == hst.device and dev.data_ptr() == hst.data_ptr() and dev.nbytes() == hst.nbytes()


def _restore_home(original):
    def _restore_args_dev(self, args_dev, args_hst, kwargs, kwargs_hst):
        """Triton's copy of the host copies home, skipped where every copy it would make is of a storage onto
        itself (a CPU tensor is its own host copy: the copy changes nothing)."""
        if all(map(operator.is_, args_dev, args_hst)) and all(kwargs.get(k) is v for k, v in kwargs_hst.items()):
            return None  # (_cpu_host_args: every argument is its own host copy)
        pairs = _copies_home(args_dev, args_hst, kwargs, kwargs_hst)
        if all(_same_memory(dev, hst) for dev, hst in pairs.values()):
            return None
        return original(self, args_dev, args_hst, kwargs, kwargs_hst)

    return _restore_args_dev


def _launch(original, self, launch: Launch, args_dev: tuple, kwargs: dict) -> None:
    """The launch on the batched engine where it can, on Triton's own __call__ otherwise."""
    # Triton's __call__ (3.6 to 3.9 alike) copied with its grid loop swapped: the loop is inline there, between
    # set_grid_dim and _restore_args_dev, with no seam a wrapper could replace it at.
    from triton.runtime import interpreter

    if executor() == "serial" or FORCE_SERIAL or launch.batch is not None:
        STATS.launches_serial += 1
        if launch.batch is None:
            why = "TDEBUG_EXECUTOR=serial" if executor() == "serial" else FORCE_SERIAL[0]
            _say(f"{self.fn.__name__}: serial engine ({why})")
        return original(self, *args_dev, **kwargs)
    argspec = _argspec(self.fn)
    kwargs = {k: v for k, v in kwargs.items() if k in argspec.args or k in argspec.kwonlyargs}
    args_hst, kwargs_hst = self._init_args_hst(args_dev, kwargs)
    for hook in self.pre_run_hooks:
        hook(*args_hst, **kwargs_hst)
    program_axis.install()
    raw = _call_args(self.fn, args_hst, kwargs_hst)
    scopes: list = []

    def patch_lang() -> None:
        """The language patched for the kernel's code (once; a replay that gives up patches it then)."""
        if not scopes:
            scopes.append(interpreter._patch_lang(self.fn))

    def rebind() -> dict[str, Any]:
        """The language patched and the arguments bound as the kernel runs them (where a replay left both undone and
        the kernel's code runs after all)."""
        patch_lang()
        launch.args = _args(self, raw)
        return launch.args

    replay = signature = None
    try:
        if launch_replay.planned(self.fn):  # a launch with a plan runs no kernel code: no language patched for it
            signature = launch_replay.signature_of(self, raw)
            meta = launch_replay.meta_for(signature)
            if meta is not None:  # its grid from the arguments of a recorded launch of the same signature
                grid = _grid(self, meta)
                plan = launch_replay.plan_for((signature, grid))
                replay = None if plan is None else ((signature, grid), plan)
                if plan is not None and plan.language:  # (a reduction's combine function runs at its replays)
                    patch_lang()
                args = meta
        if replay is None:  # (after the patch, as Triton binds them)
            patch_lang()
            args, grid = _bound(self, raw)
        launch.args, launch.grid = args, grid
        if launch.own_host_copies(args_hst, kwargs_hst):  # (the CPU's: the storages found once)
            launch.storages = launch.device_storages()
        else:
            launch.storages = storages(list(args_hst) + list(kwargs_hst.values()))
        interpreter.interpreter_builder.set_grid_dim(*grid)
        try:
            _run_grid(self, launch, raw, replay, rebind, signature)
        except Exception as e:
            import triton

            if triton.knobs.compilation.front_end_debugging:
                raise
            raise interpreter.InterpreterError(repr(e)) from e
    finally:
        launch.batch = None
        for scope in scopes:
            scope.restore()
    self._restore_args_dev(args_dev, args_hst, kwargs, kwargs_hst)


def _bound(executor_obj, raw: dict[str, Any]) -> tuple[dict[str, Any], tuple[int, int, int]]:
    """The kernel's arguments as it runs them (scalars and tensors as Triton's tensors, constexprs as they are) and
    the launch's grid, three axes."""
    args = _args(executor_obj, raw)
    return args, _grid(executor_obj, args)


def _args(executor_obj, raw: dict[str, Any]) -> dict[str, Any]:
    """The kernel's arguments as it runs them: scalars and tensors as Triton's tensors, constexprs as they are."""
    from triton.runtime import interpreter

    return {name: arg if name in executor_obj.constexprs else interpreter._implicit_cvt(arg)
            for name, arg in raw.items()}


def _grid(executor_obj, args: dict[str, Any]) -> tuple[int, int, int]:
    """The launch's grid (three axes) from the kernel's arguments as it runs them."""
    grid = executor_obj.grid(args) if callable(executor_obj.grid) else executor_obj.grid
    assert len(grid) <= 3, "grid must have at most 3 dimensions"
    return tuple(grid) + (1,) * (3 - len(grid))


def _run_grid(executor_obj, launch: Launch, raw: dict[str, Any] | None = None, replay: tuple | None = None,
              rebind: Callable[[], dict] | None = None, signature: tuple | None = None) -> None:
    """The launch's programs, batched or serially. raw: its arguments as bound (for a replay's key); replay: (key,
    plan) when the language is left unpatched and the arguments unbound for a replay: rebind() patches and binds
    them if the kernel's code runs (its signature: the key but the grid, known already)."""
    name, grid = executor_obj.fn.__name__, launch.grid
    why = _why_serial(executor_obj, grid)
    if why is None:
        from triton.runtime.interpreter import interpreter_builder

        interpreter_builder.grid_idx = (0, 0, 0)  # what a listener reads between memory ops
        batched = BatchedLaunch(executor_obj.fn, launch, None if replay is None else rebind)
        if raw is not None and 1 < grid[0] * grid[1] * grid[2] <= batched.batch_size:  # one batch: replayable
            if replay is None:
                signature = launch_replay.signature_of(executor_obj, raw) if signature is None else signature
                key = None if signature is None else (signature, grid)
                if launch_replay.should_record(key):
                    batched.record = key
            batched.replay = replay
        elif replay is not None:
            batched.unreplayed()
        batched.run()
        if batched.serial_from is None:
            STATS.launches_batched += 1
            if _verbose():
                _say(f"{name}: batched engine, grid {grid}")
            return
        why = batched.serial_from
        _say(f"{name}: batched engine, then serial ({why}), grid {grid}")
    else:
        args = launch.args if replay is None else rebind()
        _say(f"{name}: serial engine ({why}), grid {grid}")
        for x in range(grid[0]):
            for y in range(grid[1]):
                for z in range(grid[2]):
                    _serial_program(executor_obj.fn, args, (x, y, z))
    STATS.launches_serial += 1
    STATS.fallbacks.append(why)


def _installed() -> bool:
    """Is the grid loop on GridExecutor.__call__ now (a test may have put Triton back since)?"""
    from triton.runtime import interpreter

    return "grid_loop" in layers_of(interpreter.GridExecutor, "__call__")


def install() -> None:
    """Install the grid loop: the innermost of tdebug's layers on GridExecutor.__call__ (and on _init_args_hst:
    the listeners' on_host_args; on _restore_args_dev: no copy of a storage onto itself)."""
    from triton.runtime import interpreter

    if _installed():
        return
    patch(interpreter.GridExecutor, "__call__", _call)
    patch(interpreter.GridExecutor, "_init_args_hst", _host_args)
    patch(interpreter.GridExecutor, "_restore_args_dev", _restore_home)
