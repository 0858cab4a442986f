"""Integer overflow reported where it hurts: a wrapped int32 (or narrower) result is followed, with its true value,
through the integer ops that use it; it is a finding only when it reaches an address (a pointer offset), a
conversion to floating point, or a store, while still differing from its true value (reported at the line that
wrapped, naming the line it reached). Arithmetic that wraps and is then used modulo 2^32 (packed
keys: `x + y - kx` in Liger's fused-MoE routing scan) is what compiled Triton computes (no `nsw`): no finding.
What kernels wrap on purpose is no finding either (`--check overflow-all` reports it): a wrapped value that goes
through a bitwise op (xor, and, or, a shift: hashing and random-number mixing use the bits), a product by a
hashing constant (one value of magnitude >= 2^16 in every lane) that reaches only a store (a multiplicative hash or
an LCG step stored as an integer; as an address or a float it is a finding), and 8- and 16-bit arithmetic
(patches.py checks it only under overflow-all). An integer tl.sum / tl.cumsum whose total leaves its type wraps
as compiled code wraps it (Triton's interpreter raised OverflowError or wrapped, by engine) and is followed from
there like an add that wrapped.

Triton's own overflow check (its device_assert on each add/sub/mul, on with debug) tells which op wrapped; with
STRICT (`--check overflow-all`) that assert ends the kernel as before. Otherwise the op's result is marked with
its true value (computed again on int64 operands), and each following integer op carries the mark (recomputed
the same way) until the value is right again; create_addptr, the int-to-float casts and create_masked_store
raise on a marked value.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..batched.launch import current_batch
from ..frames import current_pid, user_frame
from ..versions import patcher

patch = patcher("overflow")

ATTR = "_tdebug_exact"  # on a TensorHandle: its Origin (the true values and where the wrap happened)
STRICT = False  # --check overflow-all: every wrapped add/sub/mul is a finding (the assert raises); set_strict()


def set_strict(flag: bool) -> None:
    """--check overflow-all on (every wrapped add/sub/mul a finding) or off (only the wraps that matter)."""
    global STRICT
    STRICT = flag

# Integer ops whose result carries a wrapped operand's mark; the arithmetic ones that Triton checks come first.
ARITHMETIC = ("create_add", "create_sub", "create_mul")
# Ops that use a value's bits: a wrapped operand is used modulo 2^n from here (hashing, random numbers).
BITWISE = ("create_shl", "create_lshr", "create_ashr", "create_and", "create_or", "create_xor")
CARRY = ARITHMETIC + ("create_shl", "create_lshr", "create_ashr", "create_and", "create_or", "create_xor",
                      "create_sdiv", "create_udiv", "create_srem", "create_urem", "create_minsi", "create_maxsi",
                      "create_int_cast", "create_splat", "create_broadcast", "create_expand_dims", "create_reshape",
                      "create_trans")


@dataclass
class Origin:
    exact: np.ndarray  # the true values (int64)
    file: str
    line: int
    what: str  # the overflow message of Triton's check ("int32 overflow detected for operation add")
    product: bool = False  # a product by a hashing constant wrapped on the way (a hash or an LCG step, if only stored)


@dataclass
class _State:
    pending: tuple[str, int, str] | None = None  # an overflow assert just failed: the next add/sub/mul is it
    live: bool = False  # some value has been marked (until then every wrapper is a pass-through)


STATE = _State()


def overflowed(file: str, line: int, message: str) -> None:
    """Triton's overflow check failed at file:line: mark the result of the op it guards."""
    from ..batched import program_axis

    if current_batch() is not None:  # marks follow one program's values: the serial engine takes over
        raise program_axis.Unported("an int32 overflow's true value")
    STATE.pending = (file, line, message)
    STATE.live = True


def _origin(handle) -> Origin | None:
    return getattr(handle, ATTR, None)


