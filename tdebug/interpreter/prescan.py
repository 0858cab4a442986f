"""Before a launch: does the kernel, or a @jit function it calls, use something only the serial engine runs?

Read from the code objects' names (no source needed): spin locks (atomic_cas, atomic_xchg), printing
(device_print; static_print and print run once per program under the interpreter), breakpoints, block
pointers and tensor descriptors, inline asm, volatile loads (a flag one program publishes and later ones
spin on: decoupled look-back; read from the keyword names a call passes). The batched engine would meet most
of these at run time too (program_axis.Unported) and hand the rest of the launch to the serial engine; seeing
them first saves the batch it would undo.
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

VOLATILE = "a volatile load (a flag between programs: decoupled look-back)"

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
            if _volatile(const):
                return VOLATILE
    if _volatile(code):
        return VOLATILE
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


def _volatile(code: types.CodeType) -> bool:
    """A call in code passes `volatile=` (Python 3.11+ keeps a call's keyword names as a constant tuple)."""
    return any(isinstance(c, tuple) and "volatile" in c for c in code.co_consts)


def uses_volatile(fn) -> bool:
    """Whether the kernel, or a @jit function it calls, passes `volatile=` to a load."""
    return serial_only(fn) == VOLATILE or _any_volatile(fn, set())


def _any_volatile(fn, seen: set) -> bool:
    code = _code(fn)
    if code is None or code in seen:
        return False
    seen.add(code)
    if _volatile(code) or any(isinstance(c, types.CodeType) and _volatile(c) for c in code.co_consts):
        return True
    scope = getattr(getattr(fn, "fn", fn), "__globals__", {})
    return any(_any_volatile(scope[n], seen) for n in code.co_names if hasattr(scope.get(n), "fn"))
