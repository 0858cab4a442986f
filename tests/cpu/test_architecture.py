"""ARCHITECTURE.md stays true to the code: every path and name it puts in backticks exists, its picture of the
floors is test_layout's, and its picture of the wrappers follows versions.LAYERS."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from test_layout import LAYERS as FLOORS

from tdebug.interpreter.versions import LAYERS as WRAPPERS

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "ARCHITECTURE.md").read_text()
CODE = sorted((ROOT / "tdebug").rglob("*.py"))
SOURCES = CODE + [ROOT / "tests" / "cpu" / "test_layout.py"]
# Words in backticks that are not names of the code: options, values, commands, shapes.
OUTSIDE = {"click", "tl", "triton", "torch", "np", "numpy"}  # modules not tdebug's
PLAIN = {"python", "tdebug", "pytest", "sanitize", "run", "check", "bench", "viz", "auto", "cpu", "cuda", "interpret"}


@cache
def _text(path: Path) -> str:
    return path.read_text()


def _tokens() -> list[str]:
    """The words in backticks outside code blocks: paths, modules, names of the code."""
    prose = re.sub(r"```.*?```", "", DOC, flags=re.S)
    found = []
    for quoted in re.findall(r"`([^`\n]+)`", prose):
        if quoted.startswith(("-", "python ", "tdebug ", "pytest ")) or " " in quoted.split("(")[0].strip():
            quoted = quoted.split("(")[0] if "(" in quoted else ""
        found += re.findall(r"[A-Za-z_][\w./]*\w", quoted)
    return sorted(set(found) - PLAIN)


def _defines(path: Path, name: str) -> bool:
    return bool(re.search(rf"^\s*(def|class)\s+{re.escape(name)}\b|^\s*{re.escape(name)}\s*[:=]|\bself\.{name}\b",
                          _text(path), re.M))


def _modules(dotted: str) -> list[Path]:
    """The files a dotted module name (`runtime.device`, `versions`, `tdebug.child`) may be."""
    parts = dotted.removeprefix("tdebug.").split(".")
    return [p for p in SOURCES if p.with_suffix("").parts[-len(parts):] == tuple(parts)]


def _problem(token: str) -> str | None:
    if "/" in token or token.endswith(".py"):
        path = token.rstrip("/")
        if (ROOT / path).exists() or (ROOT / "tdebug" / path).exists():
            return None
        if "/" not in path and any(p.name == path for p in SOURCES):
            return None
        return f"no such path: {token}"
    if "." in token:
        head, _, name = token.rpartition(".")
        if head[0].isupper():  # Class.member: a class of tdebug's that has it, or Triton's named beside it
            classes = [p for p in CODE if _defines(p, head)]
            if any(_defines(p, name) for p in classes) or (not classes and any(
                    re.search(rf"\b{re.escape(head)}\b", _text(p)) and name in _text(p) for p in CODE)):
                return None
            return f"no {token} in tdebug/"
        if head.split(".")[0] in OUTSIDE or _modules(token):
            return None
        modules = _modules(head)
        if any(_defines(m, name) for m in modules):
            return None
        if modules:
            return f"{' or '.join(str(m.relative_to(ROOT)) for m in modules)} defines no {name}"
        if any(_defines(p, name) for p in CODE):  # an attribute of a value (`result.cases`)
            return None
        return f"no module for {token}"
    if (token[0].isupper() or "_" in token) and not token.isupper():
        if any(re.search(rf"\b{re.escape(token)}\b", _text(p)) for p in CODE):
            return None
        return f"{token} is named nowhere in tdebug/"
    return None


def test_every_path_and_name_in_backticks_exists():
    tokens = _tokens()
    assert len(tokens) > 100, tokens  # the check reads the document, not an empty list
    problems = [p for p in map(_problem, tokens) if p]
    assert not problems, problems


def test_a_name_that_is_not_in_the_code_is_caught():
    assert _problem("runtime.device.resolve") is None
    assert _problem("runtime.device.decide_once") == "tdebug/runtime/device.py defines no decide_once"
    assert _problem("interpreter/engine.py") == "no such path: interpreter/engine.py"
    assert _problem("LaunchObject") == "LaunchObject is named nowhere in tdebug/"
    assert _problem("Job.but") is None
    assert _problem("Job.launch") == "no Job.launch in tdebug/"


def test_the_picture_of_floors_is_test_layouts():
    picture = DOC.split("## The layers", 1)[1].split("```", 2)[1]
    drawn = {}
    for line in picture.splitlines():
        m = re.match(r"\s*floor (\d+)\s+(.*)", line)
        if m:
            names = re.findall(r"(\w+)(?:/|\.py)", m.group(2).split("  " * 4)[0])
            drawn.update({name: int(m.group(1)) for name in names})
    assert drawn == FLOORS, (drawn, FLOORS)


def _launch_wrappers() -> set[str]:
    """The layers that patch GridExecutor.__call__, read from the code (`patch = patcher("X")` or inline)."""
    found = set()
    for path in CODE:
        layer = None
        for line in _text(path).splitlines():
            if m := re.search(r'patch = patcher\("(\w+)"\)', line):
                layer = m.group(1)
            if re.search(r'GridExecutor, "__call__"', line):
                inline = re.search(r'patcher\("(\w+)"\)\(', line)
                found.add(inline.group(1) if inline else layer)
    return found


def test_the_picture_of_wrappers_follows_versions_layers():
    lines = DOC.split("## The layers", 1)[1].split("```", 4)[3].strip("\n").splitlines()
    split = lines[0].index("the builder's memory ops")
    launch = [w for line in lines[1:] for w in re.findall(r"\w+", line[:split]) if w in WRAPPERS]
    memory = [m.group(1) for line in lines[1:] if (m := re.match(r"\s*(\w+)\s{2,}", line[split:]))]
    listeners = [w.strip().split()[0] for w in lines[-1][split:].split(",")]
    inner_first = sorted(WRAPPERS, key=WRAPPERS.index)
    # grid_loop, the one wrapper of a launch, then its around_launch listeners outermost first (test_versions.py
    # reads the same list from the live registry)
    assert {"grid_loop"} == _launch_wrappers()
    assert launch == ["grid_loop", "serialise", "launch_clock", "follow", "repro", "sanitizer"], launch
    assert launch[1:] == [w for w in reversed(inner_first) if w in launch[1:]], launch
    assert memory == [w for w in inner_first if w in memory] and len(memory) == 3, memory
    assert listeners == [w for w in reversed(inner_first) if w in listeners] and len(listeners) == 6, listeners
