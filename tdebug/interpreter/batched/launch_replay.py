"""A launch replayed: the batched engine's fast path for a kernel launched again with the same key.

A launch's key is what the kernel's Python and Triton's front end can see of it: the kernel, its grid, each
argument's kind and value (a tensor's dtype, shape, strides, storage offset and size, and which arguments share a
storage; a scalar's value; a constexpr), the global scalars the kernel and its @jit helpers read. Every value a
launch computes from its key alone (program ids, offsets, masks, the addresses relative to their tensors) is the
same at the next launch with that key; what differs is what depends on memory: the values loaded, the ops on them,
the stores, and what the checks make of them.

A launch the batched engine runs as one batch is recorded (Recording): the interpreter's builder is stood in for,
so every op the kernel makes is seen with its operands, and each value is marked as the key's (K), memory's (D:
loaded, or computed from a loaded value) or a pointer into one argument's storage (P). The Plan keeps what depends
on memory, in order: each op on memory's values (run again through every tdebug wrapper of the builder, as in any
batch: the NaN check, exact bf16 and fma, the overflow check), each load and store (done with numpy on the elements
the sanitizer resolved when recording: batch_memory.load_resolved / store_resolved), and what each listener of a
load or store does then (`replay_step`: the sanitizer's uninit check and written marks, the NaN check, the store
records). A later launch with the same key runs the Plan instead of the kernel: the key's values are the recorded
ones; the kernel's Python, Triton's front end, the language patch and the ops on the key's values do not run.

Exact by construction where it runs, and it gives up wherever it could not be. A recording is kept only if nothing
in its batch was out of the ordinary: no finding, no NaN/Inf made (each batch listener's `unreplayable`), no error,
split, predicated loop or branch, loop lanes or atomic, no value from memory used for Python control flow, as an
address or as a mask, no value made outside the builder (a reduction, a scan), and no op or layer this module does
not know. A replay that meets what a check would report (frames.user_frame, which every report asks for its line,
raises ReplayAbort while a replay runs) or any error is undone with the batch's own undo, and the batch runs the
ordinary way; a Plan that keeps giving up is dropped.

When: TDEBUG_REPLAY=auto (the default) records a key's second launch (its first if that is the kernel's first launch
in the process) and replays the launches after; eager records its first; off never. Only launches that run as one
batch of more than one program, under the sanitizer, take part.
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ... import settings
from ..frames import REPLAYING, ReplayAbort
from ..hooks.overflow import ATTR as OVERFLOW_MARK
from ..versions import bind, layers_of, patcher
from . import program_axis
from .batch_memory import load_resolved, store_resolved

patch = patcher("launch_replay")

K, D, P = 0, 1, 2  # a value's kind: the key's, memory's, a pointer into one argument's storage

MEMORY_OPS = {"create_load": "load", "create_masked_load": "load", "create_store": "store",
              "create_masked_store": "store"}
# Ops whose result is a pointer into the storage their pointer operand (their first value operand) points into.
POINTER_OPS = frozenset({"create_addptr", "create_splat", "create_broadcast", "create_reshape", "create_expand_dims",
                         "create_trans"})
# Ops a recording refuses: atomics, what the batched engine does not run, pointers made from integers and back.
REFUSED_OPS = frozenset(program_axis.ATOMICS + program_axis.UNPORTED + (
    "create_int_to_ptr", "create_ptr_to_int", "create_barrier", "create_atomic_load", "create_atomic_store",
    "create_atomic_poll"))
# The layers a load or store may have: what each does, a replay does (memory_events: its listeners' replay steps;
# batch_memory: load_resolved / store_resolved; memory_guard: every resolved lane is inside its tensor; overflow: a
# stored value it marked stops the replay; program_axis: the op for the whole batch). Any other: no recording.
MEMORY_LAYERS = frozenset({"launch_replay", "program_axis", "memory_events", "batch_memory", "memory_guard",
                           "overflow"})

MAX_PLAN_BYTES = 64 << 20  # of recorded values and element indices, per plan
MAX_PLANS_BYTES = 512 << 20  # of all plans: past it they are all let go
MAX_STEPS = 20_000  # steps of one plan (a long loop on memory's values: the kernel's own run is as fast)
RECORD_TRIES = 3  # recordings of one key that may fail before it is left alone


class _Refused(Exception):
    """What a recording cannot replay (its message says what)."""


def _nothing(replay: Replay) -> None:
    """A listener's replay step when it has nothing to do for an op again (a recording leaves it out)."""


