"""The counter of a `for i in range(...)` / `tl.range(...)` loop is a tensor in compiled Triton (the induction
variable of an scf.for): real kernels write `i.to(tl.int64)`, where the interpreter's counter is a Python int.

Each such loop of a jit function's AST (after the interpreter's rewrite, boolops' and predicated_loops') gets its
iterable wrapped: `for i in __tdebug_counters__.counted(<iterable>)`, which hands out LoopCounter values, ints
that answer the tensor attributes an int lacks (`.to`, `.dtype`, `.type`, ...) from an int32 scalar tensor of
their value (int64 past int32's range: a loop over int64 bounds). Integer arithmetic on a counter gives a counter
(`(i * BLOCK).to(tl.int64)`), with Python's values as before (no int32 wrap); tdebug's op memo and predicated
loops read a counter as the int it is. Beside a tensor (`x + i`, `tl.maximum(x, i)`, `tl.where(m, i, x)`) a
counter is that int32 (int64) tensor, not a Python int's weak constant, as compiled: `bf16 + i` computes in fp32,
`int8 + i` in int32 (as_tensors(), which op_memo applies to a builtin's arguments, and the semantic's binary-op
check here for a call op_memo does not record). `tl.static_range` loops are left alone (their counter is a
constexpr compiled).
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Iterator

import numpy as np

from ..ast_walk import walk
from ..versions import patcher, rewrite_jit_functions

patch = patcher("loop_counters")

NAME = "__tdebug_counters__"
_INT32 = (-(2**31), 2**31)


class LoopCounter(int):
    """A range loop's counter: an int that also answers as compiled Triton's scalar tensor would."""

    __slots__ = ()

    def tensor(self):
        import triton.language as tl
        from triton.runtime.interpreter import TensorHandle

        value = int(self)
        ty, dtype = (tl.int32, np.int32) if _INT32[0] <= value < _INT32[1] else (tl.int64, np.int64)
        return tl.tensor(TensorHandle(np.array([value], dtype=dtype), ty), ty)

    def __getattr__(self, name: str):
        if name.startswith("_") or name == "handle":  # tdebug's own sniffing for tensors asks for `handle`
            raise AttributeError(name)
        return getattr(self.tensor(), name)

    def __repr__(self) -> str:
        return int.__repr__(self)


def _keeps_counting(name: str):
    """int's operator `name`, its int result a LoopCounter again (`(i * BLOCK).to(tl.int64)` is valid compiled)."""
    op = getattr(int, name)

    def counted_op(self, *other):
        out = op(self, *other)
        return LoopCounter(out) if type(out) is int else out

    counted_op.__name__ = name
    return counted_op


for _name in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__floordiv__", "__rfloordiv__",
              "__mod__", "__rmod__", "__neg__", "__lshift__", "__rshift__", "__and__", "__rand__", "__or__", "__ror__"):
    setattr(LoopCounter, _name, _keeps_counting(_name))


def counted(iterable: Iterable) -> Iterator:
    """The loop's values as LoopCounters (ints: what range and the predicated loop give; a predicated loop whose
    start differs between programs gives per-program tensors, kept as they are)."""
    return (LoopCounter(v) if type(v) is int else v for v in iterable)


def _counts(call: ast.expr) -> bool:
    """A range() / tl.range() call, or predicated_loops' loop() or lane_loop() standing in for one; not
    tl.static_range."""
    if not isinstance(call, ast.Call):
        return False
    func = call.func
    if isinstance(func, ast.Name):
        return func.id == "range"
    if isinstance(func, ast.Attribute):
        if func.attr == "range":
            return True
        return func.attr in ("loop", "lane_loop") and isinstance(func.value, ast.Name) \
            and func.value.id == "__tdebug_loops__"
    return False


def rewrite(tree: ast.AST) -> ast.AST:
    for node in walk(tree):
        if isinstance(node, ast.For) and _counts(node.iter):
            at = {"lineno": node.iter.lineno, "col_offset": node.iter.col_offset,
                  "end_lineno": node.iter.end_lineno, "end_col_offset": node.iter.end_col_offset}
            func = ast.Attribute(value=ast.Name(id=NAME, ctx=ast.Load(), **at), attr="counted", ctx=ast.Load(), **at)
            node.iter = ast.Call(func=func, args=[node.iter], keywords=[], **at)
    return tree


def as_tensors(args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """A builtin's arguments with each counter as its tensor where a tensor is among them (else as they are: the
    same objects). Called on every binary op: no counter among them is answered first."""
    if not any(type(a) is LoopCounter for a in args) and not any(type(v) is LoopCounter for v in kwargs.values()):
        return args, kwargs
    import triton.language as tl

    if not any(isinstance(v, tl.tensor) for v in (*args, *kwargs.values())):
        return args, kwargs
    return (tuple(a.tensor() if type(a) is LoopCounter else a for a in args),
            {k: v.tensor() if type(v) is LoopCounter else v for k, v in kwargs.items()})


def _typed_as_tensors(original):
    """The semantic's binary-op type check with a counter beside a tensor given the counter's tensor instead."""

    def binary_op_type_checking_impl(*args, **kwargs):
        args, kwargs = as_tensors(args, kwargs)
        return original(*args, **kwargs)

    return binary_op_type_checking_impl


def install() -> None:
    """Every jit function the interpreter rewrites gets its range loops' counters as compiled Triton's."""
    from triton.language.semantic import TritonSemantic

    rewrite_jit_functions("loop_counters", NAME, sys.modules[__name__], rewrite)
    patch(TritonSemantic, "binary_op_type_checking_impl", _typed_as_tensors)
