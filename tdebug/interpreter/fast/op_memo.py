"""Triton's language front end memoised: a builtin (`a * b`, `tl.load`, `x.to(...)`) called again with operands
of the same types and the same constant arguments replays the builder calls its first call made, skipping the
semantic layer (type checks, promotions, broadcasts, tensor and type objects): the same builder ops run on the
new operands, with every tdebug wrapper on them, so values, findings and errors stay as before.

Why replaying is exact: Triton's semantic layer (TritonSemantic and the builtins of triton.language) is the
compiler's front end; it never sees a value, only operand types and compile-time constants (Python scalars,
constexprs, dtypes, shapes), and what it does is the builder calls it makes. A call's key is the builtin, each
tensor operand's type (and which operands share a handle), and every other argument by value; what the first
call recorded (builder method, where each argument came from: an operand's handle, an earlier call's result, or
a constant) is run again for a later call with that key. Nothing is cached when the first call raises, when a
builder argument or the result is something the record cannot name (a handle from outside the call, a block
pointer, a tuple value, a function), or when an argument is not a plain constant. One part of the semantic layer
looks at values in the interpreter: the signed int overflow check (Triton's, tdebug's numpy one in
front_end_shortcuts); it is recorded as one step and run again on the replay's operands.

Off under TDEBUG_EXECUTOR=serial (the reference: Triton's own per-op path) and for triton-viz's symbolic engine.
"""

from __future__ import annotations

import enum
from typing import Any

from ..semantics.loop_counters import LoopCounter as _COUNTER
from ..semantics.loop_counters import as_tensors
from ..versions import patcher

patch = patcher("op_memo")

_MAX_TRACES = 20000  # emptied past this (a loop's Python int operand makes a key per value)


class _Uncacheable(Exception):  # noqa: N818 - control flow: this call is run by Triton's own path, not recorded
    pass


_REF, _ITEM, _LIT, _SEQ = 0, 1, 2, 3  # a builder argument: a slot, an element of a slot, a constant, a sequence
_CALL, _OVERFLOW = 0, 1  # a step: a builder call, the overflow check


class _Memo:
    """The traces, and the recording under way (None outside one)."""

    def __init__(self) -> None:
        self.traces: dict[tuple, _Trace] = {}
        self.recording: _Recording | None = None
        self.options: Any = None  # the builder's options the traces were made under
        self.hits = 0  # calls answered from a trace
        self.families: dict[tuple, _Family] = {}


MEMO = _Memo()


# -- the key of a call ---------------------------------------------------------------------------------------
class _Operands:
    """The tensor operands of one call, in argument order: their handles (aliases once) and the tensors."""

    __slots__ = ("handles", "tensors", "seen")

    def __init__(self) -> None:
        self.handles: list = []
        self.tensors: list = []
        self.seen: dict[int, int] = {}

    def add(self, tensor) -> tuple:
        """A tensor operand (its handle a TensorHandle) as its part of the key: its handle's slot, its type."""
        handle = tensor.handle
        slot = self.seen.get(id(handle))
        if slot is None:
            slot = self.seen[id(handle)] = len(self.handles)
            self.handles.append(handle)
        self.tensors.append(tensor)
        return (slot, tensor.type.__class__, tensor.type.name)


def _kinds():
    from triton.language import core
    from triton.runtime import interpreter

    return core.tensor, core.constexpr, core.base_type, core.tuple, interpreter.TensorHandle


_TENSOR = _CONSTEXPR = _BASE_TYPE = _TUPLE = _HANDLE = None  # set by install


GLOBAL_ADDRESS_SPACE = (1, "global")  # a pointer's address_space: 1 up to Triton 3.8, "global" from 3.9


def _global(pointer) -> bool:
    """A pointer type into global memory (a type's name does not say its address space: only those are keyed)."""
    return getattr(pointer, "address_space", 1) in GLOBAL_ADDRESS_SPACE


