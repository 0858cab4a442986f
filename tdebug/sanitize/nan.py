"""NaN/Inf origin (the sanitizer's `nan` check): the operation that first made a NaN or an Inf out of finite
operands, reported when that value reaches memory through a store.

Cheap by construction: during a launch numpy's floating-point error state is 'call' (overflow, invalid,
divide by zero), so only an op that turns finite values into a NaN/Inf raises a flag; every other op pays
one flag test in its wrapper. A flagged op is examined lane by lane; its new non-finite lanes get an origin
id (an int array on the result's TensorHandle) that follows them through element-wise, shape and
reduction ops. A store whose active lanes hold a value with an origin is reported: the producing line,
program, lanes and operand values, and the store it reached. A NaN/Inf with no origin - loaded from memory,
a constant such as other=-inf padding or tl.full(-inf), or what a reduction or a subtraction makes of
those - is never reported, and neither is a lane that the store's mask turns off.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..interpreter.batched import program_axis
from ..interpreter.batched.launch import current_batch
from ..interpreter.frames import ReplayAbort, current_pid, user_frame
from ..interpreter.hooks import memory_events
from ..interpreter.semantics import bf16
from ..interpreter.versions import patcher
from ..report import Finding

patch = patcher("nan")

TAINT = "_tdebug_nan_origin"  # attribute on an interpreter TensorHandle: origin id per lane, -1 for none
MAX_ORIGINS = 10_000  # per launch; beyond it new origins are not recorded (their NaNs go unreported)
MAX_EXAMPLES = 4

# Builder ops that never compute a floating-point value from floating-point operands.
NOT_ARITHMETIC = frozenset({
    "create_load", "create_store", "create_masked_load", "create_masked_store", "create_tensor_pointer_load",
    "create_tensor_pointer_store", "create_descriptor_load", "create_descriptor_store",
    "create_descriptor_gather", "create_descriptor_scatter", "create_atomic_cas", "create_atomic_rmw",
    "create_atomic_load", "create_atomic_store", "create_atomic_poll", "create_get_program_id",
    "create_get_num_programs", "create_make_range", "create_addptr", "create_print", "create_assert",
    "create_assume", "create_barrier", "create_make_block_ptr", "create_advance",
    "create_make_tensor_descriptor", "create_histogram", "create_int_to_ptr", "create_ptr_to_int",
    "create_extern_elementwise", "create_inline_asm",
    "create_bitcast",  # moves bits: an Inf it shows was in the integer (a float atomic's old value), not made here
})
# Ops that move lanes without computing: the origin ids move the same way (the op itself is applied to them).
SHAPE_OPS = frozenset({
    "create_reshape", "create_trans", "create_expand_dims", "create_broadcast", "create_splat",
    "create_unsplat", "create_cat", "create_join", "create_split", "create_gather", "create_permute",
})
# Ops whose output lanes each depend on whole operands, not on the operand lanes at the same index.
WHOLE_OPS = frozenset({"create_dot", "reduce"})
SYMBOLS = {"create_fadd": "+", "create_fsub": "-", "create_fmul": "*", "create_fdiv": "/",
           "create_precise_divf": "/", "create_frem": "%"}
WORDS = {"create_fadd": "an addition", "create_fsub": "a subtraction", "create_fmul": "a multiplication",
         "create_fdiv": "a division", "create_precise_divf": "a division", "create_frem": "a remainder",
         "create_fp_trunc": "a conversion", "create_fp_to_fp": "a conversion", "create_fp_ext": "a conversion",
         "create_si_to_fp": "a conversion", "create_ui_to_fp": "a conversion", "create_dot": "tl.dot",
         "reduce": "a reduction (tl.sum, tl.max, tl.reduce or a scan)"}


def _op_words(name: str) -> str:
    return WORDS.get(name) or "tl." + name.removeprefix("create_").removeprefix("precise_")


@dataclass
class Origin:
    """One op of one program that made non-finite lanes out of finite operands."""

    kind: str  # "NaN", "Inf" or "NaN/Inf"
    what: str  # the operation as a person reads it, e.g. "division in float32"
    file: str
    line: int
    pid: tuple[int, ...]
    lanes: list[str]  # a few lanes with their operand values
    shared: bool = False  # made in a batch by an op on values its programs share: each program made it (serially)


@dataclass
class _Reached:
    """Stores of values from one origin line to one tensor (merged over programs)."""

    origin: Origin
    tensor: str
    store: tuple[str, int]
    kernel: str
    stored: str  # what the store wrote: "NaN", "Inf" or "NaN/Inf"
    count: int = 0
    pids: list[tuple[int, ...]] = field(default_factory=list)
    lanes: list[str] = field(default_factory=list)
    ranked: list = field(default_factory=list, repr=False)  # (program, its lane number, text) behind `lanes`


def _first_distinct(entries: list) -> list:
    """The first MAX_EXAMPLES entries (program, its lane number, text) in that order, a text once (at its first
    place). A function of the set of entries however they came: merging more into the result gives what merging
    them all at once gives, so the examples are the same whichever engine ran the programs and in whatever order
    their stores came (the batched engine's: a store for every program of a batch at once, a loop's iterations
    program after program)."""
    kept, seen = [], set()
    for entry in sorted(entries):
        if entry[2] not in seen:
            seen.add(entry[2])
            kept.append(entry)
            if len(kept) == MAX_EXAMPLES:
                break
    return kept


def _floats(h) -> np.ndarray | None:
    """A handle's values as floats: its data when numpy holds them as floats, bf16/fp8 bit patterns decoded (the
    interpreter keeps those as integers); None for anything else."""
    data = getattr(h, "data", None)
    if not isinstance(data, np.ndarray):
        return None
    if data.dtype.kind == "f":
        return data
    dtype = getattr(h, "dtype", None)
    return bf16.decode(data, bf16.name_of(dtype)) if dtype is not None and bf16.exact(dtype) else None


def _float_handles(values) -> list:
    return [v for v in values if _floats(v) is not None]


def _broadcasts_to(shape: tuple[int, ...], out: tuple[int, ...]) -> bool:
    if shape == out:
        return True
    try:
        return np.broadcast_shapes(shape, out) == out
    except ValueError:
        return False


def _kind(values: np.ndarray) -> str:
    return "NaN" if np.isnan(values).all() else ("Inf" if np.isinf(values).all() else "NaN/Inf")


def _value_text(x) -> str:
    x = float(x)
    return repr(x) if not np.isfinite(x) else f"{x:.6g}"


class NanTracker:
    """Installed once per child; collects findings across the launches of a case."""

    def __init__(self, tensor_name: Callable[[int], str] | None = None) -> None:
        self.tensor_name = tensor_name or (lambda addr: "")
        self.enabled = True  # off while the sanitizer probes programs past the grid
        self._flags: list[tuple] = []  # (launch, its numpy errstate) of the launches running now, innermost last
        self.pending = False  # numpy raised a floating-point flag since the last examined op
        self.live = False  # some value of this launch carries an origin
        self.kernel = ""
        self.origins: list[Origin] = []
        self.reached: dict[tuple, _Reached] = {}

    # -- results ------------------------------------------------------------------------------------
    def findings(self) -> list[Finding]:
        """What reached memory since the last call, one finding per (origin line, store, tensor)."""
        out = []
        for r in self.reached.values():
            o = r.origin
            where = f"line {r.store[1]}" if r.store[0] == o.file else f"{r.store[0]}:{r.store[1]}"
            out.append(Finding(
                check="nan", kernel=r.kernel, file=o.file, line=o.line, pids=r.pids, tensor=r.tensor,
                message=f"{o.kind} first produced here, by {o.what} of finite operands; it reaches "
                        f"tensor '{r.tensor}' as {r.stored} through the store at {where}",
                indices=r.lanes, count=r.count))
        self.reached = {}
        return out

    # -- the batched engine's checkpoints --------------------------------------------------------------
    def checkpoint(self) -> tuple:
        return len(self.origins), {k: dataclasses.replace(r, pids=list(r.pids), lanes=list(r.lanes),
                                                                       ranked=list(r.ranked))
                                   for k, r in self.reached.items()}, self.pending, self.live

    def rollback(self, token: tuple) -> None:
        count, reached, self.pending, self.live = token
        del self.origins[count:]
        self.reached = reached

    # -- a replayed launch (launch_replay.py): no origin in its recorded batch; one made at a replay stops it -----
    def replay_step(self, access, recording) -> Callable | None:
        """The store check at a replay: a value with an origin may reach this store, the ordinary run says."""
        def step(replay) -> None:
            if self.live:
                raise ReplayAbort("a NaN/Inf origin may reach a store")

        return step

    def unreplayable(self, token: tuple) -> str | None:
        count = token[0]
        return "a NaN/Inf made" if len(self.origins) != count or self.live else None

    def commit(self, token: tuple) -> None:
        pass

    # -- launches -----------------------------------------------------------------------------------
    def begin_launch(self, kernel: str) -> None:
        self.kernel, self.live, self.pending, self.origins = kernel, False, False, []

    # -- a launch (grid_loop's listener hooks): numpy's floating-point flags call on_flag while it runs ----------
    def on_launch(self, launch) -> None:
        self.begin_launch(getattr(launch.executor.fn, "__name__", "kernel"))
        flags = np.errstate(over="call", invalid="call", divide="call", under="ignore", call=self.on_flag)
        flags.__enter__()
        self._flags.append((launch, flags))

    def on_launch_end(self, launch, error: BaseException | None) -> None:
        if self._flags and self._flags[-1][0] is launch:  # not when a listener outside this one stopped the launch
            self._flags.pop()[1].__exit__(None, None, None)

    def on_flag(self, _error: str, _flag: int) -> None:
        self.pending = True

    # -- ops -----------------------------------------------------------------------------------------
    def after_op(self, name: str, args: tuple, out) -> None:
        """An op returned `out` after a flag, or with an operand that carries an origin."""
        self.pending = False
        if not self.enabled:
            return
        outs = out if isinstance(out, tuple) else (out,)
        operands = _float_handles(args)
        tainted = [a for a in operands if getattr(a, TAINT, None) is not None]
        for o in _float_handles(outs):
            bad = ~np.isfinite(_floats(o))
            if not bad.any():
                continue
            if name in SHAPE_OPS:
                if tainted:
                    self._move(name, args, o, outs, bad)
                continue
            self._compute(name, operands, o, bad, program_axis.batched_op(args))

    def _move(self, name: str, args: tuple, out, outs: tuple, bad: np.ndarray) -> None:
        """A shape op: apply the op itself to the origin ids of its float operands."""
        from triton.language import int32
        from triton.runtime.interpreter import TensorHandle

        def ids(a):
            if _floats(a) is None:
                return a
            t = getattr(a, TAINT, None)
            return TensorHandle(t if t is not None else np.full(a.data.shape, -1, np.int32), int32)

        try:
            if program_axis.batched_op(args):
                from triton.runtime.interpreter import interpreter_builder

                moved = getattr(interpreter_builder, name)(*[_same_axis(ids(a), a) for a in args])
            else:
                moved = getattr(self, "_original_" + name)(*[ids(a) for a in args])
            moved = moved[outs.index(out)] if isinstance(moved, tuple) else moved
            lane = np.where(bad, moved.data.astype(np.int32), -1)
        except Exception:  # noqa: BLE001 - an op this version does differently: keep the origin, lose the lanes
            lane = np.where(bad, self._first_id([a for a in args if getattr(a, TAINT, None) is not None]), -1)
        self._set(out, lane)

    @staticmethod
    def _first_id(handles: list) -> int:
        ids = [int(t[t >= 0].min()) for t in (getattr(h, TAINT) for h in handles) if (t >= 0).any()]
        return min(ids) if ids else -1

    def _compute(self, name: str, operands: list, out, bad: np.ndarray, batched: bool = False) -> None:
        shape = out.data.shape
        new = bad.copy()
        lane = np.full(shape, -1, np.int32)
        whole = []  # operands that do not line up with the output lane by lane (tl.dot, reductions)
        for a in reversed(operands):
            taint = getattr(a, TAINT, None)
            if name not in WHOLE_OPS and _broadcasts_to(a.data.shape, shape):
                new &= np.broadcast_to(np.isfinite(_floats(a)), shape)
                if taint is not None:
                    t = np.broadcast_to(taint, shape)
                    lane = np.where(t >= 0, t, lane)
            else:
                whole.append(a)
                new &= _finite_per_program(a, shape, batched)
        if whole:
            first = _first_ids_per_program([a for a in whole if getattr(a, TAINT, None) is not None], shape,
                                           batched)
            lane = np.where(lane >= 0, lane, first)
        if new.any() and len(self.origins) < MAX_ORIGINS:
            if batched:
                self._record_per_program(name, operands, out, new, lane)
            else:
                batch = current_batch()
                shared = batch is not None and batch.index is None and batch.size > 1
                lane[new] = self._record(name, operands, out, new, shared)
        lane[~bad] = -1
        self._set(out, lane)

    def _set(self, out, lane: np.ndarray) -> None:
        if (lane >= 0).any():
            setattr(out, TAINT, lane)
            self.live = True

    def _record_per_program(self, name: str, operands: list, out, new: np.ndarray, lane: np.ndarray) -> None:
        """A batched op: one origin per program that made a new NaN/Inf, as the serial engine records them."""
        batch = current_batch()
        for i in np.nonzero(new.reshape(new.shape[0], -1).any(axis=1))[0]:
            with program_axis.naming_program(batch.pid(int(i))):
                mine = new[i]
                sliced = [program_axis.slice_program(a, int(i)) for a in operands]
                lane[i][mine] = self._record(name, sliced, program_axis.slice_program(program_axis.mark(
                    copy.copy(out)), int(i)), mine)

    def _record(self, name: str, operands: list, out, new: np.ndarray, shared: bool = False) -> int:
        frame = user_frame()
        data = _floats(out)
        kind = _kind(data[new])
        dtype = bf16.name_of(out.dtype) if bf16.exact(out.dtype) else data.dtype.name
        what = f"{_op_words(name)} in {dtype}"
        lanes = []
        for index in np.argwhere(new)[:MAX_EXAMPLES]:
            idx = tuple(int(i) for i in index)
            args = [_value_text(np.broadcast_to(_floats(a), data.shape)[idx]) for a in operands
                    if name not in WHOLE_OPS and _broadcasts_to(a.data.shape, data.shape)]
            symbol = SYMBOLS.get(name)
            if symbol and len(args) == 2:
                expr = f"{args[0]} {symbol} {args[1]}"
            elif name in WHOLE_OPS or not args:
                expr = "finite inputs"
            else:
                expr = f"{name.removeprefix('create_')}({', '.join(args)})"
            lanes.append(f"lane {idx if len(idx) > 1 else idx[0]}: {expr} = {_value_text(data[idx])}")
        self.origins.append(Origin(kind, what, frame.f_code.co_filename if frame else "",
                                   frame.f_lineno if frame else 0, current_pid(), lanes, shared))
        return len(self.origins) - 1

    # -- memory ----------------------------------------------------------------------------------------
    def check_store(self, ptrs, value, mask) -> None:
        """A store (or atomic) of `value` under `mask`: report the lanes whose NaN/Inf has an origin."""
        taint = getattr(value, TAINT, None)
        if taint is None or not self.enabled:
            return
        data = _floats(value)
        if data is None:
            return
        shape = data.shape
        active = np.ones(shape, bool) if mask is None else np.broadcast_to(np.asarray(mask.data, bool), shape)
        reached = (np.broadcast_to(taint, shape) >= 0) & active & ~np.isfinite(data)
        if not reached.any():
            return
        frame = user_frame()
        store = (frame.f_code.co_filename, frame.f_lineno) if frame else ("", 0)
        addrs = np.broadcast_to(ptrs.data, shape)
        ids = np.broadcast_to(taint, shape)[reached]
        for oid in np.unique(ids):
            origin = self.origins[int(oid)]
            lanes = reached & (np.broadcast_to(taint, shape) == oid)
            tensor = self.tensor_name(int(addrs[lanes][0]))
            stored = _kind(data[lanes])
            key = (origin.file, origin.line, origin.kind, store, tensor, stored)
            r = self.reached.get(key)
            if r is None:
                r = self.reached[key] = _Reached(origin, tensor, store, self.kernel, stored)
            elif origin.pid < r.origin.pid:
                # Two ops of one line made NaN/Infs that reach this store (`tl.dot(a * s, b)`): the finding names the
                # op of the first program in the serial engine's order, whichever engine recorded which first.
                r.origin = origin
            r.count += int(lanes.sum())
            # The first programs in the serial engine's order, each one's lanes in its order: the same examples
            # whichever engine ran the programs.
            made = _makers(origin, lanes, np.shape(ptrs.data))
            r.pids = sorted(set(r.pids) | set(made))[:MAX_EXAMPLES]
            r.ranked = _first_distinct(r.ranked + [(origin.pid, n, t) for n, t in enumerate(origin.lanes)])
            r.lanes = [t for _, _, t in r.ranked]

    def before(self, access) -> None:
        """A store or atomic about to run (interpreter.hooks.memory_events), with the mask the sanitizer left it."""
        if self.live:
            self.check_store(access.ptrs, access.value, access.mask)

    # -- patches ---------------------------------------------------------------------------------------
    def install(self) -> None:
        from triton.runtime import interpreter

        tracker = self
        builder = interpreter.interpreter_builder
        program_axis.declare_side_array(TAINT, -1)  # a lane with no origin (a predicated loop merges the origins)
        for name in sorted(n for n in dir(builder) if n.startswith("create_") and n not in NOT_ARITHMETIC):
            setattr(self, "_original_" + name, getattr(builder, name))
            patch(builder, name, lambda original, name=name: _watched(tracker, name, original))
        reduce_scan = getattr(interpreter, "ReduceScanOpInterface", None)
        if reduce_scan is not None:
            patch(reduce_scan, "apply", lambda original: _watched_reduction(tracker, original))
        memory_events.listen("nan", self, ("create_masked_store", "create_atomic_rmw"))  # and each launch


def _makers(origin: Origin, lanes: np.ndarray, ptrs_shape: tuple[int, ...]) -> list[tuple[int, ...]]:
    """The programs that made the NaN/Infs of a store's `lanes` (its rows: the programs of the running batch when
    the store is batched): the origin's program, or, for a value the programs of a batch share, each program whose
    lanes reach the store, as the serial engine records one origin per program."""
    batch = current_batch()
    if not origin.shared or batch is None:
        return [origin.pid]
    if batch.index == program_axis.WHOLE and lanes.shape == ptrs_shape and lanes.shape[:1] == (batch.size,):
        return [batch.pid(int(i)) for i in np.flatnonzero(lanes.reshape(batch.size, -1).any(axis=1))]
    if batch.index is not None and batch.index >= 0:  # the memory op run for one program (named as it runs)
        return [current_pid()]
    return [origin.pid]


def _per_program(a, shape: tuple[int, ...], batched: bool) -> bool:
    """Does operand `a` of a batched op hold a row per program of the op's result `shape`?"""
    return batched and program_axis.is_batched(a) and len(shape) > 0 and a.data.shape[:1] == shape[:1]