NOTHING = _nothing


# -- the key -----------------------------------------------------------------------------------------------------
_GLOBAL_READS: dict[types.CodeType, tuple[tuple[dict, str], ...]] = {}


def _global_reads(fn) -> tuple[tuple[dict, str], ...]:
    """(globals, name) of each global the kernel and the @jit functions it calls read that holds a plain value (a
    number, a string, a constexpr, a dtype) when first asked: their values are part of the key."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return ()
    found = _GLOBAL_READS.get(code)
    if found is None:
        reads: list[tuple[dict, str]] = []
        _reads_of(fn, code, set(), reads)
        found = _GLOBAL_READS[code] = tuple(reads)
    return found


def _reads_of(fn, code: types.CodeType, seen: set, reads: list) -> None:
    if code in seen:
        return
    seen.add(code)
    names = set(code.co_names)
    for const in code.co_consts:  # nested functions, comprehensions
        if isinstance(const, types.CodeType):
            names |= set(const.co_names)
    scope = getattr(fn, "__globals__", {})
    for name in sorted(names):
        value = scope.get(name)
        inner = getattr(value, "fn", None)
        if inner is not None and hasattr(inner, "__code__"):  # a @jit function it calls
            _reads_of(inner, inner.__code__, seen, reads)
        elif name in scope and _plain(value) is not None:
            reads.append((scope, name))


def _plain(value: Any) -> tuple | None:
    """A global's or argument's value as a key part, when it is a plain value (None: it is not)."""
    import triton.language as tl

    kind = type(value)
    if kind is float:
        return (float, value.hex())  # -0.0 and 0.0, NaNs: apart
    if kind in (int, bool, str) or value is None:
        return (kind, value)
    if kind is tl.constexpr:
        inner = _plain(value.value)
        return None if inner is None else ("c", inner)
    if isinstance(value, tl.dtype):
        return ("d", kind, value.name)
    return None


def signature_of(executor_obj, raw: dict[str, Any]) -> tuple | None:
    """The launch's key but its grid (None: an argument the key cannot hold: a tuple, a descriptor, a wrapper)."""
    import torch

    fn = executor_obj.fn
    parts: list = [fn]
    parts.extend(_plain(scope.get(name, _MISSING)) for scope, name in _global_reads(fn))
    storages: dict[int, int] = {}
    constexprs = executor_obj.constexprs
    for name, value in raw.items():
        kind = type(value)
        if kind is torch.Tensor:
            storage = value.untyped_storage()
            alias = storages.setdefault(storage.data_ptr(), len(storages))
            parts.append((value.dtype, value.shape, value.stride(), value.storage_offset(), storage.nbytes(),
                          value.device, alias))
            continue
        plain = _plain(value)
        if plain is None and name in constexprs:
            try:
                hash(value)
            except TypeError:
                return None
            plain = ("constexpr", kind, value)
        if plain is None:
            return None
        parts.append(plain)
    return tuple(parts)


_MISSING = object()


# -- plans -----------------------------------------------------------------------------------------------------
@dataclass
class Plan:
    """What a replay runs: the key's values where the kernel's ops left them (slots; None where memory's go) and
    the steps that depend on memory."""

    slots: list
    steps: list[Callable]
    nbytes: int
    language: bool = False  # a step runs the kernel's Python (a reduction's combine function): the language patched
    # The recorded launch's arguments as the kernel got them (Triton's tensors): what a launch of the same signature
    # hands its grid function (its scalars and its tensors' layouts are these; only the data pointers differ)
    meta: dict = field(default_factory=dict)
    replays: int = 0
    aborts: int = 0


@dataclass
class _Entry:
    """One key's state: launches seen, recordings refused, and its plan once recorded."""

    seen: int = 0
    refused: int = 0
    plan: Plan | None = None
    why: str = ""


@dataclass
class _Plans:
    entries: dict[tuple, _Entry] = field(default_factory=dict)  # key: (signature, grid)
    kernels: set = field(default_factory=set)  # kernels (their Python functions) with a plan
    metas: dict[tuple, dict] = field(default_factory=dict)  # signature -> a plan's meta (the grid's arguments)
    launched: set = field(default_factory=set)  # kernels launched (to be recorded) in this process
    nbytes: int = 0

    def forget(self) -> None:
        self.entries.clear()
        self.kernels.clear()
        self.metas.clear()
        self.nbytes = 0


