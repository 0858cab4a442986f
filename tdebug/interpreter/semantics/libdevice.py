"""libdevice math (`tl.extra.libdevice`, `tl.extra.cuda.libdevice`, `tl.extra.hip.libdevice`) in Triton's
interpreter, computed with numpy in the operand's dtype; and every numpy transcendental (the builder's exp, exp2,
log, log2, sin, cos and libdevice's) on C-contiguous operands.

Compiled Triton maps `triton.language.extra.libdevice`, whose functions are empty stubs, to the target's
library and lowers each call to an extern_elementwise op. The interpreter runs the stubs (they return
None: `'NoneType' object has no attribute 'type'`) and has no extern_elementwise. Here every function of
those modules becomes a callable that runs CUDA's definition (its argument-type table: a call the GPU
rejects is rejected here too) with the interpreter's semantic, and the builder's extern_elementwise
computes the symbol it picks (`__nv_tanhf` -> tanh) with numpy. A function with no numpy here ends the
run as "could not run" (NotRunnable), naming it.
"""

from __future__ import annotations

import ast
import copy
import functools
import importlib
import inspect
import math
from collections.abc import Callable
from types import ModuleType

import numpy as np

from ..unsupported import NotRunnable
from ..versions import bind, patcher

patch = patcher("libdevice")

BACKENDS = ("triton.language.extra.cuda.libdevice", "triton.language.extra.hip.libdevice")
STUB = "triton.language.extra.libdevice"


def _directed(mode: str, out: type | None = None) -> Callable[[Callable], Callable]:
    """An op computed in float64, rounded to the operands' precision (or `out`) to nearest (rn), toward zero
    (rz), down (rd) or up (ru): libdevice's add_rz, div_ru, sqrt_rd, int2float_rd ..."""

    def wrap(op: Callable) -> Callable:
        def run(*xs: np.ndarray) -> np.ndarray:
            out_dtype = np.dtype(out) if out is not None else np.result_type(*xs)
            exact = op(*[np.asarray(x, dtype=np.float64) for x in xs])
            near = exact.astype(out_dtype)
            if out_dtype == np.float64 or mode == "rn":
                return near
            wide = near.astype(np.float64)
            if mode == "rz":
                step, target = np.abs(wide) > np.abs(exact), np.zeros_like(near)
            elif mode == "rd":
                step, target = wide > exact, np.full_like(near, -np.inf)
            else:
                step, target = wide < exact, np.full_like(near, np.inf)
            return np.where(step, np.nextafter(near, target), near)

        return run

    return wrap


def _to_integer(mode: str) -> Callable:
    """float/double -> int/uint/ll/ull with a rounding mode (the dtype comes from libdevice's return type)."""
    rounding = {"rn": np.rint, "rz": np.trunc, "rd": np.floor, "ru": np.ceil}[mode]
    return lambda x: rounding(np.asarray(x, dtype=np.float64))


def _each(fn: Callable) -> Callable:
    """A scalar math function (math.erf) over arrays, in the operand's dtype."""
    return lambda *xs: np.vectorize(fn, otypes=[np.result_type(*xs)])(*xs)


def _round_half_away(x: np.ndarray) -> np.ndarray:
    return np.where(x >= 0, np.floor(x + 0.5), np.ceil(x - 0.5)).astype(x.dtype)


def _same(op: Callable) -> Callable:
    """op computed in numpy, returned in the first operand's dtype (numpy would widen a Python scalar)."""
    return lambda x, *rest: np.asarray(op(x, *rest)).astype(x.dtype)


def _flag(test: Callable) -> Callable:
    return lambda x: test(x).astype(np.int32)


def _bits(to: type) -> Callable:
    return lambda x: np.asarray(x).view(to)


def _popcount(x: np.ndarray) -> np.ndarray:
    width = 8 * x.itemsize
    counts = [bin(int(v) & ((1 << width) - 1)).count("1") for v in x.ravel()]
    return np.array(counts, dtype=np.int32).reshape(x.shape)


def _clz(x: np.ndarray) -> np.ndarray:
    width = 8 * x.itemsize
    counts = [width - (int(v) & ((1 << width) - 1)).bit_length() for v in x.ravel()]
    return np.array(counts, dtype=np.int32).reshape(x.shape)


