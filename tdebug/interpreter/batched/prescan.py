"""Before a launch: does the kernel, or a @jit function it calls, use something only the serial engine runs?

Read from the code objects' names (no source needed): printing (device_print; static_print and print run once
per program under the interpreter), breakpoints, block pointers and tensor descriptors, inline asm, volatile
loads (a flag one program publishes and later ones spin on: decoupled look-back; read from the keyword names a
call passes, as the pseudo-name `volatile=`). The batched engine would meet most of these at run time too
(program_axis.Unported) and hand the rest of the launch to the serial engine; seeing them first saves the batch it
would undo. Spin locks (atomic_cas) run batched: atomic_order.py says when.
"""

from __future__ import annotations

import types

SERIAL_NAMES = {
    "device_print": "device_print",
    "static_print": "static_print",
    "print": "print",
    "breakpoint": "a breakpoint()",
    "make_block_ptr": "block pointers",
    "advance": "block pointers",
    "make_tensor_descriptor": "tensor descriptors",
    "inline_asm_elementwise": "inline asm",
    "volatile=": "a volatile load (a flag between programs: decoupled look-back)",
}
VOLATILE = SERIAL_NAMES["volatile="]

_CACHE: dict[types.CodeType, frozenset[str]] = {}


def _code(fn) -> types.CodeType | None:
    fn = getattr(fn, "fn", fn)  # JITFunction / InterpretedFunction -> the Python function
    return getattr(fn, "__code__", None)


def names_used(fn) -> frozenset[str]:
    """Every global or attribute name the kernel's code, and the code of each @jit function it calls, reads."""
    code = _code(fn)
    if code is None:
        return frozenset()
    if code not in _CACHE:
        _CACHE[code] = frozenset(_scan(fn, code, set()))
    return _CACHE[code]


_SERIAL: dict[types.CodeType, str | None] = {}


def serial_only(fn) -> str | None:
    """Why this kernel must run on the serial engine, or None (read once per kernel)."""
    code = _code(fn)
    if code is None or code not in _SERIAL:
        names = names_used(fn)
        why = next((SERIAL_NAMES[n] for n in sorted(names) if n in SERIAL_NAMES), None)
        if code is None:
            return why
        _SERIAL[code] = why
    return _SERIAL[code]


def uses_volatile(fn) -> bool:
    """Whether the kernel, or a @jit function it calls, passes `volatile=` to a load."""
    return "volatile=" in names_used(fn)


def _volatile(code: types.CodeType) -> bool:
    """A call in code passes `volatile=` (Python 3.11+ keeps a call's keyword names as a constant tuple)."""
    return any(isinstance(c, tuple) and "volatile" in c for c in code.co_consts)


def _scan(fn, code: types.CodeType, seen: set) -> set[str]:
    if code in seen:
        return set()
    seen.add(code)
    names = set(code.co_names)
    if _volatile(code):
        names.add("volatile=")
    for const in code.co_consts:  # nested functions, comprehensions
        if isinstance(const, types.CodeType):
            names |= set(const.co_names)
            if _volatile(const):
                names.add("volatile=")
    scope = getattr(getattr(fn, "fn", fn), "__globals__", {})
    for name in list(names):
        callee = scope.get(name)
        inner = _code(callee) if callee is not None and hasattr(callee, "fn") else None
        if inner is not None:
            names |= _scan(callee, inner, seen)
    return names


_LANES: dict[types.CodeType, bool] = {}


def lane_loops(fn) -> bool:
    """Whether the kernel's own code has a loop whose iterations may run as lanes of one batch
    (predicated_loops.lane_accumulators; loop_lanes.py): then even a launch of one program runs as a batch."""
    code = _code(fn)
    if code is None:
        return False
    if code not in _LANES:
        _LANES[code] = _has_lane_loop(getattr(fn, "fn", fn))
    return _LANES[code]


def _has_lane_loop(function) -> bool:
    import ast
    import inspect
    import textwrap

    from ..ast_walk import walk
    from .predicated_loops import _is_range, _read, lane_accumulators

    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    except (OSError, TypeError, SyntaxError):
        return False
    return any(isinstance(node, ast.For) and _is_range(node.iter) and isinstance(node.target, ast.Name)
               and not node.orelse and _read(node.body) and lane_accumulators(node) is not None
               for node in walk(tree))
