"""Predicated `if`s for the batched engine: an `if` whose test differs between the programs of a batch runs each
branch once, for the programs that take it, instead of splitting the batch into runs of programs that agree.

Each jit function's AST (after predicated_loops' rewrite) has, first, its early returns turned into branches:
`if c: A; return` followed by B becomes `if c: A else: B` (the function ends after either, as it did), through
nested `if`s too (`if HAS_LABEL: if label == ignore: ...; return` + B: B in each branch that does not return).
Then each `if` written in the kernel (its test is boolops' condition() call), whose test is not plainly a
constexpr's and whose branches have no break, continue, return or try, becomes
    for __tdebug_branch_K in __tdebug_ifs__.branches(test, has_then, has_else):
        if __tdebug_branch_K:
            <then, predicated: predicated_loops' begin/end around it (never compacted), begun by branch_begin()>
        else:
            <else, the same>
On the serial engine, or when the batch's programs agree on the test, branches() yields the test's truth once and
the branch runs as written. When they disagree it yields the then side with the programs that take it active
(program_axis.Batch's predicate: the others make no memory access, assert or choice; predicated_loops.end() gives
them back their values from before the branch), then the else side for the others: every program runs the
statements the serial engine runs for it. Whatever cannot be carried across (predicated_loops gives up) or an
error raised while programs are inactive splits the batch by the test's truth (grid_loop), as before this existed.
"""

from __future__ import annotations

import ast
import copy
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..ast_walk import walk
from ..semantics import boolops
from ..versions import rewrite_jit_functions
from . import predicated_loops, program_axis
from .launch import current_batch
from .predicated_loops import _ESCAPES, LoopRewriter, _boolop_operands, _Place
from .program_axis import MARK

NAME = "__tdebug_ifs__"  # the name the rewritten functions reach this module by (set in their globals)
BRANCH = "__tdebug_branch_{}"
FIRST_STATE = 10_000  # the branches' state names (predicated_loops.STATE) from this number on


# -- the rewrite ------------------------------------------------------------------------------------------------
def rewrite(tree: ast.AST) -> ast.AST:
    """The tree with its kernels' early returns made branches and their `if`s predicated."""
    for function in getattr(tree, "body", []):
        if isinstance(function, ast.FunctionDef):
            function.body = _early_returns(function.body) or [ast.Pass(**_Place(function).at)]  # `return` alone
            ifs = [n for n in walk(function) if isinstance(n, ast.If) and _written(n)]
            if ifs:
                _Rewriter(function, {id(n) for n in ifs}).statements(function)
    return tree


def _written(node: ast.If) -> bool:
    """An `if` of the kernel's own (boolops' condition() around its test), not one a rewrite made."""
    test = node.test
    return isinstance(test, ast.Call) and isinstance(test.func, ast.Attribute) \
        and test.func.attr == boolops.condition.__name__ and isinstance(test.func.value, ast.Name) \
        and test.func.value.id == boolops.NAME


def _bare_return(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Return) and (stmt.value is None or (
        isinstance(stmt.value, ast.Constant) and stmt.value.value is None))


def _early_returns(body: list[ast.stmt]) -> list[ast.stmt]:
    """A statement list the function's end follows, each bare `return` in it or in its `if`s' branches (through
    `if`s only, constexpr ones too) made the end of its branch: what follows the `if` goes into its branches (a copy
    in the then branch), and a `return` drops what follows it. An `if` with a return inside a loop, or one that
    returns a value, is left as it is."""
    out: list[ast.stmt] = []
    for i, stmt in enumerate(body):
        if _bare_return(stmt):
            return out  # what follows a return never runs
        if isinstance(stmt, ast.If) and _written(stmt) and _returns_through_ifs(stmt):
            rest = body[i + 1:]
            stmt.body = _early_returns(stmt.body + copy.deepcopy(rest)) or [ast.Pass(**_Place(stmt).at)]
            stmt.orelse = _early_returns(stmt.orelse + rest)
            out.append(stmt)
            return out
        out.append(stmt)
    return out


def _returns_through_ifs(node: ast.If) -> bool:
    """Does a bare `return` end a path through the `if`'s branches (nested `if`s only), with no other return in it?"""
    found = False
    for stmt in node.body + node.orelse:
        if _bare_return(stmt):
            found = True
        elif isinstance(stmt, ast.If):
            if _returns_through_ifs(stmt):
                found = True
            elif any(isinstance(n, ast.Return) for n in walk(stmt)):
                return False
        elif any(isinstance(n, ast.Return) for n in walk(stmt)):
            return False  # a return inside a loop (or a value returned in a branch)
    return found


def _static(node: ast.If, constexprs: set[str], local: set[str]) -> bool:
    """An `if` whose test is the same in every program: no call, and every name a constexpr parameter or not a
    local of the function (a module's constant). (Its test is boolops' condition(test, source): _written.)"""
    for n in walk(node.test.args[0]):
        if isinstance(n, ast.Call):
            return False
        if isinstance(n, ast.Name) and n.id in local and n.id not in constexprs:
            return False
    return True


