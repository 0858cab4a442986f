"""Shortcuts in Triton's per-op front end (tensor construction, implicit casts and broadcasts, the int overflow
check) that skip only work whose result is already known, so every value, finding and error stays as before.

Each shortcut wraps Triton's own function and falls back to it whenever its precondition does not hold:
- `tensor.__init__`: a tensor's constexpr shape tuple and numel depend on its type's shape only; they are built
  once per block shape (by Triton's own __init__) and shared (tensors never mutate them).
- `TritonSemantic.cast`: an operand already of the target scalar type is returned as is (Triton's first test,
  `src_sca_ty == dst_sca_ty`, without dtype.__eq__'s constexpr unwrapping when the two are the same object).
- `TritonSemantic.broadcast_impl_value`: two block operands of the same shape come back unchanged, as from
  Triton, without building the result shape.
- `TritonSemantic.computation_type_impl`: the promoted type of two operand types, memoised on the types' names
  and flags; an error (mismatched operands) is never cached, Triton raises it on every call.
- `TritonSemantic.binary_op_type_checking_impl`: two tensors of the same scalar type (not pointers) whose
  promoted type is that type go straight to the broadcast (Triton's pointer checks and casts do nothing there).
- `TritonSemantic.binary_op_sanitize_overflow_impl` (on with debug, as tdebug runs): Triton checks a signed
  add/sub/mul of int8..int32 by redoing it in int64 through ten builder ops and asserting the range; here numpy
  redoes it on the operands' arrays, and only when a lane is out of range does Triton's check run (and report).
"""

from __future__ import annotations

import numpy as np

from ..versions import patcher

patch = patcher("front_end_shortcuts")

_UFUNCS = {"add": np.add, "sub": np.subtract, "mul": np.multiply}
_LIMITS = {bits: (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) for bits in (8, 16, 32)}


def _tensor_init(original):
    shapes: dict = {}  # block type's name (or None: not a block) -> (constexpr shape tuple, numel)
    fields = {"handle", "shape", "numel", "type", "dtype"}

    def __init__(self, handle, type):
        key = (type.__class__, type.name) if type.is_block() else None
        found = shapes.get(key)
        if found is None:
            before = set(self.__dict__)
            original(self, handle, type)
            if set(self.__dict__) - before == fields:  # Triton's __init__ set just these: the rest is the type's
                shapes[key] = (self.shape, self.numel)
            return
        self.handle = handle
        self.shape, self.numel = found
        self.type = type
        self.dtype = type.scalar

    return __init__


def _cast(original):
    def cast(self, input, dst_ty, fp_downcast_rounding=None):
        if fp_downcast_rounding is None:
            try:
                same = input.type.scalar is dst_ty.scalar
            except AttributeError:  # not a tensor or not a type: Triton's own cast says what is wrong
                same = False
            if same:
                return input
        return original(self, input, dst_ty, fp_downcast_rounding)

    return cast


def _broadcast(original):
    from triton.language.core import block_type
    from triton.language.core import tuple as tl_tuple

    def broadcast_impl_value(self, lhs, rhs):
        try:
            lhs_ty, rhs_ty = lhs.type, rhs.type
        except AttributeError:
            return original(self, lhs, rhs)
        if type(lhs_ty) is block_type and type(rhs_ty) is block_type:
            left, right = lhs_ty.shape, rhs_ty.shape
            if type(left) is tl_tuple and type(right) is tl_tuple and left.values == right.values:
                return lhs, rhs
        return original(self, lhs, rhs)

    return broadcast_impl_value


def _computation_type(original):
    memo: dict = {}

    def computation_type_impl(self, a_ty, a_is_scalar, b_ty, b_is_scalar, div_or_mod):
        try:
            key = (type(a_ty), a_ty.name, bool(a_is_scalar), type(b_ty), b_ty.name, bool(b_is_scalar),
                   bool(div_or_mod))
        except AttributeError:
            return original(self, a_ty, a_is_scalar, b_ty, b_is_scalar, div_or_mod)
        found = memo.get(key)
        if found is None:
            out = original(self, a_ty, a_is_scalar, b_ty, b_is_scalar, div_or_mod)  # errors are not cached
            # Triton answers with one of the operands' type objects or with a module-level type (tl.float32):
            # remember which, so a later call gets that call's own object, as from Triton.
            memo[key] = "a" if out is a_ty else "b" if out is b_ty else out
            return out
        if found == "a":
            return a_ty
        if found == "b":
            return b_ty
        return found

    return computation_type_impl