def _encode(value: Any, parts: list, ops: _Operands) -> None:
    kind = type(value)
    if kind is _TENSOR:
        ty = value.type
        if type(value.handle) is not _HANDLE or ("pointer" in ty.name and not _global(ty.scalar)):
            raise _Uncacheable
        parts.append(ops.add(value))
    elif kind is int or kind is bool or kind is str or value is None:
        parts.append((kind, value))
    elif kind is float:
        parts.append((float, value.hex()))  # -0.0 and 0.0, NaNs: keys apart
    elif kind is _CONSTEXPR:
        parts.append("c")
        _encode(value.value, parts, ops)
    elif isinstance(value, _BASE_TYPE):
        name = getattr(value, "name", None)
        if name is None or ("pointer" in name and not _global(value.scalar)):
            raise _Uncacheable
        parts.append(("d", kind, name))
    elif kind is tuple or kind is list or kind is _TUPLE:
        parts.append((kind, len(value)))
        for item in (value.values if kind is _TUPLE else value):
            _encode(item, parts, ops)
    elif kind is slice:
        parts.append(slice)
        _encode(value.start, parts, ops)
        _encode(value.stop, parts, ops)
        _encode(value.step, parts, ops)
    else:
        raise _Uncacheable


# -- recording a call ---------------------------------------------------------------------------------------
def _constant(value: Any) -> bool:
    """A builder argument a trace may hold as it is: immutable, and holding no handle."""
    kind = type(value)
    if kind in (int, float, bool, str, bytes) or value is None:
        return True
    if kind is _CONSTEXPR:
        return _constant(value.value)
    if kind is _TUPLE:  # Triton's tuple value (block shapes): constant when its items are
        return all(_constant(v) for v in value.values)
    if isinstance(value, (_BASE_TYPE, enum.Enum)) or hasattr(kind, "__members__"):  # types, (pybind) enums
        return True
    return False


class _Recording:
    def __init__(self, builder, ops: _Operands) -> None:
        self.builder = builder
        self.steps: list = []
        self.slots: list = list(ops.handles)
        self.where: dict[int, tuple[int, int | None]] = {id(h): (i, None) for i, h in enumerate(ops.handles)}
        self.ok = True
        self.paused = False

    def argument(self, value: Any) -> tuple:
        if type(value) is _HANDLE:
            found = self.where.get(id(value))
            if found is None:
                raise _Uncacheable
            return (_REF, found[0]) if found[1] is None else (_ITEM, found[0], found[1])
        if type(value) in (tuple, list):
            items = tuple(self.argument(v) for v in value)
            if all(i[0] == _LIT for i in items):
                return (_LIT, value) if type(value) is tuple else (_SEQ, list, items)
            return (_SEQ, type(value), items)
        if _constant(value):
            return (_LIT, value)
        raise _Uncacheable

    def produced(self, out: Any) -> None:
        slot = len(self.slots)
        self.slots.append(out)  # also keeps it alive: ids in `where` stay its own
        if type(out) is _HANDLE:
            self.where[id(out)] = (slot, None)
        elif type(out) in (tuple, list):
            for j, item in enumerate(out):
                if type(item) is _HANDLE:
                    self.where[id(item)] = (slot, j)

    def call(self, name: str, method, *args, **kwargs):
        if self.paused or not self.ok:
            return method(*args, **kwargs)
        try:
            spec = (_CALL, name, tuple(self.argument(a) for a in args),
                    tuple((k, self.argument(v)) for k, v in kwargs.items()))
        except _Uncacheable:
            self.ok = False
            return method(*args, **kwargs)
        out = method(*args, **kwargs)
        self.steps.append(spec + (out,))
        self.produced(out)
        return out

    def tensor(self, value) -> tuple:
        if type(value) is not _TENSOR:
            raise _Uncacheable
        return (self.argument(value.handle), value.type)

    def result(self, out: Any, ops: _Operands) -> tuple:
        if out is None:
            return ("none",)
        if type(out) is _TENSOR:
            for j, t in enumerate(ops.tensors):
                if out is t:
                    return ("in", j)
            handle = self.argument(out.handle)
            for j, t in enumerate(ops.tensors):
                if out.type is t.type:
                    return ("t", handle, j, None)
            return ("t", handle, None, out.type)
        if type(out) is tuple:
            return ("tuple", tuple(self.result(item, ops) for item in out))
        if type(out) in (int, float, bool, str) or isinstance(out, _BASE_TYPE):
            return ("lit", out)
        raise _Uncacheable


class _RecordingBuilder:
    """Stands in for the builder while a call is recorded: every method call is recorded, then made."""

    def __init__(self, recording: _Recording) -> None:
        self._recording = recording

    def __getattr__(self, name: str):
        attr = getattr(self._recording.builder, name)
        if name.startswith("_") or not callable(attr):
            return attr
        recording = self._recording
        return lambda *args, **kwargs: recording.call(name, attr, *args, **kwargs)