PLANS = _Plans()


def forget() -> None:
    """Let every plan go (a listener came or went, a setting changed: what a launch checks may differ now)."""
    PLANS.forget()


def planned(fn) -> bool:
    """Has some launch of this kernel a plan (worth computing its key before the language is patched)?"""
    return fn in PLANS.kernels


def meta_for(signature: tuple | None) -> dict | None:
    """The arguments a launch of this signature hands its grid function, as a recorded launch of it had them (a
    copy), or None: no plan of the signature. Only a data pointer's value differs from the launch's own: a grid is
    a function of sizes, strides, scalars and constexprs."""
    found = PLANS.metas.get(signature) if signature is not None else None
    return None if found is None else dict(found)


def mode() -> str:
    return settings.get("TDEBUG_REPLAY")


def entry(key: tuple) -> _Entry:
    found = PLANS.entries.get(key)
    if found is None:
        if len(PLANS.entries) > 4096:
            forget()
        found = PLANS.entries[key] = _Entry()
    return found


def plan_for(key: tuple | None) -> Plan | None:
    """The plan a launch with this key replays (None: it runs the ordinary way)."""
    if key is None or mode() == "off":
        return None
    found = PLANS.entries.get(key)
    return None if found is None else found.plan


def should_record(key: tuple | None) -> bool:
    """Is this launch (with no plan yet) to be recorded? Counts it as seen. auto: a key's second launch, or its first
    where it is the kernel's first launch in the process (which pays for Triton's rewrite of the kernel and tdebug's
    first traces of its ops already: a recording adds ~2% to it); eager: a key's first launch."""
    if key is None or not _INSTALLED:
        return False
    how = mode()
    if how == "off":
        return False
    e = entry(key)
    e.seen += 1
    cold = key[0][0] not in PLANS.launched  # (the signature's first part: the kernel)
    PLANS.launched.add(key[0][0])
    if e.plan is not None or e.refused >= RECORD_TRIES:
        return False
    return e.seen >= 2 or how == "eager" or cold


def aborted(key: tuple, plan: Plan) -> None:
    """A replay of `plan` gave up: past a few more than its replays, the plan goes (the key is recorded again)."""
    plan.aborts += 1
    if plan.aborts > plan.replays + 3:
        e = PLANS.entries.get(key)
        if e is not None and e.plan is plan:
            e.plan = None
            e.refused += 1
            e.why = "its replays kept giving up"
            PLANS.nbytes -= plan.nbytes


def keep(key: tuple, plan: Plan, fn) -> None:
    if plan.nbytes > MAX_PLAN_BYTES:
        refuse(key, f"its recorded values take {plan.nbytes >> 20} MiB")
        return
    if PLANS.nbytes + plan.nbytes > MAX_PLANS_BYTES:
        forget()
    e = entry(key)
    e.plan = plan
    PLANS.kernels.add(fn)
    PLANS.metas[key[0]] = plan.meta
    PLANS.nbytes += plan.nbytes


def refuse(key: tuple, why: str) -> None:
    e = entry(key)
    e.refused += 1
    e.why = why


# -- replaying -------------------------------------------------------------------------------------------------
class Replay:
    """One replay of a plan: the launch and batch it runs in (what a listener's replay step reads)."""

    __slots__ = ("launch", "batch", "_memory")

    def __init__(self, launch, batch) -> None:
        self.launch, self.batch = launch, batch
        self._memory: dict[int, Any] = {}

    def storage(self, index: int):
        """The launch's storage `index` (launch.storages: the same place in every launch of a key)."""
        return self.launch.storages[index]

    def ptr(self, index: int) -> int:
        return self.launch.storages[index].data_ptr()

    def memory(self, index: int, dtype: np.dtype) -> np.ndarray:
        """Storage `index`'s memory as an array of `dtype` (no copy)."""
        found = self._memory.get(index)
        if found is None:
            storage = self.launch.storages[index]
            found = self._memory[index] = storage_memory(storage.data_ptr(), storage.nbytes())
        return found.view(dtype)


_VIEWS: dict[tuple[int, int], np.ndarray] = {}  # (address, bytes) -> a numpy view of that memory


