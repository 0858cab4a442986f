"""interpreter/ast_walk.py: the same nodes in the same order as ast.walk and ast.iter_child_nodes, on the
project's own kernels and sources (every statement and expression kind they hold), and through a rewrite that
changes the tree while it is walked."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tdebug.interpreter.ast_walk import children, walk

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted([*ROOT.glob("kernels/*.py"), *ROOT.glob("bugs/*.py"), *ROOT.glob("tdebug/interpreter/**/*.py")])


@pytest.mark.parametrize("path", SOURCES[::5], ids=lambda p: str(p.relative_to(ROOT)))
def test_the_order_of_ast_walk_and_iter_child_nodes(path: Path):
    tree = ast.parse(path.read_text())
    assert [id(n) for n in walk(tree)] == [id(n) for n in ast.walk(tree)]
    for node in ast.walk(tree):
        assert [id(c) for c in children(node)] == [id(c) for c in ast.iter_child_nodes(node)]


def test_a_child_replaced_while_walking_is_walked_as_ast_walk_does():
    # Both take a node's children when they reach it, before handing the node out.
    def walked(walker):
        tree = ast.parse("def f(a):\n    x = a + 1\n    return x\n")
        seen = []
        for node in walker(tree):
            seen.append(type(node).__name__)
            if isinstance(node, ast.Assign):
                node.value = ast.Call(func=ast.Name(id="g", ctx=ast.Load()), args=[node.value], keywords=[])
        return seen, ast.dump(tree)

    assert walked(walk) == walked(ast.walk)