def _record(member, key: tuple, args: tuple, kwargs: dict, ops: _Operands, semantic, family: tuple | None = None):
    builder = semantic.builder
    recording = _Recording(builder, ops)
    MEMO.recording = recording
    semantic.builder = _RecordingBuilder(recording)
    try:
        out = member(*args, _semantic=semantic, **kwargs)
    finally:
        semantic.builder = builder
        MEMO.recording = None
    if recording.ok:
        try:
            result = recording.result(out, ops)
        except _Uncacheable:
            return out
        if len(MEMO.traces) >= _MAX_TRACES:
            MEMO.traces.clear()
            MEMO.families.clear()
        trace = MEMO.traces[key] = _Trace(*_compile(recording.steps, result))
        if family is not None:
            _learn(family, trace)
    return out


# -- families: one trace for every value of a Python scalar operand ------------------------------------------
# A loop's Python int (`row * stride`, `k + offs` with `for k in range(...)`) or float makes a new key on every
# iteration. For Triton's arithmetic, comparison and bitwise operators, such an operand's value only becomes a
# constant (builder.get_int32(v), get_fp32(v), ...), while its type and the errors Triton raises follow from its
# range (int32/uint32/int64, sign, fitting a narrower operand; fp32 or fp64): calls whose scalars fall in the
# same ranges form a family. Two recorded calls of a family with different values show where each value went:
# if they are the same code and their constants differ exactly where one of the values sits, the family replays
# that code with each call's own values there; any other difference and the family is never replayed.
_OPERATORS = {f"__{r}{op}__" for op in ("add", "sub", "mul", "truediv", "floordiv", "mod", "and", "or", "xor",
                                         "lshift", "rshift", "pow") for r in ("", "r")}
_OPERATORS |= {"__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__"}


def _range_of(value) -> tuple:
    """What Triton's front end reads of a Python scalar operand besides its value."""
    if type(value) is int:
        return ("i", value < 0, (value if value >= 0 else -value - 1).bit_length())  # 0 and -1: ranges of one
    if value != value:
        return ("f", "nan")
    magnitude = abs(value)
    if magnitude == 0.0 or magnitude == float("inf"):
        return ("f", str(value))  # 0.0, -0.0, inf, -inf: each its own
    return ("f", value < 0, 2.0 ** -126 <= magnitude <= (2 - 2.0 ** -23) * 2.0 ** 127)


class _Family:
    __slots__ = ("first", "fn", "consts", "places", "dead")

    def __init__(self, first) -> None:
        self.first = first  # (trace, scalars) of the first recorded call
        self.fn = None  # the family's replay code, once learned
        self.consts: list = []
        self.places: list[tuple[int, int]] = []  # (constant index, scalar index)
        self.dead = False


def _same(a, b) -> bool:
    return type(a) is type(b) and (a is b or a == b)


def _learn(family: tuple, trace: _Trace) -> None:
    key, scalars = family
    found = MEMO.families.get(key)
    if found is None:
        MEMO.families[key] = _Family((trace, scalars))
        return
    if found.fn is not None or found.dead:
        return
    first, first_scalars = found.first
    if first.text != trace.text or len(first.consts) != len(trace.consts):
        found.dead = True
        return
    places = []
    for i, (a, b) in enumerate(zip(first.consts, trace.consts)):
        if _same(a, b):
            continue
        where = [j for j, (x, y) in enumerate(zip(first_scalars, scalars)) if _same(a, x) and _same(b, y)]
        if len(where) != 1:
            found.dead = True
            return
        places.append((i, where[0]))
    found.fn, found.consts, found.places = _function(trace.text), list(trace.consts), places


# -- replaying a trace: each trace becomes straight-line Python, compiled once per distinct text, at its first
# replay (a call site reached once per launch, as most outside a kernel's loops are, never pays for a compile) --
_CODE: dict[str, Any] = {}  # the source of a replay function -> the function (traces that differ only in constants)