def storage_memory(ptr: int, nbytes: int) -> np.ndarray:
    """The bytes of a live storage at `ptr` as numpy (no copy): a view made once per address and size (a view
    holds no memory of its own; only a live storage's is ever read through it)."""
    found = _VIEWS.get((ptr, nbytes))
    if found is None:
        from ...catalogue.poison import storage_bytes

        if len(_VIEWS) > 1024:
            _VIEWS.clear()
        found = _VIEWS[(ptr, nbytes)] = storage_bytes(ptr, nbytes)
    return found


def run(plan: Plan, launch, batch) -> None:
    """Run a plan for `batch` (every program of `launch`); raises ReplayAbort (or the error met) when it gives up,
    the batch's undo then being the caller's."""
    values = list(plan.slots)
    replay = Replay(launch, batch)
    REPLAYING.append(True)  # (frames.replaying, without a generator's cost)
    try:
        for step in plan.steps:
            step(values, replay)
    finally:
        REPLAYING.pop()
    plan.replays += 1


def _op_step(name: str, args: tuple, kwargs: tuple, outs: tuple) -> Callable:
    """An op on memory's values, run again through every wrapper of the builder."""
    from triton.runtime.interpreter import interpreter_builder

    if not kwargs and all(a[0] == "s" for a in args) and outs[0] == "one":  # (the common op: values in, one out)
        slots, out_slot = tuple(a[1] for a in args), outs[1]

        def plain(values: list, replay: Replay) -> None:
            values[out_slot] = getattr(interpreter_builder, name)(*[values[i] for i in slots])

        return plain

    def step(values: list, replay: Replay) -> None:
        out = getattr(interpreter_builder, name)(*[_value(a, values) for a in args],
                                                 **{k: _value(a, values) for k, a in kwargs})
        _assign(outs, out, values)

    return step


def _overflow_step(lhs: int, lhs_ty, rhs: int, rhs_ty, op: str) -> Callable:
    """Triton's signed-overflow check of an add, sub or mul on memory's values (TritonSemantic reads their values
    there, before the builder op)."""
    import triton.language as tl
    from triton.runtime.interpreter import interpreter_semantic as sem

    def step(values: list, replay: Replay) -> None:
        sem.binary_op_sanitize_overflow_impl(tl.tensor(values[lhs], lhs_ty), tl.tensor(values[rhs], rhs_ty),
                                             getattr(sem, op))

    return step


def _reduce_step(interface, inputs: tuple, single: bool, outs: tuple) -> Callable:
    """A reduction or scan of memory's values (tl.sum, tl.max, tl.reduce, tl.cumsum, ...): the interpreter's own,
    its combine function included, through every tdebug wrapper (its operands: (slot, type) each)."""
    import triton.language as tl

    def step(values: list, replay: Replay) -> None:
        tensors = tuple(tl.core.tensor(values[slot], ty) for slot, ty in inputs)
        out = interface.apply(tensors[0] if single else tensors)
        _assign(outs, [t.handle for t in out] if isinstance(out, tuple) else out.handle, values)

    return step


def _load_step(event: _Event, other: tuple | None, out: int) -> Callable:
    """A load: its listeners' steps, then numpy on the recorded elements of the same storage of this launch."""
    listeners, index, elements, lanes, shape = event.steps, event.storage, event.elements, event.lanes, event.shape
    dtype, dtype_tt = event.dtype, event.dtype_tt
    mark = program_axis.mark

    def step(values: list, replay: Replay) -> None:
        for listener in listeners:
            listener(replay)
        data = None if other is None else (other[1] if other[0] == K else program_axis.batch_shaped(
            values[other[1]], shape))
        values[out] = mark(load_resolved(elements, lanes, replay.memory(index, dtype), shape, dtype, dtype_tt, data))

    return step


def _store_step(event: _Event, value: tuple, last: list) -> Callable:
    """A store: its listeners' steps, then numpy into the recorded elements of the same storage of this launch
    (what it overwrites kept for the batch's undo, unless it is the plan's last step: nothing after it can give the
    replay up; `last` says, once the plan is made)."""
    listeners, index, elements, lanes, shape = event.steps, event.storage, event.elements, event.lanes, event.shape
    dtype = event.dtype

    def step(values: list, replay: Replay) -> None:
        batch = replay.batch
        batch.before_effect()
        if value[0] == K:
            data = value[1]
        else:
            handle = values[value[1]]
            if getattr(handle, OVERFLOW_MARK, None) is not None:  # a wrapped value: overflow.py judges the store
                raise ReplayAbort("a store of a value that wrapped")
            data = np.asarray(program_axis.batch_shaped(handle, shape))
        if data.dtype != dtype:
            raise ReplayAbort("a stored value of another dtype")
        for listener in listeners:
            listener(replay)
        store_resolved(elements, lanes, replay.memory(index, dtype), data, None if last[0] is step else batch.memory)

    return step


