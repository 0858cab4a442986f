"""The house mirrors the commands: packages named after them, layers that import downward only, no cycles."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "tdebug"

# Lower number = lower layer. A module may import its own package and any package of a lower layer.
LAYERS = {
    "report": 0,
    "catalogue": 1,
    "interpreter": 2,
    "runtime": 3,
    "check": 4, "sanitize": 4, "bench": 4, "viz": 4,
    "exercises": 5,
    "cli": 6, "child": 6, "pytest_plugin": 6,
    "__main__": 7,
}
COMMAND_PACKAGES = {"cli", "check", "sanitize", "bench", "viz", "exercises"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module) for every tdebug import in the file, lazy ones inside functions included."""
    name = _module_name(path)
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("tdebug"):
                continue
            for alias in node.names:  # `from . import x` imports the module tdebug.<pkg>.x
                sub = f"{target}.{alias.name}"
                found.append((node.lineno, sub if _exists(sub) else target))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith("tdebug")]
    return found


def _exists(module: str) -> bool:
    path = PACKAGE.parent.joinpath(*module.split("."))
    return path.is_dir() or path.with_suffix(".py").exists()


def _layer(module: str) -> tuple[str, int]:
    parts = module.split(".")
    top = parts[1] if len(parts) > 1 else ""
    if top not in LAYERS:
        raise AssertionError(f"{module}: tdebug/{top} has no layer in test_layout.LAYERS")
    return top, LAYERS[top]


MODULES = sorted(p for p in PACKAGE.rglob("*.py"))


def test_few_loose_modules_and_packages_named_after_commands():
    loose = {p.name for p in PACKAGE.glob("*.py")} - {"__init__.py", "__main__.py"}
    assert len(loose) <= 4, loose
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    assert COMMAND_PACKAGES <= packages


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_module_says_what_lives_there_and_imports_downward(path: Path):
    tree = ast.parse(path.read_text())
    assert ast.get_docstring(tree), f"{path} opens with no docstring"
    if path == PACKAGE / "__init__.py":
        return  # the public names: re-exported from the catalogue
    source, rank = _layer(_module_name(path))
    for line, target in _imports(path):
        if target == "tdebug":
            continue
        top, target_rank = _layer(target)
        assert top == source or target_rank < rank, (
            f"{path.relative_to(PACKAGE.parent)}:{line} imports {target}: layer {top} ({target_rank}) is not "
            f"below {source} ({rank})")


def test_no_import_cycle_at_module_level():
    """Module-level imports between tdebug modules form no cycle (lazy imports inside functions may)."""
    graph: dict[str, set[str]] = {}
    for path in MODULES:
        name = _module_name(path)
        tree = ast.parse(path.read_text())
        top_level = {n.lineno for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))}
        graph[name] = {t for line, t in _imports(path) if line in top_level and t != name}
    state: dict[str, int] = {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for nxt in graph.get(node, ()):
            if state.get(nxt) == 1:
                raise AssertionError("import cycle: " + " -> ".join(stack[stack.index(nxt):] + [nxt]))
            if nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = 2

    for module in graph:
        if module not in state:
            visit(module, [module])
