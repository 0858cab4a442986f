"""A fuzzer of the batched engine against the serial one: hypothesis strategies that write random valid Triton
kernels (element-wise math that makes NaN/Inf, casts between every float and int dtype (fp64/32/16, bf16, int8-64,
uint8-64) and rounding through fp8 (e4m3, e5m2), masks and `other`,
reductions and scans with built-in and custom combine functions, tl.dot, atomics and their return values,
tl.where, loops with per-program trip counts, early returns (also inside a constexpr `if`), `if` on pid and on
loaded values, 1-3-D grids,
inputs with NaN/Inf/huge/tiny values or left uninitialised, stores past the end), each run under both engines in
one process (engine_compare.run_scenario) and compared bit for bit: outputs, in-place inputs, findings, the error
string and the store records.

A generated kernel is a module's source text: `fuzz_kernel` and a `scenario(seed)` that makes its inputs and
launches it, written to a file and imported (@triton.jit needs real source). Hypothesis shrinks a disagreement to
a minimal kernel: fewer statements, simpler ops, smaller grids and tiles, seed 0.

    python kernel_fuzz.py --examples N [--seed S]   hypothesis's @given, derandomized: one JSON line
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

os.environ["TRITON_INTERPRET"] = "1"

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from engine_compare import differences, run_scenario  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tdebug.interpreter.batched import grid_loop  # noqa: E402

FLOATS = ["fp32", "fp16", "bf16", "fp64"]
INTS = ["int32", "int8", "uint8", "int16", "int64", "uint32", "uint16", "uint64"]
DTYPES = FLOATS + INTS
TL = {"fp32": "tl.float32", "fp16": "tl.float16", "bf16": "tl.bfloat16", "fp64": "tl.float64", "int8": "tl.int8",
      "uint8": "tl.uint8", "int16": "tl.int16", "int32": "tl.int32", "int64": "tl.int64", "uint32": "tl.uint32",
      "uint16": "tl.uint16", "uint64": "tl.uint64"}
TORCH = {"fp32": "torch.float32", "fp16": "torch.float16", "bf16": "torch.bfloat16", "fp64": "torch.float64",
         "int8": "torch.int8", "uint8": "torch.uint8", "int16": "torch.int16", "int32": "torch.int32",
         "int64": "torch.int64", "uint32": "torch.uint32", "uint16": "torch.uint16", "uint64": "torch.uint64"}
BITS = {"fp32": 32, "fp16": 16, "bf16": 16, "fp64": 64, "int8": 8, "uint8": 8, "int16": 16, "int32": 32,
        "int64": 64, "uint32": 32, "uint16": 16, "uint64": 64}
FP8 = ["tl.float8e4nv", "tl.float8e5"]  # cast through only: fp8 values take no arithmetic
FILLS = ["randn", "special", "big", "tiny", "positive", "uninit"]

# Written into every generated module (and once into fuzz_scenarios.py): the inputs, the combine functions.
PRELUDE = '''
def _fill(g, kind, dtype, size):
    """`size` values of `dtype` from generator `g`: normal, with NaN/Inf/huge/tiny lanes, huge, tiny, positive,
    or a poisoned torch.empty whose first half only is written (uninitialised reads)."""
    if kind == "uninit":
        t = torch.empty(size, dtype=dtype)
        if dtype in (torch.uint16, torch.uint32, torch.uint64):  # tdebug poisons these too (0xA5 bytes); this
            t.fill_({torch.uint16: 0xA5A5, torch.uint32: 0xA5A5A5A5}.get(dtype, 0xA5A5A5A5A5A5A5A5))  # outside it
        t[: size // 2] = _fill(g, "randn", dtype, size // 2)
        return t
    if dtype.is_floating_point:
        x = torch.randn(size, generator=g, dtype=torch.float64)
        if kind == "special":
            picks = torch.randint(0, size, (max(1, size // 8),), generator=g)
            specials = torch.tensor([float("nan"), float("inf"), -float("inf"), 3e38, -1e-40, 7e4, 0.0])
            x[picks] = specials[torch.randint(0, len(specials), (len(picks),), generator=g)].double()
        elif kind == "big":
            x = x * {torch.float32: 1e37, torch.float64: 1e300}.get(dtype, 1e5)
        elif kind == "tiny":
            x = x * 1e-39
        elif kind == "positive":
            x = x.abs() + 0.5
        return x.to(dtype)
    wide = torch.randint(-8, 9, (size,), generator=g, dtype=torch.int64)
    unsigned = dtype in (torch.uint8, torch.uint16, torch.uint32, torch.uint64)
    if unsigned or kind == "positive":
        wide = wide.abs()
    if kind in ("special", "big"):
        info = torch.iinfo(dtype)
        picks = torch.randint(0, size, (max(1, size // 4),), generator=g)
        # The extremes as int64 bit patterns (uint64's top half wraps), written as int64 then viewed as dtype.
        extremes = [v - (1 << 64) if v >= 1 << 63 else v for v in (info.max, info.min, info.max - 1)]
        bits = wide.to(dtype).view(torch.int64) if dtype == torch.uint64 else wide
        bits[picks] = torch.tensor(extremes)[torch.randint(0, 3, (len(picks),), generator=g)]
        return bits.view(dtype) if dtype == torch.uint64 else bits.to(dtype)
    return wide.to(dtype)


@triton.jit
def _add_combine(a, b):
    return a + b


@triton.jit
def _mul_combine(a, b):
    return a * b


@triton.jit
def _maxabs_combine(a, b):
    return tl.where(tl.abs(a) > tl.abs(b), a, b)


@triton.jit
def _argmin_combine(v1, i1, v2, i2):
    lt = (v1 < v2) | ((v1 == v2) & (i1 < i2))
    return tl.where(lt, v1, v2), tl.where(lt, i1, i2)
'''


def promote(a: str, b: str, div_or_mod: bool = False) -> str:
    """Triton's computation type of two tensors (semantic.computation_type_impl, fp8 aside)."""
    if "fp64" in (a, b):
        return "fp64"
    if "fp32" in (a, b) and (a in FLOATS or b in FLOATS):
        return "fp32"
    if a == "fp16" or b == "fp16":
        return "fp32" if div_or_mod or "bf16" in (a, b) else "fp16"
    if a == "bf16" and b == "bf16":
        return "fp32" if div_or_mod else "bf16"
    if a == "bf16" or b == "bf16":
        return "fp32"
    unsigned_a, unsigned_b = a.startswith("u"), b.startswith("u")
    if unsigned_a == unsigned_b:
        return a if BITS[a] > BITS[b] else b
    if unsigned_a:
        return a if BITS[a] >= BITS[b] else b
    return b if BITS[b] >= BITS[a] else a


