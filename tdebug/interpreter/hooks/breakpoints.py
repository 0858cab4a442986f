"""Breakpoints inside a Triton kernel under the CPU interpreter, without editing the kernel's file.

The interpreter executes a kernel as a Python function compiled from the kernel's own source, with the
real file name and line numbers, so pdb's (pdb++'s) breakpoints by file:line work. A breakpoint's
condition restricts it to the requested program id. Only the kernel file carries breakpoints, so
the tracing cost elsewhere is one dictionary look-up per Python call.
"""

from __future__ import annotations

import ast
import builtins
import sys
from dataclasses import dataclass
from pathlib import Path
from types import CodeType


class BreakpointError(ValueError):
    pass


@dataclass
class KernelInfo:
    name: str
    file: str
    first_line: int  # the def line
    last_line: int
    body_lines: tuple[int, ...]  # executable lines of the body, sorted


_DECORATORS = ("jit", "autotune", "heuristics")


def _is_kernel_def(node: ast.AST) -> bool:
    if not isinstance(node, ast.FunctionDef):
        return False
    for dec in node.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        if name in _DECORATORS:
            return True
    return False


def _code_objects(code: CodeType):
    yield code
    for const in code.co_consts:
        if isinstance(const, CodeType):
            yield from _code_objects(const)


def kernels_in(path: str | Path) -> list[KernelInfo]:
    """Every @triton.jit function in a file, found without running the file (so scripts work too)."""
    file = str(Path(path).resolve())
    source = Path(file).read_text()
    tree = ast.parse(source, filename=file)
    codes = {(c.co_name, c.co_firstlineno): c for c in _code_objects(compile(source, file, "exec"))}
    found = []
    for node in ast.walk(tree):
        if not _is_kernel_def(node):
            continue
        first = node.decorator_list[0].lineno if node.decorator_list else node.lineno
        code = codes.get((node.name, first)) or codes.get((node.name, node.lineno))
        if code is None:
            continue
        body = sorted({ln for _, _, ln in code.co_lines() if ln is not None and ln > node.lineno})
        found.append(KernelInfo(node.name, file, node.lineno, node.end_lineno or node.lineno, tuple(body)))
    return sorted(found, key=lambda k: k.first_line)


def resolve(kernels: list[KernelInfo], lines: list[int]) -> list[tuple[KernelInfo, int]]:
    """Map requested lines to (kernel, executable line). An empty list means each kernel's first line."""
    if not kernels:
        raise BreakpointError("no @triton.jit kernel is defined in this file")
    if not lines:
        return [(k, k.body_lines[0]) for k in kernels if k.body_lines]
    out = []
    for line in lines:
        owner = next((k for k in kernels if k.first_line <= line <= k.last_line), None)
        if owner is None:
            spans = ", ".join(f"{k.name} {k.first_line}-{k.last_line}" for k in kernels)
            raise BreakpointError(f"--break {line} is outside every kernel (kernels: {spans})")
        after = [ln for ln in owner.body_lines if ln >= line]
        if not after:
            raise BreakpointError(f"--break {line}: no executable kernel line at or after it in {owner.name}")
        out.append((owner, after[0]))
    return out


def parse_break(text: str | int, target: str | Path) -> tuple[str, int]:
    """A --break value: LINE of the target file, or FILE:LINE (a kernel in a module the target imports)."""
    file, _, line = str(text).rpartition(":")
    if not line.isdigit():
        raise BreakpointError(f"bad --break {text!r}: expected LINE or FILE:LINE")
    path = Path(file or target)
    if not path.is_file():
        raise BreakpointError(f"--break {text}: no such file {path}")
    return str(path.resolve()), int(line)


def resolve_breaks(target: str | Path, breaks: list) -> list[tuple[KernelInfo, int]]:
    """resolve() for --break values that may name other files; none: each kernel of the target's first line."""
    by_file: dict[str, list[int]] = {}
    for text in breaks:
        file, line = parse_break(text, target)
        by_file.setdefault(file, []).append(line)
    if not by_file:
        return resolve(kernels_in(target), [])
    return [point for file, lines in by_file.items() for point in resolve(kernels_in(file), lines)]