def _type_checking(original):
    def binary_op_type_checking_impl(self, lhs, rhs, allow_lhs_ptr=False, allow_rhs_ptr=False,
                                     arithmetic_check=True, div_or_mod=False):
        # Two tensors of one scalar type object, not pointers: Triton's pointer checks pass, the promoted type
        # is that type (asked of computation_type_impl as Triton asks it), its casts return the operands.
        tensor = self.tensor
        if arithmetic_check and type(lhs) is tensor and type(rhs) is tensor:
            sca = lhs.dtype
            if sca is rhs.dtype and not sca.is_ptr() and self.computation_type_impl(sca, False, sca, False,
                                                                                      div_or_mod) is sca:
                return self.broadcast_impl_value(lhs, rhs)
        return original(self, lhs, rhs, allow_lhs_ptr, allow_rhs_ptr, arithmetic_check, div_or_mod)

    return binary_op_type_checking_impl


def _in_range(self, lhs, rhs, binary_op) -> bool:
    """Whether every lane of lhs <op> rhs, computed in int64, fits lhs's (signed, 8..32-bit) type."""
    name = getattr(binary_op, "__name__", None)
    ufunc = _UFUNCS.get(name)
    if ufunc is None or getattr(binary_op, "__self__", None) is not self:
        return False
    sca = lhs.type.scalar
    if sca is not rhs.type.scalar or not sca.is_int_signed() or sca.int_bitwidth not in _LIMITS:
        return False
    if not self.builder.options.sanitize_overflow:
        return False
    a, b = lhs.handle.data, rhs.handle.data
    if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)) or a.dtype.kind != "i" or b.dtype.kind != "i":
        return False
    # Lanes pair up as Triton's elementwise ops pair them: same shape, a scalar, or a program axis in front.
    if not (a.shape == b.shape or a.size == 1 or b.size == 1 or a.shape[1:] == b.shape or b.shape[1:] == a.shape):
        return False
    low, high = _LIMITS[sca.int_bitwidth]
    if a.size == 1 or b.size == 1:  # `row * stride`, `offs + k`: with one side fixed the op is monotonic in the
        # other, so its extremes come from the other's two extremes (Python ints: nothing wraps on the way)
        if a.size == 0 or b.size == 0:
            return True
        x, y = (int(a.reshape(-1)[0]), b) if a.size == 1 else (int(b.reshape(-1)[0]), a)
        ends = (int(y.min()), int(y.max())) if y.size > 1 else (int(y.reshape(-1)[0]),)
        if name == "add":
            values = [x + v for v in ends]
        elif name == "mul":
            values = [x * v for v in ends]
        else:  # sub: a - b
            values = [x - v for v in ends] if a.size == 1 else [v - x for v in ends]
        return low <= min(values) and max(values) <= high
    out = ufunc(a.astype(np.int64), b.astype(np.int64))
    return bool(((out <= high) & (out >= low)).all())


def _overflow_check(original):
    def binary_op_sanitize_overflow_impl(self, lhs, rhs, binary_op):
        try:
            fits = _in_range(self, lhs, rhs, binary_op)
        except Exception:  # noqa: BLE001 - anything unexpected: Triton's own check decides (and reports)
            fits = False
        if fits:
            return None  # Triton's check would assert an all-true condition: nothing
        return original(self, lhs, rhs, binary_op)

    return binary_op_sanitize_overflow_impl


def install() -> None:
    """After patches._enable_device_assert (this check runs first, then tdebug's signed-only one)."""
    from triton.language import core
    from triton.language.semantic import TritonSemantic
    patch(core.tensor, "__init__", _tensor_init)
    patch(TritonSemantic, "cast", _cast)
    patch(TritonSemantic, "broadcast_impl_value", _broadcast)
    patch(TritonSemantic, "computation_type_impl", _computation_type)
    patch(TritonSemantic, "binary_op_type_checking_impl", _type_checking)
    patch(TritonSemantic, "binary_op_sanitize_overflow_impl", _overflow_check)