def sum_dtype(d: str) -> str:
    """The dtype a pool value made by tl.sum / tl.cumsum of `d` is cast to (an explicit cast, so it is known)."""
    if d in FLOATS:
        return "fp32"
    if d == "int64":
        return "int64"
    return "uint32" if d.startswith("u") else "int32"


@dataclass
class Val:
    name: str
    dtype: str
    scalar: bool  # shape () (a reduction, a program's atomic) or (B,)


@dataclass
class Kernel:
    """One generated kernel: its module's source, the seed of its inputs, and what the grammar put in it."""
    source: str
    seed: int
    features: Counter = field(default_factory=Counter)
    statements: int = 0
    tensors: list = field(default_factory=list)  # (name, torch dtype name) of what scenario() returns, in order

    def __repr__(self) -> str:  # hypothesis prints the falsifying example with it
        return f"Kernel(seed={self.seed}, statements={self.statements})\n{self.source}"


class Writer:
    """Draws one kernel statement by statement; every value it makes is typed, so every line is valid Triton."""

    def __init__(self, draw) -> None:
        self.draw = draw
        self.lines: list[str] = []
        self.indent = 1
        self.pool: list[Val] = []
        self.fold_into: Val | None = None  # a loop's fresh fp32 accumulator (what lane_folds folds as numpy)
        self.inputs: list[tuple[str, str, str]] = []  # (name, dtype, fill)
        self.outputs: list[tuple[str, str, str]] = []  # (name, dtype, size expression)
        self.accs: list[tuple[str, str]] = []  # atomic accumulators (name, dtype)
        self.locks: list[tuple[str, str]] = []  # spin locks (lock words, the partial sums they guard)
        self.dots: list[tuple[str, str, str]] = []  # (a, b, out) tensors of 16x16 tiles per program
        self.features: Counter = Counter()
        self.count = 0
        self.returned = False

    # -- helpers ---------------------------------------------------------------------------------------
    def name(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    def emit(self, line: str) -> None:
        self.lines.append("    " * self.indent + line)

    def pick(self, options):
        return self.draw(st.sampled_from(options))

    def value(self, scalar: bool | None = None, kind: str | None = None) -> Val | None:
        cands = [v for v in self.pool if (scalar is None or v.scalar == scalar)
                 and (kind is None or (v.dtype in FLOATS) == (kind == "float"))]
        return self.pick(cands) if cands else None

    def add(self, prefix: str, expr: str, dtype: str, scalar: bool) -> Val:
        v = Val(self.name(prefix), dtype, scalar)
        self.emit(f"{v.name} = ({expr}).to({TL[dtype]})")
        self.pool.append(v)
        self.features[f"dtype:{dtype}"] += 1
        return v

    def input(self, dtype: str | None = None) -> tuple[str, str]:
        reuse = [i for i in self.inputs if dtype is None or i[1] == dtype]
        if reuse and self.draw(st.booleans()):
            name, d, _ = self.pick(reuse)
            return name, d
        d = dtype or self.pick(DTYPES)
        fill = self.pick(FILLS)
        name = f"x{len(self.inputs)}"
        self.inputs.append((name, d, fill))
        self.features[f"fill:{fill}"] += 1
        self.features[f"input:{d}"] += 1
        return name, d

    def literal(self, dtype: str) -> str:
        if dtype in FLOATS:
            return self.pick(["1.5", "0.0", "-2.0", "1e30", "3e38", "1e-30", "65504.0"])
        if dtype.startswith("u"):
            return self.pick(["1", "0", "3", "200"])
        return self.pick(["1", "0", "-3", "7", "100"])

    # -- statements ------------------------------------------------------------------------------------
    def stmt_load(self) -> None:
        x, d = self.input()
        shift = self.pick(["", "", " + 1", " + 3"])
        mask = self.pick(["offs < n", "None", "lane % 2 == 0", "offs < n - 5"])
        if mask == "None":  # in bounds (the inputs hold P*B elements) unless shifted
            expr = f"tl.load({x}_ptr + offs{shift})"
        else:
            other = self.pick(["None", "0", "-float('inf')", "float('nan')", "1"] if d in FLOATS
                              else ["None", "0", "1"])
            expr = f"tl.load({x}_ptr + offs{shift}, mask={mask}" + ("" if other == "None" else f", other={other}")
            expr += ")"
            self.features[f"other:{other}"] += 1
        self.features[f"mask:{mask}"] += 1
        if shift:
            self.features["load:shifted"] += 1
        self.features["op:tl.load"] += 1
        self.add("v", expr, d, False)

    def scalar_load(self) -> str:
        x, d = self.input()
        self.features["op:tl.load(scalar)"] += 1
        return f"tl.load({x}_ptr + pid)", d

    def operand(self, like: Val) -> tuple[str, str, bool]:
        """A second operand for `like`: a pool value (a scalar broadcasts), a literal, or a scalar load."""
        choice = self.pick(["pool", "literal", "pool", "scalar_load"])
        if choice == "pool":
            v = self.value(scalar=True if like.scalar else None)  # a scalar takes no vector operand
            if v is not None and not (like.scalar and not v.scalar):
                return v.name, v.dtype, False
        if choice == "scalar_load" and not like.scalar:
            expr, d = self.scalar_load()
            return expr, d, False
        return self.literal(like.dtype), like.dtype, True

    def binary(self, target: Val | None = None) -> str | None:
        a = target or self.value()
        if a is None:
            return None
        b, bd, is_lit = self.operand(a)
        ops = ["+", "-", "*", "/"] + (["//", "%", "&", "|", "^", "<<", ">>"] if a.dtype in INTS else [])
        op = self.pick(ops)
        differ = bd.startswith("u") != a.dtype.startswith("u")  # Triton refuses /, // and % across signedness
        if (op in ("//", "%", "&", "|", "^") and (bd in FLOATS or differ)) or (
                op == "/" and a.dtype in INTS and bd in INTS and differ):
            b, bd, is_lit = f"({b}).to({TL[a.dtype]})" if not is_lit else b, a.dtype, is_lit
        if op in ("<<", ">>"):
            b, bd, is_lit = self.pick(["1", "3", "7"]), a.dtype, True
        if is_lit:
            if a.dtype.startswith("u") and b.startswith("-"):
                b = b[1:]
            is_float_literal = "." in b or "e" in b
            d = "fp32" if a.dtype in INTS and is_float_literal else a.dtype
            if op == "/" and d in ("fp16", "bf16"):
                d = "fp32"
            if op == "/" and d in INTS:
                d = "fp32"
            if a.dtype in INTS and d in INTS and b.lstrip("-").isdigit() and BITS[a.dtype] == 8 and int(b) > 100:
                b = "3"
        else:
            d = promote(a.dtype, bd, div_or_mod=op in ("/", "%"))
            if op == "/" and d in INTS:
                d = "fp32"
        self.features[f"op:{op}"] += 1
        return f"{a.name} {op} {b}", d, a.scalar

    def stmt_binary(self) -> None:
        r = self.binary()
        if r is not None:
            expr, d, scalar = r
            self.add("s" if scalar else "v", expr, d, scalar)

    def stmt_unary(self) -> None:
        a = self.value()
        if a is None:
            return
        fn = self.pick(["tl.exp", "tl.log", "tl.sqrt", "tl.abs", "-", "tl.sin", "tl.rsqrt", "tl.exp2", "tl.log2",
                        "tl.floor", "tl.erf", "tl.cos", "tl.ceil", "tl.sigmoid", "tl.fma", "fp8"])
        self.features[f"op:{fn}"] += 1
        if fn == "tl.abs":
            self.add("s" if a.scalar else "v", f"tl.abs({a.name})", a.dtype, a.scalar)
        elif fn == "-":
            d = a.dtype if not a.dtype.startswith("u") else "int64"
            self.add("s" if a.scalar else "v", f"-({a.name}.to({TL[d]}))", d, a.scalar)
        elif fn == "tl.fma":
            self.add("s" if a.scalar else "v", f"tl.fma({a.name}.to(tl.float32), {a.name}.to(tl.float32), 1.0)",
                     "fp32", a.scalar)
        elif fn == "fp8":  # rounded through an fp8 format (saturating, as the GPU's satfinite conversion)
            fp8 = self.pick(FP8)
            self.features[f"cast:fp32->{fp8}"] += 1
            self.add("s" if a.scalar else "v", f"{a.name}.to(tl.float32).to({fp8}).to(tl.float32)", "fp32", a.scalar)
        elif fn == "tl.sigmoid":
            self.add("s" if a.scalar else "v", f"tl.sigmoid({a.name}.to(tl.float32))", "fp32", a.scalar)
        else:
            self.add("s" if a.scalar else "v", f"{fn}({a.name}.to(tl.float32))", "fp32", a.scalar)

    def stmt_cast(self) -> None:
        a = self.value()
        if a is None:
            return
        d = self.pick(DTYPES)
        self.features[f"cast:{a.dtype}->{d}"] += 1
        self.features["op:.to"] += 1
        self.add("s" if a.scalar else "v", f"{a.name}", d, a.scalar)

    def condition(self, a: Val) -> str:
        form = self.pick(["value", "lane", "pid", "nan"])
        if form == "lane" and not a.scalar:
            return f"lane < {self.pick(['2', '5', '8'])}"
        if form == "pid":
            return "pid % 2 == 0"
        if form == "nan" and a.dtype in FLOATS:
            return f"{a.name} != {a.name}"
        return f"{a.name} > {self.literal(a.dtype) if not a.dtype.startswith('u') else '1'}"

    def stmt_where(self) -> None:
        a = self.value()
        if a is None:
            return
        b = self.value(scalar=True if a.scalar else None) or a
        d = promote(a.dtype, b.dtype)
        self.features["op:tl.where"] += 1
        self.add("s" if a.scalar else "v", f"tl.where({self.condition(a)}, {a.name}, {b.name})", d, a.scalar)

    def stmt_minmax(self) -> None:
        a = self.value()
        if a is None:
            return
        b = self.value(scalar=True if a.scalar else None) or a
        fn = self.pick(["tl.maximum", "tl.minimum"])
        self.features[f"op:{fn}"] += 1
        d = promote(a.dtype, b.dtype)
        self.add("s" if a.scalar else "v", f"{fn}({a.name}, {b.name})", d, a.scalar)

    def stmt_reduce(self) -> None:
        a = self.value(scalar=False)
        if a is None:
            return
        fn = self.pick(["tl.sum", "tl.max", "tl.min", "tl.argmax", "tl.argmin", "tl.reduce:_add_combine",
                        "tl.reduce:_maxabs_combine", "tl.reduce:_mul_combine", "tl.reduce:_argmin_combine",
                        "tl.xor_sum"])
        self.features[f"op:{fn}"] += 1
        if fn == "tl.sum":
            self.add("s", f"tl.sum({a.name}, axis=0)", sum_dtype(a.dtype), True)
        elif fn in ("tl.max", "tl.min"):
            self.add("s", f"{fn}({a.name}, axis=0)", a.dtype, True)
        elif fn in ("tl.argmax", "tl.argmin"):
            self.add("s", f"{fn}({a.name}, axis=0)", "int32", True)
        elif fn == "tl.xor_sum":
            if a.dtype in FLOATS:
                self.add("s", f"tl.xor_sum({a.name}.to(tl.int32), axis=0)", "int32", True)
            else:
                self.add("s", f"tl.xor_sum({a.name}, axis=0)", a.dtype, True)
        elif fn == "tl.reduce:_argmin_combine":
            v = self.name("s")
            i = self.name("s")
            self.emit(f"{v}, {i} = tl.reduce(({a.name}, lane), 0, _argmin_combine)")
            self.pool += [Val(v, a.dtype, True), Val(i, "int32", True)]
        else:
            self.add("s", f"tl.reduce({a.name}, 0, {fn.split(':')[1]})", a.dtype, True)

    def stmt_scan(self) -> None:
        a = self.value(scalar=False)
        if a is None:
            return
        fn = self.pick(["tl.cumsum", "tl.cumprod", "tl.associative_scan:_add_combine",
                        "tl.associative_scan:_maxabs_combine", "tl.associative_scan:_mul_combine"])
        self.features[f"op:{fn}"] += 1
        reverse = self.draw(st.booleans())
        rev = ", reverse=True" if reverse else ""
        if reverse:
            self.features["scan:reverse"] += 1
        if fn in ("tl.cumsum", "tl.cumprod"):
            self.add("v", f"{fn}({a.name}, axis=0{rev})", sum_dtype(a.dtype), False)
        else:
            self.add("v", f"tl.associative_scan({a.name}, 0, {fn.split(':')[1]}{rev})", a.dtype, False)

    def stmt_rows(self) -> None:
        """A 2-D tile of the block (R x C): a reduction or scan along one axis, broadcast back to B lanes."""
        a = self.value(scalar=False)
        if a is None or self.B < 4:
            return
        r = self.pick([2, 4] if self.B >= 8 else [2])
        c = self.B // r
        axis = self.pick([1, 0])
        fn = self.pick(["tl.sum", "tl.max", "tl.cumsum", "tl.min"])
        self.features[f"op:{fn}(2-D)"] += 1
        tile = f"tl.reshape({a.name}, ({r}, {c}))"
        d = sum_dtype(a.dtype) if fn in ("tl.sum", "tl.cumsum") else a.dtype
        if fn == "tl.cumsum":
            self.add("v", f"tl.reshape(tl.cumsum({tile}, axis={axis}), ({self.B},))", d, False)
        else:
            self.add("v", f"tl.reshape(tl.broadcast_to({fn}({tile}, axis={axis}, keep_dims=True), ({r}, {c})), "
                     f"({self.B},))", d, False)

    def stmt_dot(self) -> None:
        d = self.pick(["fp32", "fp16"])
        k = len(self.dots)
        a, b, out = f"da{k}", f"db{k}", f"do{k}"
        self.dots.append((a, b, out, d, self.pick(["randn", "special", "big"])))
        self.features[f"op:tl.dot({d})"] += 1
        tile = "pid * 256 + r16[:, None] * 16 + r16[None, :]"
        ta = f"tl.load({a}_ptr + {tile})"
        s = self.value(scalar=True, kind="float")
        if s is not None and self.draw(st.booleans()):
            ta = f"({ta} * {s.name}).to({TL[d]})"
            self.features["dot:scaled"] += 1
        name = self.name("d")
        self.emit(f"{name} = tl.dot({ta}, tl.load({b}_ptr + {tile}))")
        self.emit(f"tl.store({out}_ptr + {tile}, {name})")
        form = self.pick(["sum", "max", "rows"])
        if form == "rows" and self.B == 16:
            self.add("v", f"tl.sum({name}, axis=1)", "fp32", False)
        elif form == "max":
            self.add("s", f"tl.max({name})", "fp32", True)
        else:
            self.add("s", f"tl.sum({name})", "fp32", True)

    def stmt_atomic(self) -> None:
        d = self.pick(["fp32", "int32", "int64"])
        op = self.pick(["add", "max", "min", "xchg", "cas", "add_ticket"])
        if op == "cas" or op == "xchg" and d == "fp32":  # Triton's interpreter: no float atomic_xchg (3.6-3.9)
            d = "int32"
        name = f"acc{len(self.accs)}"
        self.accs.append((name, d))
        self.features[f"op:tl.atomic_{op}({d})"] += 1
        used = self.draw(st.booleans())
        if op == "add_ticket":
            expr = f"tl.atomic_add({name}_ptr, 1)"
            scalar = True
            used = True
        elif op == "cas":
            expr = f"tl.atomic_cas({name}_ptr + pid % 2, pid % 3, pid + 1)"
            scalar = True
        else:
            v = self.value()
            if v is None:
                return
            scalar = v.scalar
            where = f"{name}_ptr + pid % 2" if scalar else f"{name}_ptr + lane % 4"
            mask = "" if scalar else self.pick(["", "offs < n", "lane % 3 == 0"])
            expr = f"tl.atomic_{op}({where}, {v.name}.to({TL[d]})" + (f", mask={mask})" if mask else ")")
            if mask and used:  # what a masked-off lane returns is undefined: keep it out of the outputs
                expr = f"tl.where({mask}, {expr}, 0)"
        if used:
            self.features["atomic:returned"] += 1
            self.add("t", expr, d, scalar)
        else:
            self.emit(expr)

    def stmt_lock(self) -> None:
        """A spin lock per group of programs (pid % K; K = 1: one for all) around a read-modify-write of the
        group's partial sums (Triton's layer-norm backward); now and then the store after the release (a race)."""
        v = self.value(scalar=False)
        if v is None:
            return
        k = self.pick(["1", "2", "4"])
        after = self.pick(["locked", "locked", "locked", "after"])
        lk, sh = f"lk{len(self.locks)}", f"sh{len(self.locks)}"
        self.locks.append((lk, sh))
        self.features[f"lock:{k}:{after}"] += 1
        group = f"{sh}_ptr + (pid % {k}) * B + lane"
        self.emit(f"while tl.atomic_cas({lk}_ptr + pid % {k}, 0, 1) == 1:")
        self.emit("    pass")
        self.emit(f"{sh}v = tl.load({group}) + {v.name}.to(tl.float32)")
        if after == "locked":
            self.emit(f"tl.store({group}, {sh}v)")
        self.emit(f"tl.atomic_xchg({lk}_ptr + pid % {k}, 0)")
        if after == "after":
            self.emit(f"tl.store({group}, {sh}v)")

    def stmt_store(self) -> None:
        """A store in the middle of the kernel: into an input (in place), or past the end of an output."""
        v = self.value()
        if v is None or not self.inputs:
            return
        form = self.pick(["inplace", "oob"])
        if v.scalar:
            x, d, _ = self.pick(self.inputs)
            self.emit(f"tl.store({x}_ptr + pid, {v.name}.to({TL[d]}))")
            self.features["store:scalar_inplace"] += 1
            return
        if form == "inplace":
            x, d, _ = self.pick(self.inputs)
            self.emit(f"tl.store({x}_ptr + offs, {v.name}.to({TL[d]}), mask=offs < n)")
        else:
            name = f"w{len(self.outputs)}"
            self.outputs.append((name, v.dtype, "n"))
            self.emit(f"tl.store({name}_ptr + offs + {self.pick(['1', '2'])}, {v.name}, mask=offs < n)")
        self.features[f"store:{form}"] += 1

    def accumulate(self) -> None:
        """Inside a loop: `t += term`, `t = t + term` or a recurrence `t = t * scale + term` (what loop_lanes folds),
        the term from the pool, a load at the loop's offset, or with the loop's counter in it."""
        t = self.fold_into if self.fold_into is not None and self.draw(st.booleans()) else self.value()
        if t is None:
            return
        form = self.pick(["value", "load", "counter"])
        if form == "load":
            x, d = self.input()
            term = f"tl.load({x}_ptr + pid + i)" if t.scalar else \
                f"tl.load({x}_ptr + offs + i, mask=offs + i < n, other=0)"
        elif t.scalar:  # a scalar's term: another scalar (a block would make the accumulator one)
            a = self.value(scalar=True)
            if a is None:
                return
            term = f"{a.name} {self.pick(['+', '*', '-'])} i" if form == "counter" else a.name
        else:
            others = [v for v in self.pool if v is not t]  # mostly a term that does not read the accumulator
            r = self.binary(target=self.pick(others) if others and self.draw(st.integers(0, 3)) else None)
            if r is None:
                return
            term = f"({r[0]}) {self.pick(['+', '*', '-'])} i" if form == "counter" else r[0]
        update = self.pick(["+=", "-=", "= +", "= -", "= *+", "= s*+"])  # `t = t + term`: the interpreter wraps it
        if update.endswith("*+"):  # a linear recurrence `t = t * scale + term` (the scale on either side)
            scale = self.scale(t)
            dt = TL[t.dtype]
            product = f"{t.name} * ({scale}).to({dt})" if update == "= *+" else f"({scale}).to({dt}) * {t.name}"
            self.emit(f"{t.name} = {product} + ({term}).to({dt})")
            self.features[f"loop:recurrence:{update[2:]}"] += 1
        elif update.startswith("="):
            self.emit(f"{t.name} = {t.name} {update[2]} ({term}).to({TL[t.dtype]})")
        else:
            self.emit(f"{t.name} {update} ({term}).to({TL[t.dtype]})")
        self.features[f"loop:accumulate:{form}"] += 1

    def scale(self, t: Val) -> str:
        """A recurrence's scale: a constant, another value of the pool (a scalar beside a scalar accumulator), or a
        scalar loaded at the loop's offset (a scale per iteration)."""
        form = self.pick(["const", "value", "load"])
        if form == "value":
            v = self.value(scalar=True if t.scalar else None)
            if v is not None and v is not t:
                return v.name
        if form == "load":
            x, _ = self.input()
            return f"tl.load({x}_ptr + pid + i)"
        return self.pick(["0.5", "-1.25", "3.0", "0.99"])

    def reassign(self) -> bool:
        """Inside an `if` or a loop: an existing value gets a new one of its own dtype and shape."""
        t = self.value()
        if t is None:
            return False
        r = self.binary(target=t)
        if r is None:
            return False
        self.emit(f"{t.name} = ({r[0]}).to({TL[t.dtype]})")
        return True

    def body(self, loop: bool, lanes: bool = False) -> None:
        for _ in range(self.draw(st.integers(1, 2))):
            kinds = ["reassign"] + [k for k in ("atomic", "store", "lock") if k in self.STATEMENTS]
            kinds += ["load_acc", "accumulate"] if loop else []
            if lanes:  # a loop that carries only accumulators: what loop_lanes runs as lanes
                kinds = ["accumulate", "accumulate"] + [k for k in ("atomic", "store") if k in self.STATEMENTS]
            kind = self.pick(kinds)
            if kind == "reassign":
                self.reassign()
            elif kind == "accumulate":
                self.accumulate()
            elif kind == "atomic":
                mark = len(self.pool)
                self.stmt_atomic()
                del self.pool[mark:]  # defined in a branch: not used after it
            elif kind == "store":
                self.stmt_store()
            elif kind == "lock":
                self.stmt_lock()
            else:
                t = self.value(scalar=False)
                if t is not None:
                    x, d = self.input()
                    self.emit(f"{t.name} = ({t.name} + tl.load({x}_ptr + offs + i, mask=offs + i < n, other=0)"
                              f").to({TL[t.dtype]})")
                    self.features["loop:load"] += 1
        if not self.lines[-1].strip() or self.lines[-1].endswith(":"):
            self.emit("pass")

    def stmt_if(self) -> None:
        form = self.pick(["pid", "value", "loaded", "pid_axis"])
        if form == "value":
            s = self.value(scalar=True)
            if s is None:
                form = "pid"
            else:
                cond = f"{s.name} > {'1' if s.dtype.startswith('u') else '0'}"
        if form == "loaded":
            expr, d = self.scalar_load()
            cond = f"{expr} > {'1' if d.startswith('u') else '0'}"
        if form == "pid":
            cond = f"pid % {self.pick(['2', '3'])} == {self.pick(['0', '1'])}"
        if form == "pid_axis":
            cond = f"tl.program_id({self.pick(self.axes)}) == {self.pick(['0', '1'])}"
        self.features[f"if:{form}"] += 1
        self.emit(f"if {cond}:")
        self.indent += 1
        self.body(loop=False)
        self.indent -= 1
        if self.draw(st.booleans()):
            self.features["if:else"] += 1
            self.emit("else:")
            self.indent += 1
            self.body(loop=False)
            self.indent -= 1

    def stmt_loop(self) -> None:
        form = self.pick(["pid", "const", "pid_start", "pid_slice", "loaded"])
        if form == "pid":
            rng = f"range(0, pid % {self.pick(['2', '3', '4'])} + 1)"
        elif form == "const":
            rng = f"range(0, {self.pick(['2', '3'])})"
        elif form == "pid_start":
            rng = "range(pid % 3, 3)"
        elif form == "pid_slice":  # split-K's form: the start differs between programs, the trip count does not
            k = self.pick(["2", "3"])
            rng = f"range(pid % 3 * {k}, pid % 3 * {k} + 2)"
        else:
            x, d = self.input(dtype=self.pick(["int32", "int8", "uint8"]))
            rng = f"range(0, tl.load({x}_ptr + pid) % 3)"
        # Loops carrying accumulators only run as lanes: programs agreeing on the trip count in chunks, programs
        # that disagree (pid, pid_start, loaded: a trip count of 0 too) in one ragged chunk
        lanes = self.draw(st.booleans())
        self.features[f"loop:{form}"] += 1
        self.features["loop:accumulators_only"] += lanes
        if lanes and self.draw(st.booleans()):
            self.fold_into = self.add("acc", "tl.zeros((B,), dtype=tl.float32)", "fp32", False)
            self.features["loop:fp32_accumulator"] += 1
        self.emit(f"for i in {rng}:")
        self.indent += 1
        self.body(loop=True, lanes=lanes)
        self.indent -= 1
        self.fold_into = None

    def stmt_return(self) -> None:
        if self.draw(st.booleans()) or not self.pool:
            cond = f"pid % {self.pick(['2', '3', '5'])} == {self.pick(['1', '0'])}"
            self.features["return:pid"] += 1
        else:
            expr, d = self.scalar_load()
            cond = f"{expr} < {'1' if d.startswith('u') else '0'}"
            self.features["return:loaded"] += 1
        nested = self.pick(["", "B > 2", "B < 2"])  # inside a constexpr `if` (taken, or not): Liger's form
        if nested:
            self.features[f"return:in_constexpr_if{'_taken' if nested == 'B > 2' else ''}"] += 1
            self.emit(f"if {nested}:")
            self.indent += 1
        self.emit(f"if {cond}:")
        self.emit("    return")
        if nested:
            self.indent -= 1

    STATEMENTS = ["binary", "unary", "cast", "load", "where", "minmax", "reduce", "scan", "rows", "dot", "atomic",
                  "if", "loop", "return", "store", "lock"]

    def kernel(self) -> Kernel:
        draw = self.draw
        self.B = draw(st.sampled_from([8, 16, 4, 32, 64]))
        ndim = draw(st.integers(1, 3))
        grid = [draw(st.integers(1, 8))]
        if ndim >= 2:
            grid.append(draw(st.integers(1, max(1, min(8, 32 // grid[0])))))
        if ndim == 3:
            grid.append(draw(st.integers(1, max(1, min(8, 32 // (grid[0] * grid[1]))))))
        self.axes = [str(a) for a in range(ndim)]
        programs = 1
        for g in grid:
            programs *= g
        total = programs * self.B
        n = total - draw(st.integers(0, self.B))
        seed = draw(st.integers(0, 2**16))
        self.features[f"grid:{ndim}-D"] += 1
        self.features[f"block:{self.B}"] += 1
        pid = "tl.program_id(0)"
        if ndim >= 2:
            pid += f" + tl.program_id(1) * {grid[0]}"
        if ndim == 3:
            pid += f" + tl.program_id(2) * {grid[0] * grid[1]}"
        self.emit(f"pid = {pid}")
        self.emit("lane = tl.arange(0, B)")
        self.emit("offs = pid * B + lane")
        self.emit("r16 = tl.arange(0, 16)")
        self.stmt_load()
        statements = draw(st.integers(1, 10))
        for _ in range(statements):
            kind = draw(st.sampled_from(self.STATEMENTS))
            self.features[f"statement:{kind}"] += 1
            getattr(self, f"stmt_{kind}")()
        # Every value the kernel made reaches an output: vectors under the kernel's mask, scalars at [pid].
        for v in self.pool:
            out = f"o{v.name}"
            if v.scalar:
                self.outputs.append((out, v.dtype, str(programs)))
                self.emit(f"tl.store({out}_ptr + pid, {v.name})")
            else:
                self.outputs.append((out, v.dtype, "n"))
                self.emit(f"tl.store({out}_ptr + offs, {v.name}, mask=offs < n)")
        return self.module(grid, n, total, programs, seed, statements)

    def module(self, grid, n, total, programs, seed, statements) -> Kernel:
        tensors = ([f"{x}" for x, _, _ in self.inputs] + [a for a, _, _, _, _ in self.dots]
                   + [b for _, b, _, _, _ in self.dots] + [o for _, _, o, _, _ in self.dots]
                   + [a for a, _ in self.accs] + [t for pair in self.locks for t in pair]
                   + [o for o, _, _ in self.outputs])
        params = ", ".join(f"{t}_ptr" for t in tensors)
        # Two launches of the kernel on fresh tensors of the same shapes: the first with every input drawn from
        # randn, the second with the fills drawn for it (NaN/Inf, huge, uninitialised, ...). The batched engine
        # replays the second from a recording of the first where it can (launch_replay.py; TDEBUG_REPLAY=eager),
        # or gives the replay up where a check would find something: both against the serial engine's two runs.
        src = ["@triton.jit", f"def fuzz_kernel({params}, n, B: tl.constexpr):", *self.lines, "", "",
               "def launch(g, clean):"]
        for x, d, fill in self.inputs:
            src.append(f"    {x} = _fill(g, 'randn' if clean else {fill!r}, {TORCH[d]}, {total})")
        for a, b, o, d, fill in self.dots:
            src.append(f"    {a} = _fill(g, 'randn' if clean else {fill!r}, {TORCH[d]}, {programs * 256})")
            src.append(f"    {b} = _fill(g, 'randn', {TORCH[d]}, {programs * 256})")
            src.append(f"    {o} = torch.empty({programs * 256})")
        for a, d in self.accs:
            src.append(f"    {a} = torch.zeros(4, dtype={TORCH[d]})")
        for lk, sh in self.locks:
            src.append(f"    {lk} = torch.zeros(4, dtype=torch.int32)")
            src.append(f"    {sh} = _fill(g, 'randn', torch.float32, {4 * self.B})")
        for o, d, size in self.outputs:
            size = n if size == "n" else size
            if d == "uint32":  # not poisoned by torch.empty: its garbage would differ run to run
                src.append(f"    {o} = torch.full(({size},), 0xA5A5A5A5, dtype=torch.uint32)")
            else:
                src.append(f"    {o} = torch.empty({size}, dtype={TORCH[d]})")
        src.append(f"    fuzz_kernel[{tuple(grid)}]({', '.join(tensors)}, {n}, B={self.B})")
        src.append(f"    return [{', '.join(tensors)}]")
        src += ["", "", "def scenario(seed):", "    g = torch.Generator().manual_seed(seed)",
                "    return launch(g, True) + launch(g, False)"]
        dtypes = ({x: TORCH[d] for x, d, _ in self.inputs} | {a: TORCH[d] for a, _, _, d, _ in self.dots}
                  | {b: TORCH[d] for _, b, _, d, _ in self.dots} | {o: "torch.float32" for _, _, o, _, _ in self.dots}
                  | {a: TORCH[d] for a, d in self.accs} | {o: TORCH[d] for o, d, _ in self.outputs}
                  | {lk: "torch.int32" for lk, _ in self.locks} | {sh: "torch.float32" for _, sh in self.locks})
        return Kernel("\n".join(src) + "\n", seed, self.features, statements,
                      [(f"{t}@{i}", dtypes[t]) for i in (1, 2) for t in tensors])


@st.composite
def kernels(draw) -> Kernel:
    return Writer(draw).kernel()


HEADER = ('"""A kernel written by tests/cpu/data/kernel_fuzz.py."""\n\n'
          "import torch\nimport triton\nimport triton.language as tl\n")


def module_source(kernel: Kernel) -> str:
    return HEADER + PRELUDE + "\n\n" + kernel.source


_FOLDER: list[Path] = []


def load(kernel: Kernel):
    """Import the kernel's module from a file (a fresh name per source: @triton.jit reads the file)."""
    if not _FOLDER:
        _FOLDER.append(Path(tempfile.mkdtemp(prefix="tdebug-fuzz-")))
    text = module_source(kernel)
    digest = hashlib.sha1(text.encode()).hexdigest()[:16]
    path = _FOLDER[0] / f"fuzz_{digest}.py"
    path.write_text(text)
    name = f"tdebug_fuzz_{digest}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def kernel_lines(kernel: Kernel) -> int:
    """How many lines the kernel's body has (its size, after shrinking)."""
    lines = kernel.source.split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith("def fuzz_kernel"))
    return lines.index("", start) - start - 1


def shrink_lines(kernel: Kernel, keep, deadline: float) -> Kernel:
    """Delete lines of the kernel's body (a line with the block it opens) while `keep` holds: what hypothesis's
    shrinking of the draws left that the disagreement does not need. A deletion that makes the kernel invalid
    (a name no longer defined) makes both engines fail alike, so `keep` refuses it."""
    lines = kernel.source.split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith("def fuzz_kernel")) + 1
    progress = True
    while progress and time.perf_counter() < deadline:
        progress = False
        end = lines.index("", start)
        for i in range(end - 1, start - 1, -1):
            if i >= len(lines) or not lines[i].strip() or time.perf_counter() > deadline:
                continue
            indent = len(lines[i]) - len(lines[i].lstrip())
            j = i + 1
            while j < len(lines) and lines[j].strip() and (len(lines[j]) - len(lines[j].lstrip()) > indent or (
                    lines[i].strip().startswith("if ") and lines[j].strip() == "else:"
                    and len(lines[j]) - len(lines[j].lstrip()) == indent)):
                j += 1
            if lines[i].strip() == "else:":
                continue
            candidate = lines[:i] + lines[j:]
            # a block left empty gets a `pass`
            if candidate[i - 1].rstrip().endswith(":") and (
                    i >= len(candidate) or len(candidate[i]) - len(candidate[i].lstrip()) <= indent - 4
                    or not candidate[i].strip()):
                candidate = candidate[:i] + [" " * indent + "pass"] + candidate[i:]
                if lines[i].strip() == "pass":
                    continue
            smaller = Kernel("\n".join(candidate), kernel.seed, Counter(), kernel.statements, kernel.tensors)
            try:
                kept = keep(smaller)
            except Exception:  # noqa: BLE001 - a deletion that breaks the module's syntax
                kept = False
            if kept:
                lines, kernel, progress = candidate, smaller, True
    kernel.statements = kernel_lines(kernel)
    return kernel


# Errors of the generator, not the engines: a kernel Triton's front end refuses (both engines would agree).
INVALID = ("CompilationError", "unexpected type", "Expected dtype", "Cannot ", "cannot ", "out of range for type",
           "incompatible", "Unsupported", "not supported", "NameError", "SyntaxError")


def invalid(error: str) -> bool:
    return any(s in error for s in INVALID) and "OverflowError" not in error


@dataclass
class Outcome:
    kernel: Kernel
    what: list[str]  # the keys that differ
    serial: dict
    batched: dict
    seconds: float

    def tensors_differing(self) -> list[tuple[str, str, int, list, list]]:
        """(name, dtype, elements differing, first serial values, first batched values) per differing output."""
        import torch

        out = []
        sa, sb = self.serial["out"], self.batched["out"]
        if not isinstance(sa, list) or not isinstance(sb, list) or len(sa) != len(sb):
            return [("?", "?", -1, [str(sa)[:100]], [str(sb)[:100]])]
        for (name, dtype), a, b in zip(self.kernel.tensors, sa, sb):
            if torch.equal(a, b):
                continue
            dt = eval(dtype, {"torch": torch})  # noqa: S307 - one of TORCH's names
            va, vb = a.view(dt), b.view(dt)
            diff = (a.view(-1, dt.itemsize) != b.view(-1, dt.itemsize)).any(1).nonzero().flatten()
            out.append((name, dtype.split(".")[1], len(diff), [va[i].item() for i in diff[:4]],
                        [vb[i].item() for i in diff[:4]], diff[:4].tolist()))
        return out

    def signature(self) -> str:
        """The class of a disagreement, the first of: the error (which exceptions), the findings (the checks
        whose findings differ), the outputs (the first kind of tensor that differs: an atomic's accumulator, an
        atomic's return value, a dot's tile, a scalar, a vector, an input stored in place, a store past the end),
        the store records. Shrinking keeps a kernel in its class."""
        import re

        if "planted" in self.what:
            return "planted"
        if "error" in self.what:
            ea, eb = (self.serial["error"].split(":")[0], self.batched["error"].split(":")[0])
            return f"error[{ea or '-'}/{eb or '-'}]"
        if "findings" in self.what:
            sa = Counter(json.loads(f)["check"] for f in self.serial["findings"])
            sb = Counter(json.loads(f)["check"] for f in self.batched["findings"])
            checks = sorted(c for c in set(sa) | set(sb)
                            if sorted(f for f in self.serial["findings"] if json.loads(f)["check"] == c)
                            != sorted(f for f in self.batched["findings"] if json.loads(f)["check"] == c))
            return f"findings[{','.join(checks)}]"
        if "out" in self.what:
            kinds = {re.sub(r"\d+$", "", t[0].split("@")[0]) for t in self.tensors_differing()}
            for kind in ("acc", "ot", "do", "os", "ov", "x", "w"):
                if kind in kinds:
                    return f"out[{kind}]"
            return f"out[{','.join(sorted(kinds))}]"
        return ",".join(self.what)

    def summary(self) -> str:
        lines = [f"{self.signature()} (seed {self.kernel.seed}, {self.kernel.statements} statements)"]
        for key in self.what:
            if key == "out":
                for name, dtype, count, va, vb, where in self.tensors_differing():
                    lines.append(f"  {name} ({dtype}): {count} elements differ, at {where}: serial {va}, "
                                 f"batched {vb}")
            elif key == "findings":
                a, b = set(self.serial["findings"]), set(self.batched["findings"])
                for f in sorted(a - b)[:3]:
                    lines.append(f"  serial only: {f[:400]}")
                for f in sorted(b - a)[:3]:
                    lines.append(f"  batched only: {f[:400]}")
            elif key in self.serial:
                lines.append(f"  {key}: serial {str(self.serial[key])[:300]}")
                lines.append(f"  {key}: batched {str(self.batched[key])[:300]}")
        return "\n".join(lines)


PLANT = bool(os.environ.get("TDEBUG_FUZZ_PLANT"))


class Runner:
    """Runs kernels under both engines in this process (patches, store records and a sanitizer installed once)."""

    def __init__(self) -> None:
        from tdebug.interpreter import patches
        from tdebug.interpreter.hooks import stores
        from tdebug.sanitize.session import SanitizerSession

        patches.install()
        stores.install()
        self.session = SanitizerSession()
        self.session.install()
        self.tried = 0
        self.invalid: list[tuple[str, str]] = []
        self.coverage: Counter = Counter()
        self.seen: set[str] = set()
        self.memo: dict[str, Outcome] = {}

    def outcome(self, kernel: Kernel) -> Outcome:
        key = f"{kernel.seed}\n{kernel.source}"
        if key in self.memo:
            return self.memo[key]
        import warnings

        start = time.perf_counter()
        module = load(kernel)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            a = run_scenario(module.scenario, kernel.seed, self.session, "serial")
            chunks, refused = grid_loop.STATS.lane_chunks, grid_loop.STATS.lanes_refused
            folds = grid_loop.STATS.lane_folds
            b = run_scenario(module.scenario, kernel.seed, self.session, "batched")
        self.tried += 1
        if key not in self.seen:
            self.seen.add(key)
            self.coverage.update(kernel.features)
            # what the batched engine did with it: loops run as lanes (loop_lanes.py), lanes given up
            self.coverage.update({"engine:lanes": int(grid_loop.STATS.lane_chunks > chunks),
                                  "engine:lanes_refused": int(grid_loop.STATS.lanes_refused > refused),
                                  "engine:lane_folds": int(grid_loop.STATS.lane_folds > folds),
                                  # its second launch replayed from a recording of its first (launch_replay.py)
                                  "engine:replayed": int(b["replays"] > 0),
                                  "engine:replay_given_up": int(b["replay_aborts"] > 0)})
        if invalid(a["error"]) and kernel.features:  # line shrinking makes invalid kernels on purpose
            self.invalid.append((a["error"][:300], kernel.source))
        what = differences(a, b)
        if PLANT:  # the fuzzer's own test: a made-up difference in every kernel with a tl.sum, nothing else
            what = ["planted"] if "tl.sum(" in kernel.source else []
        out = Outcome(kernel, what, a, b, time.perf_counter() - start)
        if len(self.memo) < 4096:
            self.memo[key] = out
        return out


def check_examples(examples: int, seed: int) -> dict:
    """hypothesis's @given over `examples` kernels, derandomized by `seed`, shrinking a disagreement (at most
    SHRINK_SECONDS of it). Returns the report: kernels tried, invalid kernels, the minimal disagreement."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hypothesis_seed

    runner = Runner()
    found: list[Outcome] = []
    started = time.perf_counter()
    budget = [None]

    @hypothesis_seed(seed)
    @settings(max_examples=examples, database=None, deadline=None, print_blob=False, report_multiple_bugs=False,
              suppress_health_check=list(HealthCheck), phases=[Phase.generate, Phase.shrink])
    @given(kernels())
    def prop(kernel: Kernel) -> None:
        if budget[0] is not None and time.perf_counter() > budget[0]:
            key = f"{kernel.seed}\n{kernel.source}"
            if key not in runner.memo:  # shrinking ran out of time: only the examples already seen fail again
                return
        o = runner.outcome(kernel)
        if o.what:
            if budget[0] is None:
                budget[0] = time.perf_counter() + SHRINK_SECONDS
            if not found or len(o.kernel.source) < len(found[-1].kernel.source):
                found.append(o)
            raise AssertionError(o.summary())

    failure = ""
    try:
        prop()
    except AssertionError as e:
        failure = str(e)[:2000]
    minimal = found[-1] if found else None
    if minimal is not None:  # then delete the lines the disagreement does not need
        sig = minimal.signature()
        kernel = shrink_lines(minimal.kernel, lambda k: runner.outcome(k).signature() == sig,
                              time.perf_counter() + SHRINK_SECONDS / 2)
        minimal = runner.outcome(kernel)
    return {"tried": runner.tried, "seconds": round(time.perf_counter() - started, 1),
            "invalid": runner.invalid[:5], "invalid_count": len(runner.invalid),
            "coverage": dict(runner.coverage),
            "disagreement": None if minimal is None else {
                "what": minimal.what, "signature": minimal.signature(), "summary": minimal.summary(),
                "source": module_source(minimal.kernel), "seed": minimal.kernel.seed},
            "failure": failure}


SHRINK_SECONDS = 20.0


def main(argv: list[str]) -> int:
    examples, seed = 30, 0
    if "--examples" in argv:
        examples = int(argv[argv.index("--examples") + 1])
    if "--seed" in argv:
        seed = int(argv[argv.index("--seed") + 1])
    print(json.dumps(check_examples(examples, seed)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
