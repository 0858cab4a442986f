"""Predicated loops for the batched engine: a `for` over range() whose bound differs between the programs of a
batch runs once, to the largest bound, instead of once per group of programs with the same bound.

Each jit function's AST (after the interpreter's own rewrite) has its simple loops
`for i in range(...)` / `tl.range(...)` rewritten to
    for i in __tdebug_loops__.loop("i", range, ...):
        state = __tdebug_loops__.begin(locals())
        if __tdebug_loops__.compacting(state):
            cut = __tdebug_loops__.compact(state, locals(), reads, scalars)
            if "x" in cut: x = cut["x"]   (and so on: the names the body reads, the function's other locals)
        <body>
        if __tdebug_loops__.merging(state):
            merged = __tdebug_loops__.end(state, locals(), ("a", "b", ...), own, reads, scalars)
            if "a" in merged: a = merged["a"]   (and so on: a name bound by neither side stays unbound)
(only loops whose variable the function names nowhere else, whose body has no break, continue, return, try or
del). On the serial engine, or when the programs of a batch agree on the bounds, loop() is the range itself. When only
the stop differs, loop() iterates to the largest stop with a predicate on the batch (program_axis.Batch): the
programs past their own stop are out of the loop; their memory ops, asserts and Python control flow are left out
(program_axis) and, at the end of each such iteration, every name the body assigns gets back, for them, its
value from before the iteration (end()): after the loop each program holds what it held after its own last
iteration, as on the serial engine. (A block bound to a name used in the body only is dead for them, and kept as
it is: only an integer scalar, which tdebug's store records read from the frame, is carried.) An iteration with
at most COMPACT_AT of the batch's programs still in the loop runs compacted: on a batch of those programs only
(its `root` the batch grid_loop runs), every per-program value the body reads cut to their rows first (compact())
and widened back at its end, so the programs out of the loop cost nothing in it. Anything this
cannot carry (a Python number or object that changed, a value whose extra state differs on the two sides) gives
up: the batch is split by its programs' trip counts (program_axis.Divergent), as before predication existed; so
does any error raised in a batch while programs were out of a loop (grid_loop), so a real error is raised again
by the programs that make it.
"""

from __future__ import annotations

import ast
import copy
import operator
import sys
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ..ast_walk import children, walk
from ..semantics.loop_counters import LoopCounter
from ..versions import rewrite_jit_functions
from . import program_axis
from .launch import current_batch, current_launch
from .program_axis import MARK, SIDE_ARRAY_NONE, Divergent, _side_arrays, mark

NAME = "__tdebug_loops__"  # the name the rewritten functions reach this module by (set in their globals)
STATE = "__tdebug_loop_state_{}"
MERGED = "__tdebug_loop_merged_{}"
CUT = "__tdebug_loop_cut_{}"


# -- the rewrite ------------------------------------------------------------------------------------------------
def _is_range(call: ast.expr) -> bool:
    if not isinstance(call, ast.Call):
        return False
    func = call.func
    return (isinstance(func, ast.Name) and func.id == "range") or (
        isinstance(func, ast.Attribute) and func.attr == "range")


_ESCAPES = (ast.Break, ast.Continue, ast.Return, ast.Yield, ast.YieldFrom, ast.Await, ast.Global, ast.Nonlocal,
            ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.Try, ast.Delete)


def _boolop_operands(node: ast.AST) -> set[int]:
    """The lambdas boolops' rewrite made of `a and b`'s operands (called at once, inside the statement)."""
    return {id(arg) for n in walk(node) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
            and isinstance(n.func.value, ast.Name) and n.func.value.id == "__tdebug_boolops__"
            for arg in n.args if isinstance(arg, ast.Lambda)}


def _assigned(body: list[ast.stmt]) -> list[str]:
    names: list[str] = []
    for stmt in body:
        for node in walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id not in names \
                    and not node.id.startswith("__tdebug"):
                names.append(node.id)
    return names