def _constexpr_parameters(function: ast.FunctionDef) -> set[str]:
    def constexpr(annotation: ast.expr | None) -> bool:
        if isinstance(annotation, ast.Attribute):
            return annotation.attr == "constexpr"
        if isinstance(annotation, ast.Name):
            return annotation.id == "constexpr"
        return isinstance(annotation, ast.Constant) and str(annotation.value).endswith("constexpr")

    args = function.args
    return {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs if constexpr(a.annotation)}


class _Rewriter:
    def __init__(self, function: ast.FunctionDef, ifs: set[int]) -> None:
        self.ifs = ifs
        self.loops = LoopRewriter(function)  # its predicated() wraps a branch as it wraps a loop's body
        self.loops.local = {n for n in self.loops.local if not n.startswith("__tdebug")}
        self.loops.count = FIRST_STATE  # past the loops' own state names
        self.count = 0
        self.constexprs = _constexpr_parameters(function)

    def statements(self, node: ast.AST) -> None:
        """The `if`s under node rewritten, inner ones first."""
        for field in ("body", "orelse"):
            stmts = getattr(node, field, None)
            if isinstance(stmts, list):
                for stmt in stmts:
                    self.statements(stmt)
                setattr(node, field, [self.branch(s) if id(s) in self.ifs else s for s in stmts])

    def branch(self, node: ast.If) -> ast.stmt:
        if _static(node, self.constexprs, self.loops.local):
            return node
        for stmt in node.body + node.orelse:
            operands = _boolop_operands(stmt)
            if any(isinstance(n, _ESCAPES) and id(n) not in operands for n in walk(stmt)):
                return node
        at = _Place(node)
        name = BRANCH.format(self.count)
        self.count += 1
        sides = []
        for body in (node.body, node.orelse):
            if not body or all(isinstance(s, ast.Pass) for s in body):
                sides.append(None)
                continue
            inside = {id(n) for s in body for n in walk(s)}
            begin = _helper(at, "branch_begin", [at.name(name), at.locals()])
            sides.append(self.loops.predicated(at, body, inside, begin, compacting=False))
        then, orelse = sides
        call = _helper(at, "branches", [node.test, at.constant(then is not None), at.constant(orelse is not None)])
        inner = ast.If(test=at.name(name), body=then or [ast.Pass(**at.at)], orelse=orelse or [], **at.at)
        return ast.For(target=at.name(name, store=True), iter=call, body=[inner], orelse=[], **at.at)


def _helper(at: _Place, name: str, args: list[ast.expr]) -> ast.Call:
    """`__tdebug_ifs__.name(*args)` at the `if`'s place."""
    func = ast.Attribute(value=at.name(NAME), attr=name, ctx=ast.Load(), **at.at)
    return ast.Call(func=func, args=args, keywords=[], **at.at)


# -- at run time ------------------------------------------------------------------------------------------------
class _Side:
    """A branch the batch's programs disagree on, run for the programs that take it: its truth is the branch's."""

    __slots__ = ("then",)

    def __init__(self, then: bool) -> None:
        self.then = then

    def __bool__(self) -> bool:
        return self.then


_THEN, _ELSE = _Side(True), _Side(False)


def branches(test: Any, has_then: bool, has_else: bool) -> Iterator[Any]:
    """The branches of an `if` to run: its truth once (as written) where there is no batch or its programs agree,
    else each side that has code, predicated on the programs that take it."""
    batch = current_batch()
    truth = _truth(test, batch)
    if truth is None:
        yield bool(test)
        return
    active = batch.active
    deciding = truth if active is None else truth[active]
    if deciding.all() or not deciding.any():
        yield bool(deciding[0]) if deciding.size else bool(truth[0])
        return
    from .grid_loop import STATS

    STATS.predicated_if()
    if batch.root is None:  # a split's groups, if predication gives up (a compacted part's root has its own)
        batch.trip_counts = truth.astype(np.int64)
    root = batch.root or batch
    root.branching += 1
    try:
        for side, takes in ((_THEN, truth), (_ELSE, ~truth)):
            if not (has_then if side.then else has_else):
                continue
            batch.push_predicate(takes)
            try:
                yield side
            finally:
                batch.pop_predicate()
    finally:
        root.branching -= 1


def _truth(test: Any, batch) -> np.ndarray | None:
    """Each program's truth of a per-program scalar test (None: no batch, or not a per-program value)."""
    if batch is None or batch.index is not None or batch.lanes is not None:
        return None
    handle = getattr(test, "handle", None)
    if handle is None or not getattr(handle, MARK, False):
        return None
    data = np.asarray(handle.data)
    if data.ndim == 0 or data[0].size != 1:
        return None
    program_axis.decides(handle)
    return data.reshape(data.shape[0]) != 0  # NaN is true, as bool() has it


def branch_begin(side: Any, frame_locals: dict) -> Any:
    """A branch's state: None when it runs as written (its programs agree), else predicated_loops' begin()."""
    if type(side) is not _Side:
        return None
    return predicated_loops.begin(frame_locals)


# -- installing -------------------------------------------------------------------------------------------------
def install() -> None:
    """Every jit function the interpreter rewrites gets its `if`s predicated (one rewritten function for both
    engines, as predicated_loops). Not while a breakpoint is set: pdb then steps through the kernel's own lines."""
    from .grid_loop import FORCE_SERIAL

    rewrite_jit_functions("predicated_ifs", NAME, sys.modules[__name__], rewrite, unless=lambda: bool(FORCE_SERIAL))
