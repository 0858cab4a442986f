"""`and`, `or`, `not`, comparison chains and `if` on tensors inside interpreted kernels mean what Triton's code
generator makes of them, not what Python's operators do.

Compiled Triton (the code generator's visit_BoolOp / visit_UnaryOp) evaluates `a and b or c` operand by operand,
short-circuits only on compile-time (non-tensor) values, and combines the tensor operands element-wise with
logical_and / logical_or; `not t` is t.__not__(). Triton's interpreter runs the kernel as Python, where
`(rows < M) and (cols < N)` is simply the right-hand mask. Here each jit function's AST, after the interpreter's
own rewrite (FunctionRewriter._transform_ast), has those nodes replaced by calls into this module. Constructs the
compiler rejects are rejected at the line that holds them, as the compiler would: a comparison chain before
Triton 3.9 ("simultaneous multiple comparison is not supported"), `if` on a tensor of more than one element.
"""

from __future__ import annotations

import ast
import warnings
from collections.abc import Callable
from typing import Any

from ..unsupported import NotRunnable
from ..versions import TRITON, rewrite_jit_functions

NAME = "__tdebug_boolops__"  # the name the rewritten functions reach this module by (set in their globals)
CHAINS_COMPILE = TRITON >= (3, 9)  # the code generator (and interpreter) take `a < b < c` from 3.9 on


class CompilerRejects(NotRunnable):
    """A construct Triton's compiler refuses, reported at the kernel line that holds it."""


def _is_tensor(value: Any) -> bool:
    import triton.language as tl

    return isinstance(value, tl.tensor)


def _warn_block(line_text: str) -> None:
    warnings.warn("Logical operators 'and' and 'or' are deprecated for non-scalar tensors; please use '&' or '|' "
                  f"instead: {line_text}", UserWarning, stacklevel=3)


def bool_op(method: str, source: str, *operands: Callable[[], Any]) -> Any:
    """`a and b ...` (method "logical_and") or `a or b ...` ("logical_or") as the code generator computes it:
    operands evaluated in order, a non-tensor one short-circuits when it decides the result and is dropped
    otherwise, the tensor ones combined right to left."""
    tensors = []
    value = None
    for operand in operands:
        value = operand()
        if not _is_tensor(value):
            decided = bool(value)
            if (method == "logical_and" and not decided) or (method == "logical_or" and decided):
                return value
            continue
        if value.type.is_block():
            _warn_block(source)
        tensors.append(value)
    if not tensors:
        return value
    while len(tensors) >= 2:
        rhs = tensors.pop()
        lhs = tensors.pop()
        tensors.append(getattr(lhs, method)(rhs))
    return tensors[0]


def not_op(operand: Any) -> Any:
    """`not x`: a tensor's element-wise logical not, Python's `not` for anything else."""
    if _is_tensor(operand):
        return operand.__not__()
    method = getattr(operand, "__not__", None)
    return method() if method is not None else (not operand)


def condition(value: Any, source: str) -> Any:
    """The test of an `if` (or a conditional expression): a tensor of more than one element is refused, as
    the compiler refuses it; anything else goes on to Python's truth test unchanged."""
    if _is_tensor(value) and value.type.is_block() and value.type.numel != 1:
        raise CompilerRejects(f"Triton's compiler rejects `if {source}`: Boolean value of Tensor with more than "
                              "one value is ambiguous")
    return value


def reject(message: str) -> None:
    raise CompilerRejects(message)


def _helper(name: str, args: list[ast.expr], node: ast.AST) -> ast.Call:
    """A call of this module's `name`, at node's place: every node made here located (the tree needs no
    fix_missing_locations walk)."""
    func = ast.Attribute(value=ast.Name(id=NAME, ctx=ast.Load()), attr=name, ctx=ast.Load())
    call = ast.Call(func=func, args=args, keywords=[])
    for made in (call, func, func.value, *(a for a in args if not hasattr(a, "lineno"))):
        ast.copy_location(made, node)
    return call


def _has_named_expr(node: ast.AST) -> bool:
    return any(isinstance(n, ast.NamedExpr) for n in ast.walk(node))


class BoolOpRewriter(ast.NodeTransformer):
    """Replaces BoolOp, `not`, comparison chains (before 3.9) and `if` tests by calls into this module."""

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.AST:
        self.generic_visit(node)
        if _has_named_expr(node):  # an operand that binds a name cannot move into a lambda; keep Python's
            return node
        method = "logical_and" if isinstance(node.op, ast.And) else "logical_or"
        lambdas = [ast.copy_location(ast.Lambda(args=_no_args(), body=value), value) for value in node.values]
        return _helper("bool_op", [ast.Constant(method), ast.Constant(_source(node))] + lambdas, node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        self.generic_visit(node)
        if not isinstance(node.op, ast.Not):
            return node
        return _helper("not_op", [node.operand], node)

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        self.generic_visit(node)
        if len(node.ops) == 1 or CHAINS_COMPILE:
            return node
        message = (f"Triton's compiler rejects `{_source(node)}`: simultaneous multiple comparison is not supported "
                   "(write (a < b) & (b < c))")
        return _helper("reject", [ast.Constant(message)], node)

    def visit_If(self, node: ast.If) -> ast.AST:
        self.generic_visit(node)
        node.test = _helper("condition", [node.test, ast.Constant(_source(node.test))], node.test)
        return node

    def visit_IfExp(self, node: ast.IfExp) -> ast.AST:
        self.generic_visit(node)
        node.test = _helper("condition", [node.test, ast.Constant(_source(node.test))], node.test)
        return node


def _no_args() -> ast.arguments:
    return ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])


def _source(node: ast.AST) -> str:
    text = ast.unparse(node)
    return text if len(text) <= 80 else text[:77] + "..."


def rewrite(tree: ast.AST) -> ast.AST:
    """The tree with its boolean operators in the compiler's meaning (locations kept for line numbers)."""
    return BoolOpRewriter().visit(tree)


def install() -> None:
    """Every jit function the interpreter rewrites gets the compiler's boolean semantics too."""
    import sys

    rewrite_jit_functions("boolops", NAME, sys.modules[__name__], rewrite)