def _value(spec: tuple, values: list) -> Any:
    kind = spec[0]
    if kind == "s":
        return values[spec[1]]
    if kind == "c":
        return spec[1]
    items = [_value(item, values) for item in spec[2]]
    return items if spec[1] is list else tuple(items)


def _assign(outs: tuple, out: Any, values: list) -> None:
    """Put an op's result (a handle, or a tuple or list of them) in its slots."""
    if outs[0] == "one":
        values[outs[1]] = out
    elif outs[0] == "many":
        for slot, item in zip(outs[1], out):
            if slot is not None:
                values[slot] = item


# -- recording -------------------------------------------------------------------------------------------------
@dataclass
class _Event:
    """One load or store as its listeners and batch_memory saw it while recording."""

    kind: str
    shape: tuple[int, ...]
    storage: int  # its index among the launch's storages
    storage_ptr: int
    elements: Any
    lanes: np.ndarray | None
    dtype: np.dtype
    dtype_tt: Any
    other: Any  # the load's `other` as the op got it (a handle of the op's shape), or None
    value: Any  # the store's value as the op got it
    result: Any  # the load's result handle
    steps: list[Callable]


class Recording:
    """One batch recorded: each value the kernel's ops made (by handle), its kind, and the plan's steps so far."""

    def __init__(self, launch, key: tuple) -> None:
        import triton.language as tl
        from triton.runtime.interpreter import TensorHandle

        from ..hooks.provenance import TAG

        self.launch, self.key = launch, key
        self.handle_class, self.tuple_class = TensorHandle, tl.core.tuple
        self.ok = True
        self.why = ""
        self.values: list = []  # slot -> the handle made there (kept alive: ids in `where` stay its own)
        self.kinds: list[int] = []
        self.bases: list[int] = []  # a pointer's storage (data_ptr); 0 for other values
        self.where: dict[int, int] = {}  # id(handle) -> slot
        self.steps: list[Callable] = []
        self.events: list[_Event] = []  # memory ops of the builder op now running
        self.depth = 0  # builder ops running (one made inside another is the outer's)
        self.paused = False
        self.language = False  # a step runs the kernel's Python (Plan.language)
        self.last: list = [None]  # the plan's last step (set by plan())
        self.storages = {s.data_ptr(): i for i, s in enumerate(launch.storages or ())}
        for value in (launch.args or {}).values():
            handle = getattr(value, "handle", None)
            if type(handle) is not TensorHandle:
                continue
            if value.type.is_ptr():
                base = getattr(handle, TAG, None)
                if base in self.storages:
                    self._slot(handle, P, base)
            else:
                self._slot(handle, K)

    # -- what listeners and program_axis ask ------------------------------------------------------------------
    def refuse(self, why: str) -> None:
        if self.ok:
            self.ok, self.why = False, why

    def is_data(self, handle) -> bool:
        """Does this handle hold memory's values (or some value the recording did not see made)?"""
        slot = self.where.get(id(handle))
        return slot is None or self.values[slot] is not handle or self.kinds[slot] == D

    def decides(self, handle) -> None:
        """The kernel uses this value for Python control flow (an `if`, a loop bound)."""
        if self.is_data(handle):
            self.refuse("a value from memory decides the kernel's control flow")

    def storage_index(self, ptr: int) -> int:
        """The index among the launch's storages of the one at `ptr` (raises: not one of the launch's)."""
        found = self.storages.get(ptr)
        if found is None:
            raise _Refused("an access outside the launch's tensors")
        return found

    # -- the builder's ops ------------------------------------------------------------------------------------
    def op(self, name: str, method, args: tuple, kwargs: dict):
        """A builder op of the kernel (not one made inside another): recorded, then made."""
        if not self.ok or self.paused or self.depth:
            return method(*args, **kwargs)
        try:
            if name in REFUSED_OPS:
                raise _Refused(f"{name.removeprefix('create_')}")
            arg_specs = tuple(self._spec(a) for a in args)
            kwarg_specs = tuple((k, self._spec(v)) for k, v in kwargs.items())
        except Exception as refused:  # noqa: BLE001 - a recording never fails the batch it records
            self.refuse(_why(refused))
            return method(*args, **kwargs)
        self.depth += 1
        try:
            out = method(*args, **kwargs)
        finally:
            self.depth -= 1
        events, self.events = self.events, []
        if self.ok:
            try:
                if name in MEMORY_OPS:
                    self._memory_step(name, method, args, kwargs, out, events)
                else:
                    if events:
                        raise _Refused(f"a memory op inside {name}")
                    self._op_step(name, arg_specs, kwarg_specs, out)
            except Exception as refused:  # noqa: BLE001 - a recording never fails the batch it records
                self.refuse(_why(refused))
        return out

    def overflow_check(self, original, semantic, lhs, rhs, binary_op):
        """TritonSemantic.binary_op_sanitize_overflow_impl while recording: a step where it reads memory's values."""
        if not self.ok or self.paused or self.depth:
            return original(semantic, lhs, rhs, binary_op)
        try:
            slots = [self._spec(getattr(t, "handle", None)) for t in (lhs, rhs)]
            name = getattr(binary_op, "__name__", "")
            if slots[0][0] != "s" or slots[1][0] != "s" or getattr(semantic, name, None) != binary_op:
                self.refuse("an overflow check on values the recording did not see made")
            elif D in (self.kinds[slots[0][1]], self.kinds[slots[1][1]]):
                self.steps.append(_overflow_step(slots[0][1], lhs.type, slots[1][1], rhs.type, name))
        except Exception as refused:  # noqa: BLE001 - a recording never fails the batch it records
            self.refuse(_why(refused))
        self.paused = True  # the builder ops of the check itself are its own (run again by the step)
        try:
            return original(semantic, lhs, rhs, binary_op)
        finally:
            self.paused = False

    def reduction(self, original, interface, input):
        """ReduceScanOpInterface.apply while recording: a step where it reduces memory's values. Its combine
        function's builder ops are its own (run again by the step)."""
        if not self.ok or self.paused or self.depth:
            return original(interface, input)
        single = not isinstance(input, tuple)
        try:
            tensors = (input,) if single else input
            specs = [(self._spec(t.handle), t.type) for t in tensors]
            if any(spec[0] != "s" for spec, _ in specs):
                raise _Refused("a reduction of values the recording did not see made")
            kinds = {self.kinds[spec[1]] for spec, _ in specs}
            if P in kinds:
                raise _Refused("a reduction of pointers")
        except Exception as refused:  # noqa: BLE001 - a recording never fails the batch it records
            self.refuse(_why(refused))
            return original(interface, input)
        self.depth += 1
        try:
            out = original(interface, input)
        finally:
            self.depth -= 1
        try:
            handles = [t.handle for t in out] if isinstance(out, tuple) else out.handle
            outs = self._outs(handles, D if D in kinds else K)
            if D in kinds:
                self.language = True
                self.steps.append(_reduce_step(interface, tuple((spec[1], ty) for spec, ty in specs), single, outs))
        except Exception as refused:  # noqa: BLE001 - a recording never fails the batch it records
            self.refuse(_why(refused))
        return out

    def memory_event(self, access, resolution, result, listeners: list) -> None:
        """A load or store ran (memory_events): what batch_memory did and what its listeners would do again."""
        if not self.ok:
            return
        try:
            if resolution is not None:  # (batch_memory took it: the listeners' replay steps read it, runs as slices)
                access.resolution = dataclasses.replace(resolution, elements=_run(resolution.elements),
                                                        lanes=_run(resolution.lanes))
            self.events.append(self._event(access, resolution, result, listeners))
        except Exception as refused:  # noqa: BLE001 - a recording never fails the batch it records
            self.refuse(_why(refused))

    def _event(self, access, resolution, result, listeners: list) -> _Event:
        from triton.runtime.interpreter import _get_np_dtype, interpreter_builder

        if self.depth != 1:
            raise _Refused("a memory op not made by the kernel")
        if access.refused or access.kind == "atomic" or program_axis.lane_programs() is None:
            raise _Refused(f"a {access.kind} refused, or not run for every program at once")
        if resolution is None or not access.numpy:
            raise _Refused(f"a {access.kind} the checks did not resolve to one tensor" if resolution is None else
                           f"a {access.kind} batch_memory left to Triton (unaligned, retyped)")
        unknown = set(layers_of(interpreter_builder, access.op)) - MEMORY_LAYERS
        if unknown:
            raise _Refused(f"a layer on {access.op} a replay does not know ({', '.join(sorted(unknown))})")
        steps = []
        for listener in listeners:
            make = getattr(listener, "replay_step", None)
            made = make(access, self) if make is not None else None
            if made is None:
                raise _Refused(f"{type(listener).__name__} cannot replay a {access.kind}")
            if made is not NOTHING:
                steps.append(made)
        ptrs = access.ptrs
        dtype_tt = ptrs.get_element_ty()
        resolution = access.resolution
        return _Event(access.kind, tuple(ptrs.data.shape), self.storage_index(resolution.storage), resolution.storage,
                      resolution.elements, resolution.lanes, np.dtype(_get_np_dtype(dtype_tt)),
                      dtype_tt, access.call.arguments.get("other"), access.value, result, steps)

    # -- steps -----------------------------------------------------------------------------------------------
    def _spec(self, value: Any) -> tuple:
        if type(value) is self.handle_class:
            slot = self.where.get(id(value))
            if slot is None or self.values[slot] is not value:
                raise _Refused("a value made outside the builder (a reduction, a scan)")
            return ("s", slot)
        if type(value) in (tuple, list):
            items = tuple(self._spec(v) for v in value)
            if all(i[0] == "c" for i in items):
                return ("c", value)
            return ("q", type(value), items)
        if type(value) is self.tuple_class and all(_constant(v) for v in value.values):  # a block's shape
            return ("c", value)
        if _constant(value):
            return ("c", value)
        raise _Refused(f"an operand of type {type(value).__module__}.{type(value).__qualname__}")

    def _slot(self, handle, kind: int, base: int = 0) -> int:
        slot = self.where.get(id(handle))
        if slot is not None and self.values[slot] is handle:  # an op that gave back one of its operands
            return slot
        slot = len(self.values)
        self.values.append(handle)
        self.kinds.append(kind)
        self.bases.append(base)
        self.where[id(handle)] = slot
        return slot

    def _slots_of(self, spec: tuple) -> list[int]:
        if spec[0] == "s":
            return [spec[1]]
        if spec[0] == "q":
            return [s for item in spec[2] for s in self._slots_of(item)]
        return []

    def _op_step(self, name: str, arg_specs: tuple, kwarg_specs: tuple, out: Any) -> None:
        slots = [s for spec in arg_specs + tuple(v for _, v in kwarg_specs) for s in self._slots_of(spec)]
        kinds = {self.kinds[s] for s in slots}
        if D in kinds:
            if P in kinds:
                raise _Refused("an address computed from memory's values (a gather)")
            outs = self._outs(out, D)
            if len(self.steps) >= MAX_STEPS:
                raise _Refused(f"more than {MAX_STEPS} steps")
            self.steps.append(_op_step(name, arg_specs, kwarg_specs, outs))
        elif P in kinds:
            bases = {self.bases[s] for s in slots if self.kinds[s] == P}
            if name not in POINTER_OPS or len(bases) != 1 or self.kinds[slots[0]] != P:
                raise _Refused(f"a pointer used as a value ({name.removeprefix('create_')})")
            self._outs(out, P, bases.pop())
        else:
            self._outs(out, K)

    def _outs(self, out: Any, kind: int, base: int = 0) -> tuple:
        if type(out) is self.handle_class:
            return ("one", self._slot(out, kind, base))
        if type(out) in (tuple, list):
            return ("many", tuple(self._slot(o, kind, base) if type(o) is self.handle_class else None for o in out))
        return ("none",)

    def _memory_step(self, name: str, method, args: tuple, kwargs: dict, out: Any, events: list[_Event]) -> None:
        if len(events) != 1:
            raise _Refused(f"{name} made {len(events)} memory ops")
        event = events[0]
        call = bind(method, args, kwargs).arguments
        ptrs = self._spec(call["ptrs"] if "ptrs" in call else call["ptr"])  # (create_load and _store: ptr, val)
        if ptrs[0] != "s" or self.kinds[ptrs[1]] != P:
            raise _Refused("a load or store through a pointer made from memory's values (a gather)")
        if self.bases[ptrs[1]] != event.storage_ptr:
            raise _Refused("a pointer into one tensor that reaches another")
        mask = call.get("mask")
        if mask is not None and self.is_data(mask):
            raise _Refused("a mask computed from memory's values")
        if call.get("is_volatile"):
            raise _Refused("a volatile load")
        if event.kind == "load":
            if out is not event.result:
                raise _Refused("a load whose result is not the memory op's")
            other = call.get("other")
            other_spec = None if other is None else (
                (D, self._spec(other)[1]) if self.is_data(other) else (K, np.asarray(event.other.data)))
            self.steps.append(_load_step(event, other_spec, self._slot(out, D)))
            return
        value = call["value"] if "value" in call else call["val"]
        value_spec = (D, self._spec(value)[1]) if self.is_data(value) else (K, np.asarray(event.value.data))
        self.steps.append(_store_step(event, value_spec, self.last))

    # -- the end ---------------------------------------------------------------------------------------------
    def plan(self) -> Plan:
        """The plan: the key's values in their slots, memory's and pointers' slots empty, the steps."""
        slots = [v if kind == K else None for v, kind in zip(self.values, self.kinds)]
        nbytes = sum(_nbytes(v) for v in slots if v is not None)
        for v in slots:  # the key's values serve every replay: nothing may write them
            if v is not None and isinstance(getattr(v, "data", None), np.ndarray):
                v.data.flags.writeable = False
        self.last[0] = self.steps[-1] if self.steps else None
        return Plan(slots, list(self.steps), nbytes, self.language, dict(self.launch.args or {}))