def parse_pid(text: str | None) -> tuple[int, ...] | None:
    if text is None:
        return None
    try:
        pid = tuple(int(p) for p in text.split(","))
    except ValueError:
        raise BreakpointError(f"bad --pid {text!r}: expected integers like 1 or 1,0") from None
    if not 1 <= len(pid) <= 3 or any(p < 0 for p in pid):
        raise BreakpointError(f"bad --pid {text!r}: one to three non-negative integers")
    return pid


REACHED = {"line": 0, "program": 0}  # how often a breakpoint's line ran, and ran in the program asked for


def _pid_matches(wanted: tuple[int, ...] | None) -> bool:
    REACHED["line"] += 1
    if wanted is not None:
        from ..frames import current_pid

        pid = current_pid()
        if not all(pid[i] == w for i, w in enumerate(wanted)):
            return False
    REACHED["program"] += 1
    return True


def pid_text(pid: tuple[int, ...]) -> str:
    return "(" + ",".join(map(str, pid)) + ")"


def never_ran(pid: tuple[int, ...] | None, grids: list[tuple[int, ...]]) -> str:
    """Why the debugger never stopped, when it never could ('' when it could, or did): the program asked
    for lies outside every launch's grid."""
    if pid is None or REACHED["program"] or not grids:
        return ""
    if any(all(p < g for p, g in zip(pid, tuple(grid) + (1, 1))) for grid in grids):
        return ""
    shown = sorted({"x".join(map(str, (tuple(g) + (1, 1, 1))[:3])) for g in grids})
    return (f"program {pid_text(pid)} never ran: the grid was {', '.join(shown)}"
            " (--pid takes a program inside the launch's grid; the debugger never stopped)")


def _quiet(dbg) -> None:
    """pdb++: no colour codes into a pipe or a file, and tdebug's own frames hidden from `where` (`hf_unhide`
    shows them), as pytest's are."""
    import os

    config = getattr(dbg, "config", None)
    if config is not None and not sys.stdout.isatty() and "PDBPP_COLORS" not in os.environ:
        config.highlight = config.use_pygments = False
    hidden = getattr(dbg, "_is_hidden", None)
    if hidden is None:
        return
    package = str(Path(__file__).resolve().parents[2]) + os.sep  # tdebug/

    def _is_hidden(frame) -> bool:
        return frame.f_code.co_filename.startswith(package) or hidden(frame)

    dbg._is_hidden = _is_hidden


def start(targets: list[tuple[KernelInfo, int]], pid: tuple[int, ...] | None):
    """Arm pdb++ with the breakpoints and start tracing. Returns the debugger; call stop(dbg) after."""
    import pdb  # pdb++ when installed: it replaces the standard module

    from ..batched import grid_loop

    builtins.__tdebug_pid_matches__ = lambda: _pid_matches(pid)
    grid_loop.force_serial("a breakpoint is set (pdb stops in one program at a time)")
    dbg = pdb.Pdb()
    _quiet(dbg)
    cond = "__tdebug_pid_matches__()"  # also counts how often the line ran (never_ran)
    for kernel, line in targets:
        err = dbg.set_break(kernel.file, line, cond=cond)
        if err:
            raise BreakpointError(f"cannot set a breakpoint at {kernel.file}:{line}: {err}")
        where = f" in program {','.join(map(str, pid))}" if pid is not None else ""
        print(f"tdebug: breakpoint at {Path(kernel.file).name}:{line} ({kernel.name}){where}", file=sys.stderr)
    dbg.reset()
    # Stop only at breakpoints: stepping is anchored to this frame with "no line" (-1), as set_continue does.
    dbg._set_stopinfo(sys._getframe(), None, -1)
    sys.settrace(dbg.trace_dispatch)
    return dbg


def stop(dbg) -> None:
    sys.settrace(None)