# libdevice function name -> numpy implementation (arrays in, array out).
NUMPY: dict[str, Callable] = {
    "abs": np.abs, "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "rint": np.rint, "nearbyint": np.rint,
    "round": _round_half_away, "exp": np.exp, "exp2": np.exp2, "exp10": _same(lambda x: np.power(10.0, x)),
    "expm1": np.expm1, "log": np.log, "log2": np.log2, "log10": np.log10, "log1p": np.log1p,
    "sqrt": np.sqrt, "rsqrt": _same(lambda x: 1 / np.sqrt(x)), "cbrt": np.cbrt,
    "rcbrt": _same(lambda x: 1 / np.cbrt(x)), "sin": np.sin, "cos": np.cos, "tan": np.tan,
    "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh,
    "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh,
    "sinpi": _same(lambda x: np.sin(np.pi * x)), "cospi": _same(lambda x: np.cos(np.pi * x)),
    "erf": _each(math.erf), "erfc": _each(math.erfc), "lgamma": _each(math.lgamma), "tgamma": _each(math.gamma),
    "normcdf": _same(lambda x: 0.5 * np.vectorize(math.erfc)(-np.asarray(x, np.float64) / math.sqrt(2))),
    "saturatef": _same(lambda x: np.clip(x, 0, 1)), "logb": _same(lambda x: np.floor(np.log2(np.abs(x)))),
    "ilogb": lambda x: np.floor(np.log2(np.abs(x))).astype(np.int32),
    "fast_expf": np.exp, "fast_logf": np.log, "fast_log2f": np.log2, "fast_log10f": np.log10,
    "fast_sinf": np.sin, "fast_cosf": np.cos, "fast_tanf": np.tan, "fast_exp10f": _same(lambda x: np.power(10.0, x)),
    "isnan": _flag(np.isnan), "isinf": _flag(np.isinf), "finitef": _flag(np.isfinite),
    "isfinited": _flag(np.isfinite), "signbit": _flag(np.signbit),
    "llrint": lambda x: np.rint(x).astype(np.int64), "llround": lambda x: _round_half_away(x).astype(np.int64),
    "pow": _same(lambda x, y: np.power(x, y.astype(x.dtype))), "fast_powf": np.power, "atan2": np.arctan2,
    "hypot": np.hypot, "rhypot": _same(lambda x, y: 1 / np.hypot(x, y)), "fmod": np.fmod,
    "remainder": _same(lambda x, y: x - y * np.rint(x / y)), "copysign": np.copysign, "nextafter": np.nextafter,
    "fdim": _same(lambda x, y: np.maximum(x - y, 0)), "ldexp": _same(np.ldexp), "scalbn": _same(np.ldexp),
    "fast_dividef": np.divide, "fmaxf": np.fmax, "fminf": np.fmin,
    "float_as_int": _bits(np.int32), "int_as_float": _bits(np.float32), "float_as_uint": _bits(np.uint32),
    "uint_as_float": _bits(np.float32), "double_as_longlong": _bits(np.int64), "longlong_as_double": _bits(np.float64),
    "mulhi": _same(lambda x, y: (x.astype(np.int64) * y.astype(np.int64)) >> (8 * x.itemsize)),
    "hadd": _same(lambda x, y: (x.astype(np.int64) + y) >> 1),
    "rhadd": _same(lambda x, y: (x.astype(np.int64) + y + 1) >> 1),
    "popc": _popcount, "clz": _clz,
}
for _mode in ("rn", "rz", "rd", "ru"):
    _rounded = _directed(_mode)
    NUMPY.update({f"add_{_mode}": _rounded(np.add), f"sub_{_mode}": _rounded(np.subtract),
                  f"mul_{_mode}": _rounded(np.multiply), f"div_{_mode}": _rounded(np.divide),
                  f"rcp_{_mode}": _rounded(lambda x: 1 / x), f"sqrt_{_mode}": _rounded(np.sqrt),
                  f"fma_{_mode}": _rounded(lambda x, y, z: x * y + z)})
    for _source in ("float", "double", "int", "uint", "ll", "ull"):
        for _target in ("int", "uint", "ll", "ull"):
            if _source in ("float", "double"):
                NUMPY[f"{_source}2{_target}_{_mode}"] = _to_integer(_mode)
        NUMPY[f"{_source}2float_{_mode}"] = _directed(_mode, np.float32)(lambda x: x)
        NUMPY[f"{_source}2double_{_mode}"] = _directed(_mode, np.float64)(lambda x: x)