def _compile(steps: list, result: tuple) -> tuple[str, tuple]:
    """The source of a function replay(s, b, c, sem, T, ts) running the steps on the slots s (the operands'
    handles first) with the builder b, the constants c, the semantic sem, the tensor class T and the operand
    tensors ts; and its constants."""
    consts: list = []

    def const(value) -> str:
        consts.append(value)
        return f"c[{len(consts) - 1}]"

    def value(spec: tuple) -> str:
        kind = spec[0]
        if kind == _REF:
            return f"s[{spec[1]}]"
        if kind == _ITEM:
            return f"s[{spec[1]}][{spec[2]}]"
        if kind == _LIT:
            return const(spec[1])
        items = ", ".join(value(i) for i in spec[2])
        return f"[{items}]" if spec[1] is list else f"({items},)"

    def made(spec: tuple) -> str:
        kind = spec[0]
        if kind == "t":
            _, handle, same_type, ty = spec
            return f"T({value(handle)}, {f'ts[{same_type}].type' if same_type is not None else const(ty)})"
        if kind == "in":
            return f"ts[{spec[1]}]"
        if kind == "none":
            return "None"
        if kind == "lit":
            return const(spec[1])
        return "(" + "".join(made(i) + ", " for i in spec[1]) + ")"

    lines = ["def replay(s, b, c, sem, T, ts):"]
    for step in steps:
        if step[0] == _CALL:
            _, name, args, kwargs, out = step
            if _TYPE_MAKER(name):  # a type (an immutable value of its arguments): the one made when recorded
                lines.append(f"    s.append({const(out)})")
                continue
            call = ", ".join([value(a) for a in args] + [f"{k}={value(v)}" for k, v in kwargs])
            lines.append(f"    s.append(b.{name}({call}))")
        else:
            _, (lhs, lhs_ty), (rhs, rhs_ty), op = step
            lines.append(f"    sem.binary_op_sanitize_overflow_impl(T({value(lhs)}, {const(lhs_ty)}), "
                         f"T({value(rhs)}, {const(rhs_ty)}), sem.{op})")
    lines.append(f"    return {made(result)}")
    return "\n".join(lines), tuple(consts)


def _function(text: str) -> Any:
    """The replay function of a source _compile made."""
    fn = _CODE.get(text)
    if fn is None:
        scope: dict = {}
        exec(compile(text, "<tdebug op_memo replay>", "exec"), scope)  # noqa: S102 - code made above, names checked
        fn = _CODE[text] = scope["replay"]
    return fn


def _TYPE_MAKER(name: str) -> bool:  # noqa: N802 - reads as a predicate on builder method names
    return name.startswith("get_") and name.endswith("_ty")


class _Trace:
    """What one call of a builtin did, as a replay function (its source, compiled when first called) and its
    constants."""

    __slots__ = ("fn", "consts", "text")

    def __init__(self, text: str, consts: tuple) -> None:
        self.text = text
        self.consts = consts
        self.fn = _CODE.get(text) or self._first_replay

    def _first_replay(self, *args):
        self.fn = _function(self.text)
        return self.fn(*args)


# -- the wrappers -------------------------------------------------------------------------------------------
_WRAPPED: dict[int, tuple[Any, Any]] = {}  # id(member) -> (member, its memoised version)


def _name_of(member) -> str:
    """A builtin's name, or "" when it has none that is a string: a builtin need not be a function (an object
    with a `__triton_builtin__` flag whose `__name__` answers a tensor or a constexpr, say), and a wrapper can
    take only a string for its own `__name__`."""
    name = getattr(member, "__name__", "")
    return name if isinstance(name, str) else ""