class LoopRewriter:
    def __init__(self, function: ast.AST) -> None:
        self.count = 0
        self.names: dict[str, list[int]] = {}  # every name in the function -> its nodes (ids)
        self.local: set[str] = {a.arg for a in walk(function.args) if isinstance(a, ast.arg)}
        for n in walk(function):
            if isinstance(n, ast.Name):
                self.names.setdefault(n.id, []).append(id(n))
                if isinstance(n.ctx, ast.Store):
                    self.local.add(n.id)  # bound in the function: a local (the only names compact() rebinds)

    def visit_For(self, node: ast.For) -> ast.AST:
        """The loop predicated in place (inner loops first: rewrite() calls this in that order)."""
        if not (_is_range(node.iter) and isinstance(node.target, ast.Name) and not node.orelse):
            return node
        inside = set()
        for stmt in node.body:
            operands = _boolop_operands(stmt)
            for n in walk(stmt):
                if isinstance(n, _ESCAPES) and id(n) not in operands:
                    return node
                inside.add(id(n))
        inside.add(id(node.target))
        target = node.target.id
        if any(n not in inside for n in self.names.get(target, ())):
            return node  # the loop variable named outside the loop: its last value differs between programs
        at = _Place(node)
        call, at_call = node.iter, _Place(node.iter)
        # A loop whose iterations may run as lanes of one batch (lane_loop; loop_lanes.py): its accumulators'
        # statements become accumulate() calls, which fold the iterations' terms in order.
        accumulators = lane_accumulators(node)
        reads = [n for n in _read(node.body) if n in self.local]
        names = _assigned(node.body)
        if accumulators is not None and reads:
            node.body = _with_accumulate(node.body, accumulators)
            node.iter = at_call.helper("lane_loop", [at_call.strings(list(accumulators)), at_call.constant(target),
                                                     call.func] + call.args, call.keywords)
        else:
            node.iter = at_call.helper("loop", [at_call.constant(target), call.func] + call.args, call.keywords)
        node.body = self.predicated(at, node.body, inside, at.helper("begin", [at.locals()]), names, reads, target)
        return node

    def predicated(self, at: _Place, body: list[ast.stmt], inside: set[int], begin: ast.expr,
                   names: list[str] | None = None, reads: list[str] | None = None,
                   target: str | None = None, compacting: bool = True) -> list[ast.stmt]:
        """`body` (a loop's, or a branch's of an `if`: predicated_ifs.py) between the statements that run it
        predicated: its state from `begin` (None: run as written), compacted when few programs run it, and at its
        end each name it binds merged (the programs that ran it take the new value, the others keep theirs).
        `inside`: the ids of the nodes of the body (and of the loop's variable, `target`); `compacting` False: never
        compacted (a branch: the integer locals store records read must stay the very values end() noted)."""
        names = _assigned(body) if names is None else names
        reads = [n for n in _read(body) if n in self.local] if reads is None else reads
        # Names every use of which lies in the body: not bound before the loop, not read after it.
        own = [n for n in names if all(i in inside for i in self.names.get(n, ()))]
        state = STATE.format(self.count)
        self.count += 1
        made = [at.assign(state, begin)]  # the statements made here, in the order they run around the body
        # The loop variable too: a per-program one (a start that differs between programs) is cut like any value.
        # The function's other locals: those holding a per-program integer scalar are cut too (tdebug's store
        # records read every such local of the frame, and must find them all with the same programs).
        scalars = sorted(self.local - set(reads) - {target})
        if reads and compacting:
            # A compacted iteration (compact()): the names it reads rebound to the rows of the programs in the loop.
            cut_name = CUT.format(self.count - 1)
            cut = [at.assign(cut_name, at.helper("compact", [at.name(state), at.locals(), at.strings(reads),
                                                             at.strings(scalars)]))]
            cut += at.rebind(reads + scalars, cut_name)
            made.append(at.when(at.helper("compacting", [at.name(state)]), cut))
        before = len(made)
        if names or reads:
            # merged = end(state, locals(), names, own, reads); then each name bound after the iteration (a name
            # assigned only under a constexpr-false `if` is never bound) gets its merged value.
            merged_name = MERGED.format(self.count - 1)
            merge = [at.assign(merged_name, at.helper("end", [at.name(state), at.locals(), at.strings(names),
                                                              at.strings(own), at.strings(reads),
                                                              at.strings(scalars)]))]
            merge += at.rebind(names + [n for n in reads + scalars if n not in names], merged_name)
            made.append(at.when(at.helper("merging", [at.name(state)]), merge))
        return made[:before] + body + made[before:]


class _Place:
    """Makers of the nodes the rewrite adds around a loop, each at one node's place (the `for`'s: its line in
    tracebacks and line breakpoints; the range call's for the call replacing it): made located, the function
    needs no walk to locate them afterwards."""

    def __init__(self, node: ast.AST) -> None:
        self.at = {"lineno": node.lineno, "col_offset": node.col_offset, "end_lineno": node.end_lineno,
                   "end_col_offset": node.end_col_offset}

    def name(self, name: str, store: bool = False) -> ast.Name:
        return ast.Name(id=name, ctx=ast.Store() if store else ast.Load(), **self.at)

    def constant(self, value: Any) -> ast.Constant:
        return ast.Constant(value, **self.at)

    def strings(self, names: list[str]) -> ast.Tuple:
        return ast.Tuple(elts=[self.constant(n) for n in names], ctx=ast.Load(), **self.at)

    def locals(self) -> ast.Call:
        return ast.Call(func=self.name("locals"), args=[], keywords=[], **self.at)

    def helper(self, name: str, args: list[ast.expr], keywords: list | None = None) -> ast.Call:
        """`__tdebug_loops__.name(*args)` (args made here, or the loop's own nodes, located already)."""
        func = ast.Attribute(value=self.name(NAME), attr=name, ctx=ast.Load(), **self.at)
        return ast.Call(func=func, args=args, keywords=keywords or [], **self.at)

    def assign(self, name: str, value: ast.expr) -> ast.Assign:
        return ast.Assign(targets=[self.name(name, store=True)], value=value, **self.at)

    def when(self, test: ast.expr, body: list[ast.stmt]) -> ast.If:
        return ast.If(test=test, body=body, orelse=[], **self.at)

    def rebind(self, names: list[str], source: str) -> list[ast.stmt]:
        """`if "a" in source: a = source["a"]` for each name."""
        return [self.when(ast.Compare(left=self.constant(n), ops=[ast.In()], comparators=[self.name(source)],
                                      **self.at),
                          [self.assign(n, ast.Subscript(value=self.name(source), slice=self.constant(n),
                                                        ctx=ast.Load(), **self.at))]) for n in names]


def _read(body: list[ast.stmt]) -> list[str]:
    """The names the body reads (`x += 1` reads x too)."""
    names: list[str] = []
    for stmt in body:
        for node in walk(stmt):
            read = isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
            if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                node, read = node.target, True
            if read and node.id not in names and not node.id.startswith("__tdebug"):
                names.append(node.id)
    return names