def _is_int(handle) -> bool:
    dtype = getattr(handle, "dtype", None)
    return dtype is not None and hasattr(dtype, "is_int") and dtype.is_int() and dtype.int_bitwidth > 1


def _exact_handle(handle):
    """The handle as int64 with its true values."""
    import triton.language as tl
    from triton.runtime.interpreter import TensorHandle

    origin = _origin(handle)
    data = origin.exact if origin is not None else np.asarray(handle.data).astype(np.int64)
    return TensorHandle(np.asarray(data, dtype=np.int64), tl.int64)


def _carry(name: str, original):
    def op(*args, **kwargs):
        result = original(*args, **kwargs)
        if not STATE.live:
            return result
        pending = STATE.pending if name in ARITHMETIC else None
        marked = [a for a in args if _origin(a) is not None]
        if pending is None and not marked:
            return result
        if pending is not None:
            STATE.pending = None
        if not _is_int(result):
            return result
        if name == "create_int_cast" and result.dtype.int_bitwidth < 64:
            return result  # truncating a wrapped value on purpose: used modulo 2^n from here
        if name in BITWISE and not STRICT:
            return result  # its bits are what the kernel uses (hash mixing): modulo 2^n from here
        exact_args = [_exact_handle(a) if _is_int(a) else a for a in args]
        if name == "create_int_cast":  # (src, dst_type, is_signed): cast the true value to int64 instead
            if "dst_type" in kwargs:
                kwargs = {**kwargs, "dst_type": _int64()}
            else:
                exact_args[1] = _int64()
        with np.errstate(over="ignore"):
            exact = np.asarray(original(*exact_args, **kwargs).data, dtype=np.int64)
        wrapped = np.asarray(result.data).astype(np.int64)
        if np.array_equal(exact, wrapped):
            return result  # right again (x + y - kx)
        source = marked[0] if marked else None
        product = any(_origin(a).product for a in marked)
        if pending is not None:
            file, line, what = pending
            product = product or (name == "create_mul" and _hashing(args))
        else:
            origin = _origin(source)
            file, line, what = origin.file, origin.line, origin.what
        setattr(result, ATTR, Origin(exact, file, line, what, product))
        return result

    return op


HASH_CONSTANT = 1 << 16  # a multiplier this large, one value in every lane: a hash's or an LCG's (0x9E3779B1)


def _hashing(args: tuple) -> bool:
    """Is this multiplication a hash's or an LCG's step: keys that differ from lane to lane times one constant of
    magnitude >= 2^16 (a running product, `acc * k` with acc the same in every lane, is not)?"""
    datas = [np.asarray(getattr(a, "data", None)) for a in args[:2]]
    if len(datas) != 2 or any(d.dtype.kind not in "iu" or d.size == 0 for d in datas):
        return False
    a, b = datas
    a_same, b_same = bool((a == a.flat[0]).all()), bool((b == b.flat[0]).all())
    if a_same == b_same:
        return False
    constant = a if a_same else b
    return abs(int(constant.flat[0])) >= HASH_CONSTANT


def _int64():
    import triton.language as tl

    return tl.int64


def _raise(origin: Origin, wrong: np.ndarray, where: str) -> None:
    from ..patches import DeviceAssertError

    frame = user_frame()
    sink = f" at line {frame.f_lineno}" if frame is not None else ""
    raise DeviceAssertError(f"{origin.what}; the wrapped value reaches {where}{sink}", origin.file, origin.line,
                            current_pid(), int(wrong.sum()), int(wrong.size), kind="overflow")


def _addptr(original):
    def create_addptr(ptr, offset):
        if STATE.live:
            origin = _origin(offset)
            if origin is not None:
                wrong = origin.exact != np.asarray(offset.data).astype(np.int64)
                _raise(origin, np.broadcast_to(wrong, np.shape(offset.data)), "an address (a pointer offset)")
        return original(ptr, offset)

    return create_addptr