def _run(indices):
    """Element or lane indices as a slice where they are one ascending run (a row, a block of whole rows: numpy
    then copies instead of gathering), else as they are."""
    if type(indices) is not np.ndarray or indices.ndim != 1 or not indices.size:
        return indices
    first, last = int(indices[0]), int(indices[-1])
    if last - first + 1 != indices.size or not bool((np.diff(indices) == 1).all()):
        return indices
    return slice(first, last + 1)


def _why(error: Exception) -> str:
    return str(error) if isinstance(error, _Refused) else f"tdebug's recording failed ({type(error).__name__}: {error})"


def _nbytes(handle) -> int:
    data = getattr(handle, "data", None)
    return int(data.nbytes) if isinstance(data, np.ndarray) and data.base is None else 64


def _constant(value: Any) -> bool:
    """An operand a plan may hold as it is: immutable and holding no handle (a number, a string, a type, an
    enum, None)."""
    import enum

    import triton.language as tl

    kind = type(value)
    if kind in (int, float, bool, str, bytes) or value is None:
        return True
    if kind is tl.constexpr:
        return _constant(value.value)
    return isinstance(value, (tl.core.base_type, enum.Enum, np.dtype)) or hasattr(kind, "__members__")


_INSTALLED: list = []


def _recorded_overflow_check(original):
    def binary_op_sanitize_overflow_impl(self, lhs, rhs, binary_op):
        from .launch import current_launch

        launch = current_launch()
        recording = None if launch is None else launch.recording
        if recording is None:
            return original(self, lhs, rhs, binary_op)
        return recording.overflow_check(original, self, lhs, rhs, binary_op)

    return binary_op_sanitize_overflow_impl