_FOLDS = {ast.Add: "+", ast.Sub: "-"}  # an accumulator's update: `acc += term`, `acc = acc + term` (and -)


def _target(stmt: ast.stmt) -> str | None:
    """The one plain name a statement assigns (None: another kind of statement or target)."""
    if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
        return stmt.target.id
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
        return stmt.targets[0].id
    return None


def _update(stmt: ast.stmt) -> tuple[str, ast.expr] | None:
    """(operator, term) of an accumulator's update statement, or None."""
    name = _target(stmt)
    if isinstance(stmt, ast.AugAssign) and type(stmt.op) in _FOLDS:
        return _FOLDS[type(stmt.op)] + "=", stmt.value
    value = _assigned_value(stmt) if isinstance(stmt, ast.Assign) else None
    if isinstance(value, ast.BinOp) and type(value.op) in _FOLDS and isinstance(value.left, ast.Name) \
            and value.left.id == name:
        return _FOLDS[type(value.op)], value.right
    scaled = _scaled(value, name) if value is not None else None
    if scaled is not None:
        op, scale, term = scaled
        return op, ast.Tuple(elts=[scale, term], ctx=ast.Load())
    return None


def _scaled(value: ast.expr, name: str) -> tuple[str, ast.expr, ast.expr] | None:
    """(op, scale, term) of a linear recurrence's update `acc = acc * scale + term` (op "*+") or
    `acc = scale * acc + term` ("s*+"), as a decayed state's `h = h * decay + tl.dot(k, v)`; None otherwise."""
    if not (isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add) and isinstance(value.left, ast.BinOp)
            and isinstance(value.left.op, ast.Mult)):
        return None
    left, right = value.left.left, value.left.right
    if isinstance(left, ast.Name) and left.id == name:
        return "*+", right, value.right
    if isinstance(right, ast.Name) and right.id == name:
        return "s*+", left, value.right
    return None


def _to_tensor_call(value: ast.expr) -> bool:
    """Whether `value` is `interpreter_semantic.to_tensor(x, False)`: Triton's interpreter wraps every assigned value
    so (its ASTTransformer, before tdebug's rewrites see the tree)."""
    func = getattr(value, "func", None)
    return isinstance(value, ast.Call) and isinstance(func, ast.Attribute) and func.attr == "to_tensor" \
        and isinstance(func.value, ast.Name) and func.value.id == "interpreter_semantic" and len(value.args) == 2


def _assigned_value(stmt: ast.Assign) -> ast.expr:
    """The value an assignment computes, inside the interpreter's to_tensor() wrapper where it has one."""
    return stmt.value.args[0] if _to_tensor_call(stmt.value) else stmt.value


def _names_in(node: ast.AST) -> set[str]:
    return {n.id for n in walk(node) if isinstance(n, ast.Name)}


def lane_accumulators(node: ast.For) -> tuple[str, ...] | None:
    """The names a loop carries from one iteration to the next when every one of them is an accumulator (named only
    by its updates `acc += term` / `acc = acc + term` (or -) / `acc = acc * scale + term`, at most one on any path
    through the body's `if`s, its term and scale naming no carried name): its iterations can then run as lanes of
    one batch, each accumulator folded over the iterations' terms in order (loop_lanes.py). None: another
    dependence between iterations, or a loop inside."""
    body = node.body
    if any(isinstance(n, (ast.For, ast.AsyncFor, ast.While)) for stmt in body for n in walk(stmt)):
        return None
    carried: list[str] = []
    _carried(body, set(), set(_assigned(body)), carried)
    for name in carried:
        for leaf in _leaves(body):
            if name not in _names_in(leaf):
                continue
            update = _update(leaf) if _target(leaf) == name else None
            if update is None or _names_in(update[1]) & set(carried):
                return None
        if _updates_on_a_path(body, name) != 1:
            return None
    return tuple(carried)


def _leaves(body: list[ast.stmt]):
    """The body's statements through its `if`s (an `if`'s test as an expression statement of its own)."""
    for stmt in body:
        if isinstance(stmt, ast.If):
            yield ast.Expr(stmt.test)
            yield from _leaves(stmt.body)
            yield from _leaves(stmt.orelse)
        else:
            yield stmt


def _updates_on_a_path(body: list[ast.stmt], name: str) -> int:
    """The most updates of `name` one iteration can run (an `if`'s branches are two paths)."""
    count = 0
    for stmt in body:
        if isinstance(stmt, ast.If):
            count += max(_updates_on_a_path(stmt.body, name), _updates_on_a_path(stmt.orelse, name))
        elif _target(stmt) == name:
            count += 1
    return count


def _with_accumulate(body: list[ast.stmt], accumulators: tuple[str, ...]) -> list[ast.stmt]:
    """The body with each accumulator's update an accumulate() call, through its `if`s."""
    out = []
    for stmt in body:
        if isinstance(stmt, ast.If):
            stmt.body = _with_accumulate(stmt.body, accumulators)
            stmt.orelse = _with_accumulate(stmt.orelse, accumulators)
        elif _target(stmt) in accumulators:
            stmt = _accumulating(stmt)
        out.append(stmt)
    return out