def _memoised(member, semantic):
    found = _WRAPPED.get(id(member))
    if found is not None and found[0] is member:
        return found[1]
    traces = MEMO.traces
    tensor_class, handle_class = _TENSOR, _HANDLE
    name = _name_of(member)
    operator = name in _OPERATORS

    def call(*args, _semantic=None, **kwargs):
        if MEMO.recording is not None:  # a builtin inside a recorded one: its builder calls are the outer's
            return member(*args, _semantic=semantic, **kwargs)
        ops = _Operands()
        handles, tensors, seen = ops.handles, ops.tensors, ops.seen
        parts: list = [member]
        scalars: list = []  # where the Python int/float operands of an operator sit in parts
        values: list = []  # and their values
        counted = False  # a loop's counter among the operands (loop_counters.py): called with the int it is
        try:
            for value in args:
                if type(value) is tensor_class and type(value.handle) is handle_class and \
                        "pointer" not in value.type.name:  # the common operand: _Operands.add, inlined
                    handle = value.handle
                    slot = seen.get(id(handle))
                    if slot is None:
                        slot = seen[id(handle)] = len(handles)
                        handles.append(handle)
                    tensors.append(value)
                    ty = value.type
                    parts.append((slot, ty.__class__, ty.name))
                else:
                    if type(value) is _COUNTER:
                        value = int(value)
                        counted = True
                    if operator and (type(value) is int or type(value) is float):
                        scalars.append(len(parts))
                        values.append(value)
                    _encode(value, parts, ops)
            for name, value in kwargs.items():
                parts.append(name)
                counted = counted or type(value) is _COUNTER
                _encode(value, parts, ops)
        except _Uncacheable:
            return member(*args, _semantic=semantic, **kwargs)
        if counted:
            typed_args, typed_kwargs = as_tensors(args, kwargs)
            if typed_args is not args or typed_kwargs is not kwargs:  # beside a tensor: the counter's tensor, as
                return call(*typed_args, **typed_kwargs)  # compiled (called again: keyed as a tensor)
            # else what the trace records holds the int, so that a family can replace it
            args = tuple(int(a) if type(a) is _COUNTER else a for a in args)
        key = tuple(parts)
        trace = traces.get(key)
        if trace is not None and MEMO.options is semantic.builder.options:
            MEMO.hits += 1
            return trace.fn(ops.handles, semantic.builder, trace.consts, semantic, tensor_class, ops.tensors)
        if MEMO.options is not semantic.builder.options:  # traces hold the options' answers (debug, overflow)
            traces.clear()
            MEMO.families.clear()
            MEMO.options = semantic.builder.options
        if not scalars:
            return _record(member, key, args, kwargs, ops, semantic)
        for i, v in zip(scalars, values):
            parts[i] = _range_of(v)
        family_key = tuple(parts)
        family = MEMO.families.get(family_key)
        if family is not None and family.fn is not None:
            MEMO.hits += 1
            consts = family.consts.copy()
            for at, which in family.places:
                consts[at] = values[which]
            return family.fn(ops.handles, semantic.builder, consts, semantic, tensor_class, ops.tensors)
        if family is not None and family.dead:
            return _record(member, key, args, kwargs, ops, semantic)
        return _record(member, key, args, kwargs, ops, semantic, (family_key, values))

    call.__wrapped__ = member
    call.__name__ = call.__qualname__ = name or type(member).__name__
    qualname = getattr(member, "__qualname__", None)
    if isinstance(qualname, str):
        call.__qualname__ = qualname
    doc = getattr(member, "__doc__", None)
    if isinstance(doc, str):
        call.__doc__ = doc
    if hasattr(member, "signature"):
        call.signature = member.signature
    _WRAPPED[id(member)] = (member, call)
    return call


def _memo_builtins(original):
    from triton.runtime import interpreter

    from ..batched.grid_loop import executor

    def _patch_attr(obj, name, member, builder, scope):
        if executor() == "serial":
            return original(obj, name, member, builder, scope)
        # What Triton's own wrapper does (call the builtin with the interpreter's semantic, whatever _semantic
        # the caller passed), with the memo in front.
        scope.set_attr(obj, name, _memoised(member, interpreter.interpreter_semantic))

    return _patch_attr


def _overflow_step(original):
    def binary_op_sanitize_overflow_impl(self, lhs, rhs, binary_op):
        recording = MEMO.recording
        if recording is None or recording.paused or not recording.ok:
            return original(self, lhs, rhs, binary_op)
        try:
            step = (_OVERFLOW, recording.tensor(lhs), recording.tensor(rhs), binary_op.__name__)
            if getattr(self, step[3], None) != binary_op:
                raise _Uncacheable
        except (_Uncacheable, AttributeError):
            recording.ok = False
            return original(self, lhs, rhs, binary_op)
        recording.steps.append(step)
        recording.paused = True  # its builder calls are the check's own: run again by the step
        builder, self.builder = self.builder, recording.builder
        try:
            return original(self, lhs, rhs, binary_op)
        finally:
            self.builder = builder
            recording.paused = False

    return binary_op_sanitize_overflow_impl


def install() -> None:
    """After front_end_shortcuts (its overflow check runs inside the recorded step)."""
    global _TENSOR, _CONSTEXPR, _BASE_TYPE, _TUPLE, _HANDLE
    from triton.language.semantic import TritonSemantic
    from triton.runtime import interpreter

    _TENSOR, _CONSTEXPR, _BASE_TYPE, _TUPLE, _HANDLE = _kinds()
    patch(TritonSemantic, "binary_op_sanitize_overflow_impl", _overflow_step)
    patch(interpreter, "_patch_attr", _memo_builtins)
