"""The engine's memory events: one wrapper on each interpreter memory op, and the checks that listen to it.

Every load, store and atomic of a kernel reaches Triton's interpreter through four InterpreterBuilder methods
(create_masked_load, create_masked_store, create_atomic_rmw, create_atomic_cas; create_load / create_store and
block-pointer and descriptor accesses end in the masked ones). This module wraps each of them once (layer
"memory_events" of versions.LAYERS), reads the op's arguments by name once, and hands the same `Access` to every
listener: the sanitizer (bounds, race, uninit, unwritten, on the lanes of every program of a batch at once), the
NaN tracker's store check, the store records behind localisation, the lock order, viz's guard and its trace.

A listener's `before(access)` runs before the op, outermost layer first (versions.LAYERS decides the order, not
the order of `listen` calls): it may narrow the access's mask (lanes it reported and that must not touch memory),
point lanes elsewhere (`access.call.arguments[...]`), or refuse the whole op (`access.refuse(result)`: the op does
not run and the listeners inside it see nothing). `after(access, result)` runs after the op, innermost first, for
every listener whose `before` ran. What changes how an op runs (bounds clamping, batched numpy, bf16 atomics, the
overflow check of stored values) stays a layer of its own below this one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from ..batched import grid_loop
from ..batched.launch import Launch, current_launch
from ..versions import LAYERS, Call, bind, patcher

patch = patcher("memory_events")

# The builder's memory ops: (kind as the checks name it, the pointer argument's name, the stored value's name).
OPS: dict[str, tuple[str, str, str | None]] = {
    "create_masked_load": ("load", "ptrs", None),
    "create_masked_store": ("store", "ptrs", "value"),
    "create_atomic_rmw": ("atomic", "ptr", "val"),
    "create_atomic_cas": ("atomic", "ptr", "val"),
}


class Access:
    """One memory op about to run: its arguments by name (`call.arguments`; a listener may replace them), its
    launch and batch, and what the checks ask of it. In the batched engine the arrays carry every program of the
    batch, a program per row (program_axis.lane_programs() says which)."""

    __slots__ = ("op", "kind", "call", "pointer", "value_name", "unmasked", "refused", "result", "launch",
                 "resolution", "numpy")

    def __init__(self, op: str, call: Call, unmasked: bool, launch: Launch | None) -> None:
        self.op = op
        self.kind, self.pointer, self.value_name = OPS[op]
        self.call = call
        self.unmasked = unmasked  # from create_load / create_store: the all-true mask is not the kernel's
        self.refused = False
        self.result: Any = None
        self.launch = launch  # the kernel call this op belongs to (its kernel, tensors, grid, batch, memory undo)
        # The sanitizer's resolution of the op's active lanes to elements of one storage
        # (batch_memory.Resolved; None: none), which the batched memory ops below run on.
        self.resolution: Any = None
        self.numpy = False  # batch_memory did the op with numpy on that resolution (not Triton's own op)

    @property
    def ptrs(self):
        return self.call.arguments[self.pointer]

    @property
    def mask(self):
        """The op's mask handle (None: atomic_cas has none)."""
        return self.call.arguments.get("mask")

    @mask.setter
    def mask(self, handle) -> None:
        self.call.arguments["mask"] = handle

    @property
    def value(self):
        """The stored value's handle (None for a load)."""
        return self.call.arguments[self.value_name] if self.value_name else None

    @property
    def batch(self):
        """The batch of programs the op runs for (program_axis.Batch; None: the serial engine, or no launch)."""
        launch = self.launch
        return None if launch is None else launch.batch

    def refuse(self, result: Any) -> None:
        """Do not run the op: `result` is what the kernel gets back."""
        self.refused, self.result = True, result


class Listener(Protocol):
    """grid_loop.Listener's memory hooks (either may be absent; the same listener may offer the launch's and
    the batch's hooks too: one registration, `listen`, hands it all of them).

    `replay_step(access, recording)`, asked after an op of a batch that launch_replay.py records: what this
    listener does for that op again at a replay of the launch, a function of the replay (launch_replay.Replay),
    launch_replay.NOTHING, or None: the launch cannot be replayed (a listener without it never lets one be)."""

    def before(self, access: Access) -> None: ...

    def after(self, access: Access, result: Any) -> None: ...


