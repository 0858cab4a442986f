"""ast.walk and ast.iter_child_nodes in the same order, faster: the node walks of tdebug's rewrites of a kernel's
source (predicated loops and ifs, loop counters), which a kernel's first launch pays for (ast's own walk goes
through a generator of (name, value) pairs per node: two thirds of those rewrites' time)."""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import Iterator

_AST = ast.AST


def children(node: ast.AST) -> list[ast.AST]:
    """The node's direct children, in ast.iter_child_nodes' order."""
    out: list[ast.AST] = []
    for name in node._fields:
        field = getattr(node, name, None)
        if isinstance(field, _AST):
            out.append(field)
        elif isinstance(field, list):
            out.extend(item for item in field if isinstance(item, _AST))
    return out


def walk(node: ast.AST) -> Iterator[ast.AST]:
    """Every node under `node` (itself first), breadth first, in ast.walk's order."""
    todo = deque((node,))
    pop, push = todo.popleft, todo.append
    while todo:
        node = pop()
        for name in node._fields:
            field = getattr(node, name, None)
            if isinstance(field, _AST):
                push(field)
            elif isinstance(field, list):
                for item in field:
                    if isinstance(item, _AST):
                        push(item)
        yield node