def _store(original):
    def create_masked_store(*args, **kwargs):
        if STATE.live:
            from ..versions import bind

            call = bind(original, args, kwargs)
            value = call.arguments["value"]
            origin = _origin(value)
            if origin is not None:
                wrong = origin.exact != np.asarray(value.data).astype(np.int64)
                mask = call.arguments["mask"]
                if mask is not None:
                    wrong = wrong & np.asarray(mask.data, dtype=bool)
                if wrong.any() and not (origin.product and not STRICT):  # a stored product: a hash, an LCG
                    _raise(origin, wrong, "a store (the stored value differs from the true one)")
        return original(*args, **kwargs)

    return create_masked_store


def _to_float(original):
    def to_fp(*args, **kwargs):
        if STATE.live:
            from ..versions import bind

            src = bind(original, args, kwargs).arguments["src"]
            origin = _origin(src)
            if origin is not None:
                wrong = origin.exact != np.asarray(src.data).astype(np.int64)
                if wrong.any():
                    _raise(origin, wrong, "a conversion to floating point (used as a number, not modulo 2^32)")
        return original(*args, **kwargs)

    return to_fp


def wrapped_total(ret, dtype) -> np.ndarray | None:
    """An integer reduction's or scan's result `ret` (numpy widens int32 sums to int64) as int64 true values when
    some leave `dtype`'s range (None otherwise: nothing wrapped, or not an integer of under 64 bits)."""
    if not (hasattr(dtype, "is_int") and dtype.is_int()) or dtype.int_bitwidth >= 64 or dtype.int_bitwidth < 8:
        return None
    exact = np.asarray(ret)
    if exact.dtype.kind not in "iu" or exact.dtype.itemsize * 8 <= dtype.int_bitwidth or exact.size == 0:
        return None
    low, high = (0, (1 << dtype.int_bitwidth) - 1) if dtype.is_int_unsigned() else \
        (-(1 << (dtype.int_bitwidth - 1)), (1 << (dtype.int_bitwidth - 1)) - 1)
    if exact.min() >= low and exact.max() <= high:
        return None
    return exact.astype(np.int64)


def _reduced(original):
    """ReduceScanOpInterface.to_tensor: an integer sum or scan that left its type wraps as compiled code wraps it;
    a signed one is marked with its true value (a finding where it reaches an address, a float or a store)."""

    def to_tensor(self, ret, dtype):
        exact = wrapped_total(ret, dtype)
        if exact is None:
            return original(self, ret, dtype)
        from triton.runtime.interpreter import _get_np_dtype

        wrapped = exact.astype(_get_np_dtype(dtype))  # two's complement, as the GPU's adds give it
        out = original(self, wrapped if np.ndim(ret) else wrapped[()], dtype)
        if dtype.is_int_unsigned():
            return out  # unsigned arithmetic wraps by definition
        frame = user_frame()
        what = f"int{dtype.int_bitwidth} overflow in a reduction or scan (tl.sum, tl.cumsum)"
        origin = Origin(exact.reshape(np.shape(out.handle.data)), frame.f_code.co_filename if frame else "",
                        frame.f_lineno if frame else 0, what)
        if STRICT:
            wrong = origin.exact != np.asarray(out.handle.data).astype(np.int64)
            _raise(origin, wrong, "its result")
        setattr(out.handle, ATTR, origin)
        STATE.live = True
        return out

    return to_tensor


def install() -> None:
    """Wrap the integer ops that carry a mark and the two places a mark is a finding."""
    from triton.runtime import interpreter

    builder = interpreter.interpreter_builder
    for name in CARRY:
        if hasattr(builder, name):
            patch(builder, name, lambda original, name=name: _carry(name, original))
    patch(builder, "create_addptr", _addptr)
    patch(builder, "create_masked_store", _store)
    patch(interpreter.ReduceScanOpInterface, "to_tensor", _reduced)
    for name in ("create_si_to_fp", "create_ui_to_fp"):
        patch(builder, name, _to_float)