def _carried(body: list[ast.stmt], bound: set[str], bound_anywhere: set[str], carried: list[str]) -> None:
    """Add to `carried` the names of bound_anywhere that a statement of `body` reads before the iteration has
    bound them (`bound`: the names bound so far on every path; an `if`'s branches each on their own)."""
    def reading(names: list[str]) -> None:
        carried.extend(n for n in names if n in bound_anywhere and n not in bound and n not in carried)

    for stmt in body:
        if isinstance(stmt, ast.If):
            reading(_read([ast.Expr(stmt.test)]))
            then, orelse = set(bound), set(bound)
            _carried(stmt.body, then, bound_anywhere, carried)
            _carried(stmt.orelse, orelse, bound_anywhere, carried)
            bound |= then & orelse
        else:
            reading(_read([stmt]))
            bound |= {n.id for n in walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _accumulating(stmt: ast.stmt) -> ast.Assign:
    """`acc = __tdebug_loops__.accumulate(acc, term, "+=")` for an accumulator's update `acc += term`."""
    name = _target(stmt)
    op, term = _update(stmt)
    at = _Place(stmt)
    total: ast.expr = at.name(name)
    if op in _SCALED:  # `acc * scale` first, as written (the product before the term, on the serial engine)
        scale, term = term.elts
        total = at.helper("scaled", [total, scale, at.constant(op)])
    value = at.helper("accumulate", [total, term, at.constant(op)])
    if isinstance(stmt, ast.Assign) and _to_tensor_call(stmt.value):  # the interpreter's wrapper kept around it
        value = ast.Call(func=stmt.value.func, args=[value, stmt.value.args[1]], keywords=[], **at.at)
    return at.assign(name, value)


def rewrite(tree: ast.AST) -> ast.AST:
    """The tree with its simple range loops predicated (the tree as it was when it has none)."""
    for function in getattr(tree, "body", []):
        if isinstance(function, ast.FunctionDef):
            loops = _loops(function, [])
            if loops:
                rewriter = LoopRewriter(function)
                for loop in loops:
                    rewriter.visit_For(loop)
    return tree


def _loops(node: ast.AST, found: list[ast.For]) -> list[ast.For]:
    """The `for` loops under node, each after the loops inside it, siblings in order (as a NodeTransformer
    visiting children first would reach them)."""
    for child in children(node):
        _loops(child, found)
    if isinstance(node, ast.For):
        found.append(node)
    return found


# -- at run time ------------------------------------------------------------------------------------------------
def _per_program(value: Any, batch) -> np.ndarray | None:
    """A range argument's value per program (None: one value for every program)."""
    handle = getattr(value, "handle", None)
    if handle is None or not getattr(handle, MARK, False):
        return None
    data = np.asarray(handle.data)
    if data[0].size != 1 or data.dtype.kind not in "iu":
        return None
    program_axis.decides(handle)
    return data.reshape(data.shape[0]).astype(np.int64)


def loop(target: str, make_range: Callable, *args: Any, **kwargs: Any) -> Iterator[int] | range:
    """The loop's iterable: the range itself, or (its start or stop differing between the batch's programs) the
    predicated iteration to the largest trip count. `target`: the loop variable's name."""
    return _loop(sys._getframe(1), target, make_range, args, kwargs)


# Set by loop_lanes.install() (run_lanes_with): (batch, each program's start, the trip count, the step,
# accumulators, the loop's (code, line, constants), its variable's name) -> the iterations as lanes of the batch,
# or None where they cannot run so.
LANES: Callable | None = None


def run_lanes_with(lanes: Callable | None) -> None:
    global LANES
    LANES = lanes


def lane_loop(accumulators: tuple[str, ...], target: str, make_range: Callable, *args: Any,
              **kwargs: Any) -> Iterator | range:
    """loop() of a loop whose iterations may run as lanes of one batch (lane_accumulators said so): when the
    programs agree on its range, loop_lanes runs them so, a chunk of iterations at a time."""
    frame = sys._getframe(1)
    batch = current_batch()
    if LANES is not None and batch is not None and batch.index is None and batch.active is None:
        bounds = _lane_trips(batch, args)
        if bounds is not None:
            batch.loop_scalars.pop((frame.f_code, target), None)  # an earlier loop's values are stale now
            key = (frame.f_code, frame.f_lineno, _constants(frame.f_locals))
            chunks = LANES(batch, *bounds, accumulators, key, target)
            if chunks is not None:
                return chunks
    return _loop(frame, target, make_range, args, kwargs)


def _constants(frame_locals: dict) -> tuple:
    """The frame's Python scalars (a kernel's constexprs, what it computed from them): a loop whose lanes were
    given up is known by them too, so another specialisation of the kernel tries its own."""
    return tuple(sorted((name, type(v).__name__, v) for name, v in frame_locals.items()
                        if type(v) in (int, bool, str) and not name.startswith("__tdebug")))


def _lane_trips(batch, args: tuple) -> tuple[np.ndarray, np.ndarray, int] | None:
    """(each program's start, each program's trip count, the step) of a range whose step is one for all programs
    (None: another range, or an argument that is no integer)."""
    if len(args) not in (1, 2, 3):
        return None
    start, stop, step = _range_args(args)
    if _per_program(step, batch) is not None:
        return None
    try:
        step = _int(step)
        starts = _per_program(start, batch)
        stops = _per_program(stop, batch)
        begins = np.full(batch.size, _int(start), dtype=np.int64) if starts is None else starts
        ends = np.full(batch.size, _int(stop), dtype=np.int64) if stops is None else stops
    except (TypeError, ValueError):
        return None
    if step == 0:
        return None
    return begins, _trips(begins, ends, step), step


def accumulate(total: Any, term: Any, op: str) -> Any:
    """`total += term` (op "+=", "-=", "+" or "-"), as the kernel wrote it, or a recurrence's `total + term`
    after scaled() (op "*+" / "s*+"); in a loop running as lanes, the term of every iteration of the chunk folded
    into the total in order (loop_lanes)."""
    batch = current_batch()
    lanes = None if batch is None else batch.lanes
    if lanes is not None:
        if op in _SCALED:
            return lanes.fold_scaled(total, term)
        return lanes.fold(total, term, _FOLD_OPS[op])
    return _FOLD_OPS[op](total, term)


class Scaled:
    """A recurrence's `acc * scale` not yet made: in a loop running as lanes the product is taken in each
    iteration of the fold, with that iteration's scale."""

    __slots__ = ("total", "scale", "first")

    def __init__(self, total: Any, scale: Any, first: bool) -> None:
        self.total, self.scale, self.first = total, scale, first

    def product(self, total: Any, scale: Any) -> Any:
        return operator.mul(scale, total) if self.first else operator.mul(total, scale)


def scaled(total: Any, scale: Any, op: str) -> Any:
    """`total * scale` (op "*+") or `scale * total` ("s*+"), as the kernel wrote it; in a loop running as lanes,
    both kept for accumulate() to fold."""
    batch = current_batch()
    product = Scaled(total, scale, op == "s*+")
    if batch is not None and batch.lanes is not None:
        return product
    return product.product(total, scale)


_FOLD_OPS = {"+=": operator.iadd, "-=": operator.isub, "+": operator.add, "-": operator.sub, "*+": operator.add,
             "s*+": operator.add}
_SCALED = ("*+", "s*+")


def _loop(frame, target: str, make_range: Callable, args: tuple, kwargs: dict) -> Iterator[int] | range:
    batch = current_batch()
    if batch is None or batch.index is not None or len(args) not in (1, 2, 3):
        return make_range(*args, **kwargs)
    batch.loop_scalars.pop((frame.f_code, target), None)  # an earlier loop's values are stale now
    start, stop, step = _range_args(args)
    starts, stops = _per_program(start, batch), _per_program(stop, batch)
    if (starts is None and stops is None) or _per_program(step, batch) is not None:
        return make_range(*args, **kwargs)  # agreeing programs, or a step that differs: as before
    step = _int(step)
    if step == 0:
        return make_range(*args, **kwargs)  # range's own error
    active = batch.active
    if starts is not None and _alike(starts, active):
        start, starts = _first(starts, active), None
    if starts is None:
        start = _int(start)
        if _alike(stops, active):
            return make_range(*args, **kwargs)
    begins = start if starts is None else starts
    ends = np.full(batch.size, _int(stop), dtype=np.int64) if stops is None else stops
    trips = _trips(begins, ends, step)
    if active is not None:
        trips = np.where(active, trips, 0)
    if starts is None and _alike(trips, active):  # different stops, the same iterations
        deciding = trips if active is None else trips[active]
        return range(start, start + int(deciding[0]) * step, step)
    return _iterate(batch, begins, trips, step, (frame.f_code, target), frame.f_locals.get(target))


def _alike(values: np.ndarray, active: np.ndarray | None) -> bool:
    """Do the programs in the loop (all: active None) agree on `values`?"""
    decided = values if active is None else values[active]
    return decided.size == 0 or bool((decided == decided[0]).all())


def _first(values: np.ndarray, active: np.ndarray | None) -> int:
    """The value the programs in the loop agree on."""
    decided = values if active is None else values[active]
    return int(decided[0]) if decided.size else int(values[0])


def _range_args(args: tuple) -> tuple[Any, Any, Any]:
    """range()'s (start, stop, step) from its one, two or three arguments."""
    return (0, args[0], 1) if len(args) == 1 else (args[0], args[1], args[2] if len(args) == 3 else 1)


def _trips(begins: int | np.ndarray, ends: np.ndarray, step: int) -> np.ndarray:
    """Each program's iterations of range(begin, end, step)."""
    return np.maximum(0, -(-(ends - begins) // step)) if step > 0 else np.maximum(0, -(-(begins - ends) // -step))


def _int(value: Any) -> int:
    value = getattr(value, "value", value)  # a constexpr
    return operator.index(value)


def _iterate(batch, start: int | np.ndarray, trips: np.ndarray, step: int, key: tuple, before: Any) -> Iterator:
    """The predicated iterations. A start per program (an array) makes the loop variable a per-program int scalar
    tensor, as compiled (its counter is one): int32 where every value fits, as loop_counters' LoopCounter."""
    from .grid_loop import STATS

    batch.trip_counts = trips  # what a split groups the programs by, if predication gives up
    STATS.predicated_loop()
    last = start + (trips - 1) * step
    per_program = isinstance(start, np.ndarray)
    if per_program:
        dtype = np.int32 if _fits_int32(start) and _fits_int32(last) else np.int64
    for k in range(int(trips.max(initial=0))):
        batch.push_predicate(trips > k)
        try:
            yield _program_scalars(start + k * step, dtype) if per_program else start + k * step
        finally:
            batch.pop_predicate()
    # The loop variable's value after the loop differs between programs (the kernel never reads it: the rewrite
    # checked; tdebug's store records name programs by their integer locals): each program's own last value,
    # its value from before the loop where it made no iteration (none: not bound).
    held = type(before) is int or type(before) is LoopCounter
    earlier = _per_program(before, batch)
    if earlier is not None:
        held = True
    else:
        earlier = before if held else 0
    batch.loop_scalars[key] = program_axis.LoopValues(np.where(trips > 0, last, earlier), bound=(trips > 0) | held)


def _fits_int32(values: np.ndarray) -> bool:
    return bool(values.size == 0 or (values.min() >= -(2**31) and values.max() < 2**31))


def _program_scalars(values: np.ndarray, dtype) -> Any:
    """An int scalar tensor holding one value per program of the batch (as tl.program_id's)."""
    import triton.language as tl
    from triton.runtime.interpreter import TensorHandle

    ty = tl.int32 if dtype == np.int32 else tl.int64
    return tl.tensor(mark(TensorHandle(values.astype(dtype).reshape(-1, 1), ty)), ty)


class _Iteration:
    """The values an iteration began with, for the programs out of the loop; and, when it runs compacted, the
    batch of the programs in the loop it runs on and their rows in `batch`."""

    __slots__ = ("batch", "active", "before", "part", "rows")

    def __init__(self, batch, active: np.ndarray, before: dict) -> None:
        self.batch, self.active, self.before = batch, active, before
        self.part: program_axis.Batch | None = None
        self.rows: np.ndarray | None = None


def begin(frame_locals: dict) -> _Iteration | None:
    """The iteration's state: the kernel's locals as the iteration begins. Not the rewrite's own names: the last
    iteration's state among them would hold its `before`, and so on back to the first iteration (every value of
    every iteration kept alive to the loop's end: 4-5 MB more per iteration of a causal attention's batch)."""
    batch = current_batch()
    if batch is None:
        return None
    lanes = batch.pending_lanes
    if lanes is not None:  # a chunk of iterations as lanes (loop_lanes): its state, with the locals it began with
        batch.pending_lanes = None
        lanes.before = {name: value for name, value in frame_locals.items() if not name.startswith("__tdebug")}
        return lanes
    if batch.active is None:
        return None
    before = {name: value for name, value in frame_locals.items() if not name.startswith("__tdebug")}
    return _Iteration(batch, batch.active, before)


def merging(state: _Iteration | None) -> bool:
    return state is not None


COMPACT_AT = 0.75  # an iteration with at most this share of the batch's programs in the loop runs compacted


def compacting(state: _Iteration | None) -> bool:
    if state is not None and type(state) is not _Iteration:
        return True  # lanes (loop_lanes): the values the body reads widened to them
    return state is not None and int(np.count_nonzero(state.active)) <= COMPACT_AT * state.batch.size


def compact(state: _Iteration, frame_locals: dict, reads: tuple[str, ...], scalars: tuple[str, ...] = ()) -> dict:
    """Run this iteration on the programs in the loop only: a batch of them becomes the current one and every
    per-program value the body reads is cut to their rows (returned by name, for the rewrite to rebind); end()
    puts the batch back. Nothing ({}) when a value read may hold per-program data this cannot cut (a block
    pointer, a tuple, an object): the iteration runs predicated on the whole batch. (Lanes: loop_lanes widens.)"""
    if type(state) is not _Iteration:
        return state.widen(frame_locals, reads, scalars)
    batch = state.batch
    cut = {}
    for name in reads:
        if name in frame_locals:
            value = frame_locals[name]
            kind = _cuttable(value)
            if kind is None:
                return {}
            # A block of another size is an earlier compacted iteration's value of a name used in the body only
            # (end() leaves those as they are): dead here, the body binds it before it reads it.
            if kind and np.shape(value.handle.data)[0] == batch.size:
                cut[name] = value
    for name in scalars:  # the other locals' per-program integer scalars (what store records read)
        value = frame_locals.get(name)
        if _cuttable(value) and not value.type.is_block() and value.dtype.is_int() \
                and np.shape(value.handle.data)[0] == batch.size:
            cut[name] = value
    rows = np.flatnonzero(state.active)
    part = batch.part(rows)
    state.part, state.rows = part, rows
    current_launch().batch = part
    from .grid_loop import STATS

    STATS.predicated_loop(compacted=True)
    return {name: _cut(value, rows) for name, value in cut.items()}


def _cuttable(value: Any) -> bool | None:
    """True: a per-program tensor compact() cuts; False: nothing per program in it; None: it cannot tell."""
    import triton.language as tl
    from triton.runtime.interpreter import TensorHandle

    if value is None or isinstance(value, (int, float, bool, str, np.generic, tl.constexpr, tl.dtype)):
        return False
    if isinstance(value, tl.tensor):
        handle = value.handle
        if type(handle) is not TensorHandle:
            return None
        if not getattr(handle, MARK, False):
            return False
        for extra in _extras(handle).values():  # what the checks keep beside a value
            if isinstance(extra, tuple):  # a product's factors (fma)
                if not all(type(x) is TensorHandle for x in extra):
                    return None
            elif not isinstance(extra, (int, str)):  # a storage's address (provenance): the same in every program
                return None
        return True
    return None


def _cut(value, rows: np.ndarray):
    out = copy.copy(value)
    out.handle = _rows_of(value.handle, rows)
    return out


def _widen(value, rows: np.ndarray, size: int):
    """A value of a compacted iteration (of `size` programs) as one of the whole batch (`rows`: each program's row
    in it; programs out of the loop take any row: their values are stand-ins end() replaces)."""
    import triton.language as tl

    if not isinstance(value, tl.tensor) or not getattr(value.handle, MARK, False):
        return value
    if np.shape(value.handle.data)[0] != size:  # not the iteration's (cannot be: every value read was cut)
        _give_up(current_batch(), "a value of another batch's programs")
    out = copy.copy(value)
    out.handle = _rows_of(value.handle, rows)
    return out


def _rows_of(handle, rows: np.ndarray):
    """A batched handle's rows `rows` (program_axis.slice_program), a product's factors' too."""
    out = program_axis.slice_program(handle, rows)
    for key, extra in _extras(handle).items():
        if isinstance(extra, tuple):  # a product's factors, per program
            setattr(out, key, tuple(_rows_of(x, rows) if getattr(x, MARK, False) else x for x in extra))
    return out


def _close(state: _Iteration) -> np.ndarray:
    """End a compacted iteration: the whole batch current again, with what its part did (effects, atomics, the
    values of its loops' variables). Returns each program's row in the part (programs out of the loop: any)."""
    batch, part, rows = state.batch, state.part, state.rows
    current_launch().batch = batch
    batch.effects, batch.atomics = part.effects, part.atomics
    for key, v in part.loop_scalars.items():
        batch.loop_scalars[key] = v.placed(rows, batch.size, batch.loop_scalars.get(key))
    where = np.zeros(batch.size, dtype=np.intp)
    where[rows] = np.arange(rows.size)
    return where


def end(state: _Iteration, frame_locals: dict, names: tuple[str, ...], own: tuple[str, ...] = (),
        reads: tuple[str, ...] = (), scalars: tuple[str, ...] = ()) -> dict:
    """Each bound name's value after the iteration for the programs in the loop, before it for the others (`own`:
    the names used in the body only, whose blocks need no merge); after a compacted iteration, the values it made
    widened to the whole batch first, and the names it only read as they were before it."""
    import triton.language as tl

    if type(state) is not _Iteration:
        return state.narrow(frame_locals, names, own, reads, scalars)
    out = {}
    part = state.part
    where = _close(state) if part is not None else None
    for name in names:
        if name in own:
            value = frame_locals.get(name)
            if isinstance(value, tl.tensor) and value.type.is_block():
                continue
        if name not in frame_locals:  # never bound (assigned under a constexpr-false `if` only)
            if name in state.before:
                _give_up(state.batch, f"`{name}` was unbound by the iteration")
            continue
        value = frame_locals[name]
        if where is not None and value is not state.before.get(name):  # (not bound again: as it was)
            if name in state.before:
                merged = merge_rows(state.batch.size, state.rows, state.before[name], value)
                if merged is not None:
                    out[name] = merged
                    continue
            value = _widen(value, where, part.size)
        if name not in state.before:  # bound in the loop only: a loop-local value (the compiler refuses a use
            out[name] = value  # after the loop of a name bound only inside it)
            continue
        out[name] = _merge(state, state.before[name], value, name)
    if part is not None:
        out.update({name: state.before[name] for name in reads + scalars
                    if name not in names and name in state.before})
    _note_bound(state, names, out, sys._getframe(1).f_code)
    return out


def _note_bound(state: _Iteration, names: tuple[str, ...], out: dict, code) -> None:
    """Which programs have bound each integer scalar the loop binds first (tdebug's store records name a program
    by its integer locals: a program that made no iteration has no such local, as on the serial engine)."""
    batch = state.batch
    for name in names:
        value = out.get(name)
        if not _program_int(value, batch.size):
            continue
        key = (code, name)
        if name not in state.before:
            bound = state.active.copy()
        else:
            held = batch.loop_bound.get(key)
            if held is None or held[0] is not state.before[name]:
                continue  # bound before the loop: bound in every program
            bound = held[1] | state.active
        batch.loop_bound[key] = (value, bound)


def _program_int(value: Any, size: int) -> bool:
    """A per-program integer scalar of a batch of `size` programs (what store records read)."""
    import triton.language as tl

    return isinstance(value, tl.tensor) and getattr(value.handle, MARK, False) and not value.type.is_block() \
        and value.dtype.is_int() and np.shape(value.handle.data)[:1] == (size,)


def merge_rows(size: int, rows: np.ndarray, old: Any, new: Any) -> Any:
    """_merge of a compacted iteration's value of a plain tensor (no side arrays, no per-program state beside
    it): a copy of the old value (of `size` programs) with the part's rows put in (None: the general way,
    widened then merged)."""
    import triton.language as tl
    from triton.runtime.interpreter import TensorHandle

    if not (isinstance(new, tl.tensor) and isinstance(old, tl.tensor)) or type(new) is not type(old) \
            or new.type != old.type:
        return None
    a, b = old.handle, new.handle
    if type(a) is not TensorHandle or type(b) is not TensorHandle or not getattr(a, MARK, False) \
            or not getattr(b, MARK, False) or a.dtype != b.dtype:
        return None
    old_data, new_data = np.asarray(a.data), np.asarray(b.data)
    if old_data.dtype != new_data.dtype or old_data.shape[0] != size \
            or new_data.shape != (rows.size,) + old_data.shape[1:] or _side_arrays(a) or _side_arrays(b):
        return None
    extra = _extras(a)
    if extra.keys() != _extras(b).keys() or any(isinstance(v, tuple) or v != getattr(b, k) for k, v in extra.items()):
        return None
    data = np.array(old_data, order="C")
    data[rows] = new_data
    handle = copy.copy(b)
    handle.data = data
    merged = copy.copy(new)
    merged.handle = handle
    return merged


def _give_up(batch, why: str) -> None:
    raise Divergent((batch.root or batch).trip_counts.copy())


def _merge(state: _Iteration, old: Any, new: Any, name: str) -> Any:
    if new is old:
        return new
    import triton.language as tl
    from triton.runtime.interpreter import TensorHandle

    # A loop variable per program on one side, one int on the other (a loop whose start differs between the
    # programs in one iteration and agrees in another): the int as a per-program value of the same type.
    if _kind(new) is int and _is_program_scalar(old, state.batch.size):
        new = _as_program_scalars(new, old, state.batch.size)
    elif _kind(old) is int and _is_program_scalar(new, state.batch.size):
        old = _as_program_scalars(old, new, state.batch.size)

    if isinstance(new, tl.tensor) and isinstance(old, tl.tensor) and type(new) is type(old) \
            and type(new.handle) is TensorHandle and type(old.handle) is TensorHandle and new.type == old.type:
        handle = _merge_handles(state, old.handle, new.handle)
        if handle is not None:
            merged = copy.copy(new)
            merged.handle = handle
            return merged
    elif _kind(new) is not None and _kind(new) == _kind(old) and (new == old):
        return new
    _give_up(state.batch, f"`{name}` cannot be carried per program")
    return new


def _is_program_scalar(value: Any, size: int) -> bool:
    """_program_int held as a (size, 1) column with nothing beside its values (what _as_program_scalars makes)."""
    return _program_int(value, size) and np.shape(value.handle.data) == (size, 1) and not _extras(value.handle)


def _as_program_scalars(value: int, like: Any, size: int) -> Any:
    """The int `value` for every program, as the per-program scalar `like` (its type)."""
    dtype = np.asarray(like.handle.data).dtype
    if not np.iinfo(dtype).min <= int(value) <= np.iinfo(dtype).max:
        return value  # another type: not carried (the merge gives up)
    return _program_scalars(np.full(size, int(value), dtype=np.int64), dtype)


def _kind(value: Any) -> type | None:
    """A Python scalar's kind for merging (a loop counter is an int), None for anything else."""
    kind = type(value)
    if kind is LoopCounter:
        return int
    return kind if kind in (int, float, bool) else None


def _extras(handle) -> dict:
    return {k: v for k, v in vars(handle).items()
            if k not in program_axis.HANDLE_KEYS and not isinstance(v, np.ndarray)}


def _merge_handles(state: _Iteration, old, new):
    if old.dtype != new.dtype or np.asarray(old.data).dtype != np.asarray(new.data).dtype:
        return None
    old_extra, new_extra = _extras(old), _extras(new)
    if old_extra.keys() != new_extra.keys():
        return None  # state beside the values on one side only (a product's factors, an overflow mark, ...)
    extra = {}
    for key in old_extra:
        a, b = old_extra[key], new_extra[key]
        if a is b or (not isinstance(a, tuple) and a == b):
            extra[key] = b
        elif isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b) and all(
                type(x) is type(y) and hasattr(x, "data") for x, y in zip(a, b)):
            merged = [_merge_handles(state, x, y) for x, y in zip(a, b)]  # a product's factors, per program
            if any(m is None for m in merged):
                return None
            extra[key] = tuple(merged)
        else:
            return None
    old_side, new_side = dict(_side_arrays(old)), dict(_side_arrays(new))
    for one, other, handle in ((old_side, new_side, old), (new_side, old_side, new)):
        for key in other.keys() - one.keys():  # on one side only: the other's lanes hold its "nothing" value
            if key not in SIDE_ARRAY_NONE:
                return None
            one[key] = np.full(np.shape(handle.data), SIDE_ARRAY_NONE[key], dtype=other[key].dtype)
    size = state.batch.size
    shape = _batched_shape_of(old.data, new.data, old, new, size)
    if shape is None:
        return None
    keep = state.active.reshape((size,) + (1,) * (len(shape) - 1))
    out = copy.copy(new)
    out.data = np.where(keep, _as_batched(new.data, new, shape), _as_batched(old.data, old, shape))
    for key, value in extra.items():
        setattr(out, key, value)
    for key in new_side:
        side_shape = _batched_shape_of(old_side[key], new_side[key], old, new, size)
        if side_shape is None:
            return None
        keep_side = state.active.reshape((size,) + (1,) * (len(side_shape) - 1))
        setattr(out, key, np.where(keep_side, _as_batched(new_side[key], new, side_shape),
                                   _as_batched(old_side[key], old, side_shape)))
    return mark(out)


def _batched_shape_of(old_data, new_data, old, new, size: int) -> tuple | None:
    """The (program,) + per-program shape both values take as batched arrays (None: they do not line up)."""
    shapes = []
    for data, handle in ((old_data, old), (new_data, new)):
        data = np.asarray(data)
        shapes.append(data.shape[1:] if getattr(handle, MARK, False) else data.shape)
    if shapes[0] != shapes[1]:
        return None
    return (size,) + tuple(shapes[0])


def _as_batched(data, handle, shape: tuple) -> np.ndarray:
    data = np.asarray(data)
    return data if getattr(handle, MARK, False) else np.broadcast_to(data, shape)


# -- installing -------------------------------------------------------------------------------------------------
def install() -> None:
    """Every jit function the interpreter rewrites gets its loops rewritten (on the serial engine, and on one
    program, loop() is the kernel's own range and begin() nothing: one rewritten function serves both engines,
    as the interpreter keeps one per jit function). Not while a breakpoint is set: pdb then steps through the
    kernel's own lines and nothing else."""
    from .grid_loop import FORCE_SERIAL

    rewrite_jit_functions("predicated_loops", NAME, sys.modules[__name__], rewrite, unless=lambda: bool(FORCE_SERIAL))