def _recorded_reduction(original):
    def apply(self, input):
        from .launch import current_launch

        launch = current_launch()
        recording = None if launch is None else launch.recording
        if recording is None:
            return original(self, input)
        return recording.reduction(original, self, input)

    return apply


def _recorded_op(name: str):
    def make(original):
        from .launch import current_launch

        def op(*args, **kwargs):
            launch = current_launch()
            recording = None if launch is None else launch.recording
            if recording is None:
                return original(*args, **kwargs)
            return recording.op(name, original, args, kwargs)

        return op

    return make


def install() -> None:
    """Outermost on every op of the interpreter's builder (whichever of Triton's semantic objects calls it) and on
    what reads values outside it: Triton's signed-overflow check (in the front end) and the interpreter's reductions
    and scans (numpy and the combine function's Python): a recording sees them all. Without it no launch is
    recorded."""
    from triton.language.semantic import TritonSemantic
    from triton.runtime import interpreter

    if _INSTALLED:
        return
    builder = interpreter.interpreter_builder
    for name in sorted(n for n in dir(builder) if n.startswith(("create_", "get_")) and not n.endswith("_ty")):
        if callable(getattr(builder, name)):  # (the ops and the constants it makes; not its types)
            patch(builder, name, _recorded_op(name))
    patch(TritonSemantic, "binary_op_sanitize_overflow_impl", _recorded_overflow_check)
    patch(interpreter.ReduceScanOpInterface, "apply", _recorded_reduction)
    _INSTALLED.append(True)