class _Listening:
    """Which listeners (grid_loop.LISTENING, outermost first) hear each op, and whether an op is unmasked."""

    def __init__(self) -> None:
        # op -> its listeners, outermost first, each with its before and after (None where it has none)
        self.by_op: dict[str, list[tuple[Callable | None, Callable | None]]] = {op: [] for op in OPS}
        self.listeners: dict[str, list[Any]] = {op: [] for op in OPS}  # op -> its listeners, outermost first
        self.unmasked = False  # inside create_load / create_store
        self.installed = False

    def refresh(self) -> None:
        entries = grid_loop.LISTENING.entries
        for op, hooks in self.by_op.items():
            hooks[:] = [(getattr(e[1], "before", None), getattr(e[1], "after", None)) for e in entries if op in e[2]]
            self.listeners[op][:] = [e[1] for e in entries if op in e[2]]

    def names(self, op: str) -> list[str]:
        """The layers listening to `op`, outermost first."""
        return [LAYERS[rank] for rank, _, ops in grid_loop.LISTENING.entries if op in ops]


LISTENING = _Listening()


def listen(layer: str, listener: Listener, ops: tuple[str, ...] | frozenset[str] = tuple(OPS)) -> None:
    """Hand `listener` the memory ops `ops` from now on, and every other hook of grid_loop.Listener it offers (a
    batch's undo, a launch's beginning and end), at `layer`'s place among the others (versions.LAYERS);
    listening again replaces its earlier registration."""
    unknown = set(ops) - set(OPS)
    if unknown:
        raise ValueError(f"not memory ops: {sorted(unknown)}")
    grid_loop.listen(layer, listener, frozenset(ops))
    LISTENING.refresh()
    if not LISTENING.installed:
        _install()


def listeners(op: str) -> list[str]:
    return LISTENING.names(op)


def _dispatched(op: str) -> Callable[[Callable], Callable]:
    hooks = LISTENING.by_op[op]  # updated in place as listeners come
    listeners = LISTENING.listeners[op]

    def make(original):
        def dispatch(*args, **kwargs):
            if not hooks:
                return original(*args, **kwargs)
            launch = current_launch()
            access = Access(op, bind(original, args, kwargs), LISTENING.unmasked, launch)
            if launch is not None:
                outer, launch.access = launch.access, access  # the memory ops below (batch_memory) read it there
            try:
                # the listeners' before (outermost first), the op (unless refused), their after (innermost first)
                reached = len(hooks)
                for i, (before, _) in enumerate(hooks):
                    if before is not None:
                        before(access)
                        if access.refused:
                            reached = i + 1
                            break
                resolution = access.resolution  # (what the op below takes: kept for a recording)
                if access.refused:
                    result = access.result
                else:
                    call = access.call
                    result = original(*call.args, **call.kwargs)
                for _, after in reversed(hooks[:reached]):
                    if after is not None:
                        after(access, result)
                if launch is not None and launch.recording is not None:  # launch_replay.py: its part of this op
                    launch.recording.memory_event(access, resolution, result, listeners[:reached])
                return result
            finally:
                if launch is not None:
                    launch.access = outer

        return dispatch

    return make


def _unmasked(original):
    """create_load / create_store: the masked op they call gets an all-true mask the kernel never wrote."""

    def op(*args, **kwargs):
        outer, LISTENING.unmasked = LISTENING.unmasked, True
        try:
            return original(*args, **kwargs)
        finally:
            LISTENING.unmasked = outer

    return op


def _install() -> None:
    from triton.runtime import interpreter

    builder = interpreter.interpreter_builder
    for op in OPS:
        patch(builder, op, _dispatched(op))
    patch(builder, "create_load", _unmasked)
    patch(builder, "create_store", _unmasked)
    LISTENING.installed = True
