"""Before a launch: does the kernel, or a @jit function it calls, use something only the serial engine runs?

Read from the code objects' names (no source needed): spin locks (atomic_cas, atomic_xchg), printing
(device_print; static_print and print run once per program under the interpreter), breakpoints, block
pointers and tensor descriptors, inline asm. The batched engine would meet most of these at run time too
(program_axis.Unported) and hand the rest of the launch to the serial engine; seeing them first saves the
batch it would undo.
"""

from __future__ import annotations

import types

SERIAL_NAMES = {
    "atomic_cas": "a spin lock (atomic_cas)",
    "atomic_xchg": "atomic_xchg (a lock's release)",
    "device_print": "device_print",
    "static_print": "static_print",
    "print": "print",
    "breakpoint": "a breakpoint()",
    "make_block_ptr": "block pointers",
    "advance": "block pointers",
    "make_tensor_descriptor": "tensor descriptors",
    "inline_asm_elementwise": "inline asm",
}

_CACHE: dict[types.CodeType, str | None] = {}


def _code(fn) -> types.CodeType | None:
    fn = getattr(fn, "fn", fn)  # JITFunction / InterpretedFunction -> the Python function
    return getattr(fn, "__code__", None)


def serial_only(fn) -> str | None:
    """Why this kernel must run on the serial engine, or None."""
    code = _code(fn)
    if code is None:
        return None
    if code not in _CACHE:
        _CACHE[code] = _scan(fn, code, set())
    return _CACHE[code]


def _scan(fn, code: types.CodeType, seen: set) -> str | None:
    if code in seen:
        return None
    seen.add(code)
    names = set(code.co_names)
    for const in code.co_consts:  # nested functions, comprehensions
        if isinstance(const, types.CodeType):
            names |= set(const.co_names)
    for name in names:
        if name in SERIAL_NAMES:
            return SERIAL_NAMES[name]
    scope = getattr(getattr(fn, "fn", fn), "__globals__", {})
    for name in names:
        callee = scope.get(name)
        inner = _code(callee) if callee is not None and hasattr(callee, "fn") else None
        if inner is not None:
            why = _scan(callee, inner, seen)
            if why is not None:
                return why
    return None
