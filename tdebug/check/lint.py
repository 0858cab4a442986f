"""Autotune lint, before anything launches: the three pitfalls that make an autotuned kernel wrong or slow.

1. The launch grid is not a function of META: a grid computed for one BLOCK size leaves most of the
   output unwritten when the tuner picks a bigger block.
2. early_config_prune does not take (configs, named_args, **kwargs): Triton calls it that way (3.6 to 3.9).
3. A single config: no autotuning at all.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from ..catalogue.spec import Target
from ..interpreter.versions import triton_label
from ..report import Finding


def _autotuners(module) -> dict[str, object]:
    found = {}
    for name, value in vars(module).items():
        obj, depth = value, 0
        while obj is not None and depth < 4:
            if obj.__class__.__name__ == "Autotuner":
                found[name] = obj
                break
            obj, depth = getattr(obj, "fn", None), depth + 1
    return found


def _prune_signature_ok(fn) -> bool:
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return True
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    has_varargs = any(p.kind == p.VAR_POSITIONAL for p in params)
    has_kwargs = any(p.kind == p.VAR_KEYWORD for p in params)
    return (len(positional) >= 2 or has_varargs) and has_kwargs


def _uses_name(node: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node))


def _grid_problem(grid: ast.AST, assignments: dict[str, ast.AST], funcs: dict[str, ast.FunctionDef]) -> str:
    """Why this grid expression is not a function of META, or '' when it is (or cannot be told)."""
    if isinstance(grid, ast.Name):
        if grid.id in funcs:
            fn = funcs[grid.id]
            if not fn.args.args:
                return f"grid function {grid.id}() takes no META argument"
            meta = fn.args.args[0].arg
            return "" if _uses_name(fn, meta) else f"grid function {grid.id}({meta}) never reads {meta}"
        if grid.id in assignments:
            return _grid_problem(assignments[grid.id], assignments, funcs)
        return ""
    if isinstance(grid, ast.Lambda):
        if not grid.args.args:
            return "grid lambda takes no META argument"
        meta = grid.args.args[0].arg
        return "" if _uses_name(grid.body, meta) else f"grid lambda never reads its argument {meta}"
    if isinstance(grid, (ast.Tuple, ast.List, ast.Constant)):
        return "grid is a fixed tuple, not a function of META"
    return ""


def _grid_findings(path: Path, names: set[str]) -> list[Finding]:
    tree = ast.parse(path.read_text(), filename=str(path))
    funcs = {n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    findings = []
    for scope in [tree] + list(funcs.values()):
        assignments = {}
        for node in ast.walk(scope):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                assignments[node.targets[0].id] = node.value
        for node in ast.walk(scope):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript)):
                continue
            sub = node.func
            if not (isinstance(sub.value, ast.Name) and sub.value.id in names):
                continue
            problem = _grid_problem(sub.slice, assignments, funcs)
            if problem:
                findings.append(Finding(
                    check="lint", kernel=sub.value.id, file=str(path), line=node.lineno,
                    message=f"autotuned kernel launched with a grid that ignores the chosen config: {problem} "
                            "(use grid = lambda META: (triton.cdiv(M, META['BLOCK_M']), ...))"))
    # The same call can be reached from both the module and the function scope: keep one.
    unique = {(f.line, f.message): f for f in findings}
    return list(unique.values())


def lint_kernel(target: Target) -> list[Finding]:
    tuners = _autotuners(target.module)
    if not tuners:
        return []
    findings = _grid_findings(target.path.resolve(), set(tuners))
    for name, tuner in tuners.items():
        fn = getattr(tuner, "base_fn", None)
        file = inspect.getsourcefile(fn) if fn else str(target.path)
        line = fn.__code__.co_firstlineno if fn else 0
        prune = getattr(tuner, "early_config_prune", None)
        if prune is not None and not _prune_signature_ok(prune):
            findings.append(Finding(
                check="lint", kernel=name, file=str(inspect.getsourcefile(prune) or file),
                line=prune.__code__.co_firstlineno if hasattr(prune, "__code__") else line,
                message=f"early_config_prune {prune.__name__}{inspect.signature(prune)} must accept "
                        f"(configs, named_args, **kwargs): {triton_label()} calls it that way"))
        if len(tuner.configs) == 1:
            findings.append(Finding(
                check="lint", kernel=name, file=file, line=line,
                message="@triton.autotune with a single config is no autotuning: cover block sizes "
                        "(64/128/256), BLOCK_K (32/64), num_warps (4/8) and num_stages (2-4)"))
    return findings