def _finite_per_program(a, shape: tuple[int, ...], batched: bool):
    """Is a whole-operand op's operand `a` all finite: per program in a batch (the serial engine sees one program's
    operand at a time), else as a whole; broadcastable to `shape`."""
    if _per_program(a, shape, batched):
        rows = np.isfinite(_floats(a)).reshape(shape[0], -1).all(axis=1)
        return rows.reshape((shape[0],) + (1,) * (len(shape) - 1))
    return bool(np.isfinite(_floats(a)).all())


def _first_ids_per_program(handles: list, shape: tuple[int, ...], batched: bool):
    """The first origin id among whole operands' lanes (-1: none): per program in a batch, so a reduction never
    hands one program's NaN/Inf the origin of another's; broadcastable to `shape`."""
    none = np.iinfo(np.int32).max
    first = np.full((shape[0],) + (1,) * (len(shape) - 1), none, np.int64) if batched and len(shape) else none
    for h in handles:
        t = getattr(h, TAINT)
        if _per_program(h, shape, batched):
            rows = np.where(t >= 0, t, none).reshape(shape[0], -1).min(axis=1)
            first = np.minimum(first, rows.reshape((shape[0],) + (1,) * (len(shape) - 1)))
        elif (t >= 0).any():
            first = np.minimum(first, int(t[t >= 0].min()))
    return np.where(first == none, -1, first).astype(np.int32)


def _same_axis(ids, handle):
    """An origin-id handle batched (a program axis in front) when the value it stands for is."""
    return program_axis.mark(ids) if program_axis.is_batched(handle) and ids is not handle else ids


def _watched(tracker: NanTracker, name: str, original):
    def op(*args, **kwargs):
        out = original(*args, **kwargs)
        if tracker.pending or tracker.live:
            tracker.after_op(name, args, out)
        return out

    return op


def _watched_reduction(tracker: NanTracker, original):
    def apply(self, input):
        out = original(self, input)
        if tracker.pending or tracker.live:
            ins = input if isinstance(input, tuple) else (input,)
            outs = out if isinstance(out, tuple) else (out,)
            tracker.after_op("reduce", tuple(t.handle for t in ins if hasattr(t, "handle")),
                             tuple(t.handle for t in outs if hasattr(t, "handle")))
        return out

    return apply