NUMPY["fma"] = NUMPY["fma_rn"]
NUMPY["rsqrt_rn"] = NUMPY["rsqrt"]


def symbol_table(module: ModuleType) -> dict[str, str]:
    """Library symbol -> function name, read from a libdevice module's source (`__nv_tanhf` -> `tanh`)."""
    table: dict[str, str] = {}
    for node in ast.parse(inspect.getsource(module)).body:
        if isinstance(node, ast.FunctionDef):
            for sub in ast.walk(node):
                if isinstance(sub, ast.Constant) and isinstance(sub.value, str) and sub.value.startswith("__"):
                    table[sub.value] = node.name
    return table


def _own_functions(module: ModuleType) -> dict[str, Callable]:
    return {name: fn for name, fn in vars(module).items()
            if inspect.isfunction(fn) and fn.__module__ == module.__name__}


def install() -> None:
    from triton.runtime import interpreter

    backends = []
    for name in BACKENDS:
        try:
            backends.append(importlib.import_module(name))
        except ImportError:
            continue
    symbols: dict[str, str] = {}
    definitions: dict[str, Callable] = {}
    for module in reversed(backends):  # CUDA's definition wins where both have one
        symbols.update(symbol_table(module))
        definitions.update(_own_functions(module))

    def interpreted(definition: Callable) -> Callable:
        @functools.wraps(definition)
        def call(*args, _semantic=None, **kwargs):
            return definition(*args, **kwargs, _semantic=interpreter.interpreter_semantic)

        return call

    for module in [importlib.import_module(STUB), *backends]:
        for name in _own_functions(module):
            if name in definitions:
                patch(module, name, lambda _original, d=definitions[name]: interpreted(d))

    def make(original: Callable) -> Callable:
        @functools.wraps(original)
        def create_extern_elementwise(*args, **kwargs):
            call = bind(original, args, kwargs)
            symbol = call.arguments["symbol"]
            name = symbols.get(symbol, symbol)
            fn = NUMPY.get(name)
            if fn is None:
                raise NotRunnable(f"libdevice.{name} ({symbol}) has no CPU implementation in tdebug's interpreter")
            ret_type = call.arguments["retType"]
            scalar = getattr(ret_type, "scalar", ret_type)
            with np.errstate(all="ignore"):
                out = fn(*[np.ascontiguousarray(h.data) for h in call.arguments["argList"]])
            return interpreter.TensorHandle(np.asarray(out).astype(interpreter._get_np_dtype(scalar)), scalar)

        return create_extern_elementwise

    patch(interpreter.interpreter_builder, "create_extern_elementwise", make)
    for name in LAYOUT_SENSITIVE:
        patch(interpreter.interpreter_builder, name, _on_contiguous)


# numpy's SIMD loops (contiguous operands) and its scalar loops (strided ones: a reversed scan, a transposed or
# broadcast tile) round these differently in the last bit (exp2, log2, atan, tan, pow, ...; exp and log in
# float64), so an operand's memory layout, which differs between the serial and the batched engine, would
# change the result. Contiguous operands always take the same loop.
LAYOUT_SENSITIVE = ("create_exp", "create_exp2", "create_log", "create_log2", "create_sin", "create_cos")


def _on_contiguous(original: Callable) -> Callable:
    @functools.wraps(original)
    def op(*args, **kwargs):
        return original(*map(_contiguous, args), **{k: _contiguous(v) for k, v in kwargs.items()})

    return op


def _contiguous(value):
    """A handle whose data is a strided numpy view, as a copy holding C-contiguous data; anything else as is."""
    data = getattr(value, "data", None)
    if not isinstance(data, np.ndarray) or data.flags.c_contiguous:
        return value
    out = copy.copy(value)
    out.data = np.ascontiguousarray(data)
    return out
