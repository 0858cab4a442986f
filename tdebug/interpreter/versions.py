"""The one place that knows Triton's internals per version: every patch of an interpreter, autotuner or
language object goes through `patch` in a named layer (LAYERS: the one order of tdebug's wrappers on an
internal, innermost first), wrappers read a call's arguments by name through `bind`, and
INTERNALS lists, per Triton release, each internal tdebug patches and the parameters it binds by name
(tests/cpu/test_versions.py checks the table against the running Triton, so a changed internal fails
that one test instead of every launch). What changed between 3.6 and 3.9: /work/notes/versions-survey.md.
"""

from __future__ import annotations

import fnmatch
import importlib
import importlib.metadata
import inspect
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .frames import raised_in_tdebug


def _version_tuple(text: str) -> tuple[int, ...]:
    parts = []
    for piece in text.split("+")[0].split(".")[:3]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


def _installed_triton() -> str:
    """The installed Triton's version, read from its metadata: no `import triton` (the CLI's parent
    process names the version in messages without paying for Triton's import)."""
    try:
        return importlib.metadata.version("triton")
    except importlib.metadata.PackageNotFoundError:
        import triton

        return triton.__version__


TRITON_VERSION: str = _installed_triton()
TRITON: tuple[int, ...] = _version_tuple(TRITON_VERSION)
SUPPORTED = "3.6.0 to 3.9.0"  # the releases tdebug is tested on (pyproject: triton>=3.6,<3.10)
# triton-viz 3.0 (the newest) imports with these; from 3.8 on its op table names the block-pointer
# builder methods Triton removed ('InterpreterBuilder' object has no attribute 'create_make_block_ptr').
TRITON_VIZ_TRITONS = "3.6 and 3.7"
TRITON_VIZ_UNTIL = (3, 8)


def triton_label() -> str:
    """'Triton 3.9.0': how messages name the running version."""
    return f"Triton {TRITON_VERSION}"


class InternalError(RuntimeError):
    """tdebug itself failed (not the kernel): reported as tdebug's, exit code 3."""


@dataclass(frozen=True)
class Internal:
    """One Triton internal tdebug patches: where it lives, the parameters wrappers use by name, and the
    releases that have it (since inclusive, until exclusive). A name with `*` is a family (every builder
    math op, every libdevice function): tdebug patches the members the running Triton has, and each member
    it patched must take the parameters in `binds`."""

    owner: str  # a key of OWNERS
    name: str
    binds: tuple[str, ...] = ()
    since: tuple[int, ...] = (3, 6)
    until: tuple[int, ...] | None = None

    @property
    def key(self) -> str:
        return f"{self.owner}.{self.name}"

    def applies(self, version: tuple[int, ...] = TRITON) -> bool:
        return version >= self.since and (self.until is None or version < self.until)


def _triton():
    import triton

    return triton


def _interpreter():
    from triton.runtime import interpreter

    return interpreter


def _autotuner():
    from triton.runtime import autotuner

    return autotuner


# Owner labels -> the object holding the attribute (resolved lazily: the interpreter module is imported
# only once TRITON_INTERPRET is set).
OWNERS: dict[str, Callable[[], Any]] = {
    "InterpreterBuilder": lambda: _interpreter().interpreter_builder,
    "GridExecutor": lambda: _interpreter().GridExecutor,
    "InterpretedFunction": lambda: _interpreter().InterpretedFunction,
    "FunctionRewriter": lambda: _interpreter().FunctionRewriter,
    "triton.runtime.interpreter": _interpreter,
    "Autotuner": lambda: _autotuner().Autotuner,
    "ReduceOps": lambda: _interpreter().ReduceOps,
    "ScanOps": lambda: _interpreter().ScanOps,
    "ReduceScanOpInterface": lambda: _interpreter().ReduceScanOpInterface,
    "BlockPointerHandle": lambda: _interpreter().BlockPointerHandle,
    "TensorDescHandle": lambda: _interpreter().TensorDescHandle,
    "triton": _triton,
    "TritonSemantic": lambda: importlib.import_module("triton.language.semantic").TritonSemantic,
    "tensor": lambda: importlib.import_module("triton.language.core").tensor,
    "tuple": lambda: importlib.import_module("triton.language.core").tuple,
    # libdevice: the backend-independent stub and the backends' own modules (their functions are replaced).
    "triton.language.extra.libdevice": lambda: importlib.import_module("triton.language.extra.libdevice"),
    "triton.language.extra.cuda.libdevice": lambda: importlib.import_module("triton.language.extra.cuda.libdevice"),
    "triton.language.extra.hip.libdevice": lambda: importlib.import_module("triton.language.extra.hip.libdevice"),
}

_TABLE = [
    # Memory ops: every plain, block-pointer (3.6/3.7), descriptor and (3.9) atomic load/store ends in the
    # masked ones. 3.8 replaced (cache_modifier, eviction_policy) by cache_policy: use names only.
    Internal("InterpreterBuilder", "create_masked_load", ("ptrs", "mask")),
    Internal("InterpreterBuilder", "create_masked_store", ("ptrs", "value", "mask")),
    Internal("InterpreterBuilder", "create_atomic_rmw", ("ptr", "mask")),
    Internal("InterpreterBuilder", "create_atomic_cas", ("ptr", "cmp")),
    Internal("InterpreterBuilder", "create_load", ()),
    Internal("InterpreterBuilder", "create_store", ()),
    Internal("InterpreterBuilder", "create_assert", ("condition", "message")),
    # unsigned operands wrap (patches.py); front_end_shortcuts.py checks in numpy first
    Internal("TritonSemantic", "binary_op_sanitize_overflow_impl", ("self", "lhs", "rhs", "binary_op")),
    Internal("InterpreterBuilder", "set_grid_dim", ("nx", "ny", "nz")),
    Internal("InterpreterBuilder", "set_grid_idx"),  # the sanitizer's probes past the grid (unwritten)
    # Launches: host copies of the arguments, the grid loop, the way back.
    Internal("GridExecutor", "_init_args_hst", ("self", "args_dev", "kwargs")),
    Internal("GridExecutor", "_restore_args_dev", ("self", "args_dev", "args_hst", "kwargs", "kwargs_hst")),
    Internal("GridExecutor", "__call__", ("self",)),
    Internal("InterpretedFunction", "run", ("self", "warmup")),  # tdebug viz: one traced launch
    # A device function's call: launch_memo.py patches the language once per module per launch (not on every call),
    # recursion.py stops a runaway recursion.
    Internal("InterpretedFunction", "__call__", ("self",)),
    Internal("triton.runtime.interpreter", "_get_np_dtype", ("tt_dtype",)),  # launch_memo.py: memoised
    # Language patching per launch: 3.6's tl.tensor.__index__ breaks under numpy >= 2.4 (fixed in 3.7); the
    # batched engine's __index__/__bool__ on per-program values (program_axis.py).
    Internal("triton.runtime.interpreter", "_patch_lang_tensor", ("tensor", "scope")),
    # @triton.autotune: one pinned config instead of benchmarking on a GPU.
    Internal("Autotuner", "run", ("self",)),
    # --engine symbolic: every @triton.jit made afterwards wrapped by triton-viz.
    Internal("triton", "jit", ("fn",), until=TRITON_VIZ_UNTIL),
    # Real kernels (scalars.py, grid.py, libdevice.py, bf16.py, fma.py): typed scalar arguments, grids as
    # compiled Triton reads them, libdevice through numpy, exact bf16/fp8, a * b + c rounded once.
    Internal("triton.runtime.interpreter", "_implicit_cvt", ("arg",)),
    Internal("GridExecutor", "__init__", ("self", "grid")),
    Internal("InterpreterBuilder", "create_extern_elementwise", ("symbol", "retType", "argList")),
    Internal("InterpreterBuilder", "create_f*"),  # fadd, fmul, fcmp*, fp_to_fp, fp_trunc, ... (bf16.py, fma.py)
    Internal("InterpreterBuilder", "create_[su]i_to_fp", ("src", "dst_type")),
    Internal("InterpreterBuilder", "create_fp_to_*", ("src", "dst_type")),
    Internal("InterpreterBuilder", "create_*f"),  # minimumf, maximumf, clampf, precise_divf, approx_divf
    Internal("InterpreterBuilder", "create_*"),  # the math ops: cos, sin, exp, exp2, log, log2, sqrt, erf, ...
    Internal("InterpreterBuilder", "create_dot", ("a", "b", "d", "input_precision")),
    Internal("InterpreterBuilder", "cast_impl", ("src", "dst_type")),  # every int/float cast (casts.py)
    # Issue 19: builtins bound to module-level names (aliases.py), block-pointer and descriptor masks
    # (block_pointers.py; 3.8 lowered tl.make_block_ptr onto tensor descriptors), pointer tables
    # (create_int_to_ptr: a create_* member), spin locks (atomic_cas / atomic_rmw, listed above).
    Internal("triton.runtime.interpreter", "_patch_lang", ("fn",)),
    Internal("triton.runtime.interpreter", "_patch_attr", ("obj", "name", "member", "builder", "scope")),  # op_memo
    Internal("triton.runtime.interpreter", "_patch_builtin", ("pkg", "builder", "scope")),  # launch_memo: listed once
    Internal("BlockPointerHandle", "materialize_pointers", ("self", "boundary_check"), until=(3, 8)),
    Internal("TensorDescHandle", "materialize_pointers", ("self",)),
    Internal("ReduceOps", "*"),
    Internal("ReduceScanOpInterface", "apply"),  # the nan check follows NaN/Inf through reductions
    # The batched engine (program_axis.py): a reduction's result typed as one program's part.
    Internal("ReduceScanOpInterface", "to_tensor", ("self", "ret", "dtype")),
    Internal("ScanOps", "*"),
    Internal("triton.language.extra.libdevice", "*"),
    Internal("triton.language.extra.cuda.libdevice", "*"),
    Internal("triton.language.extra.hip.libdevice", "*"),
    # Issue 26: `and`/`or`/`not`/`if` on tensors as the code generator reads them (boolops.py); a dtype
    # passed between jit functions has a constexpr's `.value` (constexprs.py, through _patch_lang above).
    Internal("FunctionRewriter", "_transform_ast", ("self",)),
    Internal("FunctionRewriter", "_get_jit_fn_file_line", ("self",)),  # launch_memo.py: from linecache's lines
    # Overflow followed to addresses and stores (overflow.py): the integer ops (create_* above) and
    Internal("InterpreterBuilder", "create_addptr", ("ptr", "offset")),
    # Triton's per-op front end, shortcut where the result is known (front_end_shortcuts.py); called positionally.
    Internal("tensor", "__init__", ("self", "handle", "type")),
    Internal("TritonSemantic", "cast", ("self", "input", "dst_ty", "fp_downcast_rounding")),
    Internal("TritonSemantic", "broadcast_impl_value", ("self", "lhs", "rhs")),
    Internal("TritonSemantic", "binary_op_type_checking_impl", ("self", "lhs", "rhs", "allow_lhs_ptr", "allow_rhs_ptr",
                                                                "arithmetic_check", "div_or_mod")),
    # Issue 48: Triton 3.6's tl.tuple answers getattr of a name it lacks with ValueError (3.9: AttributeError),
    # which breaks getattr(x, name, default) on a tuple of shapes; all-ones of an unsigned type built as -1;
    # a dot whose accumulator type out_dtype does not give fails on a bare assert.
    Internal("tuple", "__getattr__", ("self", "name")),
    Internal("InterpreterBuilder", "get_all_ones_value", ("type",)),
    Internal("InterpreterBuilder", "get_*"),  # a recording sees each constant a kernel makes (launch_replay.py)
    Internal("TritonSemantic", "dot", ("self", "lhs", "rhs", "acc")),
    Internal("InterpreterBuilder", "create_gather", ("src", "indices", "axis")),
    Internal("TritonSemantic", "computation_type_impl", ("self", "a_ty", "a_is_scalar", "b_ty", "b_is_scalar",
                                                         "div_or_mod")),
]
INTERNALS: dict[str, Internal] = {i.key: i for i in _TABLE}

# Attributes tdebug reads (not patches), checked by the same test. The builder's grid_idx/grid_dim are
# checked on a fresh builder after set_grid_dim/set_grid_idx, which create them.
READS: dict[str, tuple[str, ...]] = {
    "InterpreterBuilder": ("grid_idx", "grid_dim", "options"),
    "Autotuner": ("prune_configs",),
    "triton.runtime.interpreter": ("TensorHandle", "interpreter_builder", "_tuple_create", "InterpretedFunction",
                                   "_LangPatchScope", "_unwrap_tensor", "TensorDescriptor"),
}


def owner_label(owner: Any) -> str:
    if isinstance(owner, types.ModuleType):
        return owner.__name__
    if isinstance(owner, type):
        return owner.__name__
    return type(owner).__name__


FAULTS: list[BaseException] = []  # errors raised by tdebug's own code inside a patch (take_faults)


def forget_fault(error: BaseException) -> None:
    """Drop an error (and the errors it was raised from) from FAULTS: the engine ran the work again without it."""
    chain: list[BaseException] = []
    while error is not None and all(error is not e for e in chain):
        chain.append(error)
        error = error.__cause__ or error.__context__
    FAULTS[:] = [f for f in FAULTS if all(f is not e for e in chain)]


def take_faults() -> list[BaseException]:
    """The errors tdebug's patches raised since the last call (a script may have caught them)."""
    faults = list(FAULTS)
    FAULTS.clear()
    return faults


# The layers tdebug stacks on Triton's internals, innermost first: where two layers patch one internal, the
# one listed first runs inside the other (is its `original`), whatever order they were installed in. Every
# patch names its layer (a module takes its `patch` from `patcher(LAYER)`), so the order in which a process
# wires its parts (child.py, viz/trace_child.py, pytest_plugin/runner.py, a followed child) cannot change
# what runs inside what.
LAYERS: tuple[str, ...] = (
    "probe",  # tests' probes of what reaches Triton itself
    "grid_loop",  # the launch's grid loop, serial or batched: the innermost wrapper of a launch
    "memory_guard",  # innermost around the memory ops: no lane outside its tensor reaches Triton's
    "batch_memory",  # a batch's loads and stores as numpy over the elements the checks resolved
    "provenance",  # which tensor a pointer was computed from
    "device_assert",  # tl.device_assert fires (patches.py)
    "autotune",  # one pinned config (patches.py)
    "launch_record",  # every launch recorded (patches.py)
    "device_tables",  # pointer tables of device addresses, on a GPU
    "scalars",
    "launch_setup",  # a launch set up from tables: its arguments' types, its kernel's constexprs (launch_memo.py)
    "compat",  # small differences from compiled Triton (compat.py)
    "grid",
    "libdevice",
    "casts",  # fp16 <-> fp32 through torch (cast_impl: no other layer)
    "bf16",
    "fma",  # wraps bf16's arithmetic
    "aliases",
    "launch_memo",  # its once-per-launch check wraps the alias patch
    "front_end_shortcuts",  # its overflow check runs inside tdebug's signed-only one (device_assert)
    "op_memo",  # the overflow checks run inside its recorded step
    "reduce_scan",  # a kernel's own combine function run on vectors (reduce_scan.py)
    "block_pointers",
    "boolops",
    "predicated_loops",  # rewrites the tree boolops rewrote
    "predicated_ifs",  # rewrites the ifs of the tree predicated_loops rewrote
    "loop_counters",  # wraps the loops predicated_loops left (loop_counters.py)
    "constexprs",
    "overflow",
    "recursion",
    "compiled",  # launches from torch.compile'd code run eagerly (over autotune's patch)
    "memory_events",  # the one wrapper of the memory ops: safe_launch, stores, nan, sanitizer, locks and trace listen
    "safe_launch",  # tdebug viz: a launch's accesses stay inside its tensors
    "stores",  # which program stored each element
    "nan",  # its store check sees the mask after the sanitizer cut the out-of-bounds lanes
    "sanitizer",  # bounds, race, uninit, unwritten (sanitize/session.py)
    "locks",
    "live",
    "symbolic",  # triton-viz's symbolic engine
    "divergence",  # on a GPU: each launch also runs compiled
    "limits",  # size caps: checked before the sanitizer makes its shadows
    "host_memory",  # a launch's turn for host memory (sanitize/admission.py), before its caps and shadows
    "repro",  # a reproducer per launch with findings: counts them before the follower hands them on
    "follow",  # launches in a script's threads and child processes
    "launch_clock",  # a launch's seconds, all of tdebug's work in it included (patches.py)
    "serialise",  # one launch at a time across threads: the outermost wrapper of a launch
    "trace",  # tdebug viz's traces
    "program_axis",  # every builder op batched: installed at the first batched launch
    "launch_replay",  # a launch recorded for replays sees every builder op the kernel makes (outermost)
    "test",  # tests' wrappers over everything
)
_RANK = {name: i for i, name in enumerate(LAYERS)}


@dataclass
class _Layer:
    rank: int
    make: Callable[[Callable], Callable]
    made: Callable | None  # make(the layer below it), once made


@dataclass
class _Stack:
    """tdebug's layers on one internal: what was there before them, and the guard now in its place."""

    base: Any
    layers: list[_Layer]
    guard: Any = None


# (id(owner), attribute name) -> (owner, name, the original), so tests can restore Triton as it was.
_ORIGINALS: dict[tuple[int, str], tuple[Any, str, Any]] = {}
_STACKS: dict[tuple[int, str], _Stack] = {}
PATCHED: set[str] = set()  # "Owner.name" of every patch made in this process (the test checks them)


def replaced() -> dict[int, Any]:
    """id of each tdebug replacement now in place -> the Triton object it stands in for."""
    out: dict[int, Any] = {}
    for owner, name, original in _ORIGINALS.values():
        now = getattr(owner, name, None)
        if now is not None and now is not original:
            out[id(now)] = original
    return out


def original_of(value: Any, table: dict[int, Any] | None = None) -> Any:
    """The Triton object a tdebug replacement stands in for (a kernel's global bound to a patched libdevice
    function, say), or the value itself when it replaces nothing. table: replaced(), when asking often."""
    return (replaced() if table is None else table).get(id(value), value)


def patcher(layer: str) -> Callable[[Any, str, Callable[[Callable], Callable]], Callable]:
    """`patch` for one layer of LAYERS: a module's `patch = patcher("nan")`."""
    if layer not in _RANK:
        raise InternalError(f"tdebug has no layer {layer!r} (versions.LAYERS)")

    def patch_in_layer(owner: Any, name: str, make: Callable[[Callable], Callable]) -> Callable:
        return patch(owner, name, make, layer=layer)

    return patch_in_layer


def patch(owner: Any, name: str, make: Callable[[Callable], Callable], *, layer: str) -> Callable:
    """Replace owner.name with make(original) and remember the original; returns the replacement.

    `layer` (one of LAYERS) says where this wrapper sits among tdebug's others on the same internal: a layer
    that comes in below ones already there has them made again over it. Every wrapper carries the original's
    signature, so the one above can `bind`; one guard, outermost, records errors raised in tdebug's code."""
    key = f"{owner_label(owner)}.{name}"
    internal = registered(key)
    if internal is not None and not internal.applies():
        raise InternalError(f"tdebug patches {key} only on Triton {_range(internal)}, not {TRITON_VERSION}")
    rank = _RANK.get(layer)
    if rank is None:
        raise InternalError(f"tdebug has no layer {layer!r} (versions.LAYERS)")
    try:
        current = getattr(owner, name)
    except AttributeError:
        raise InternalError(f"tdebug cannot patch {key}: {triton_label()} has no such attribute "
                            f"(tdebug supports Triton {SUPPORTED})") from None
    _ORIGINALS.setdefault((id(owner), name), (owner, name, current))
    PATCHED.add(key)
    stack = _STACKS.get((id(owner), name))
    if stack is None or current is not stack.guard:  # first patch, or something else replaced ours since
        stack = _STACKS[(id(owner), name)] = _Stack(current, [])
    signature = _signature(stack.base)
    at = sum(1 for below in stack.layers if below.rank <= rank)
    stack.layers.insert(at, _Layer(rank, make, None))
    for i in range(at, len(stack.layers)):  # the new layer, and the ones above it made again over it
        layer_i = stack.layers[i]
        layer_i.made = layer_i.make(stack.layers[i - 1].made if i else stack.base)
        try:
            layer_i.made.__signature__ = signature
        except AttributeError:  # not a plain function: binds by its own signature
            pass
    replacement = stack.layers[-1].made

    def guarded(*args, **kwargs):
        try:
            return replacement(*args, **kwargs)
        except Exception as exc:
            if raised_in_tdebug(exc) and all(exc is not f for f in FAULTS):
                FAULTS.append(exc)  # seen even if the user's script swallows it
            raise

    guarded.__signature__ = signature
    guarded.__name__ = guarded.__qualname__ = getattr(replacement, "__name__", name)
    # torch._dynamo.disable's marks (interpreter/semantics/compiled.py): dynamo reads them on the function it traces.
    guarded.__dict__.update({k: v for k, v in getattr(replacement, "__dict__", {}).items()
                             if k.startswith("_torchdynamo")})
    stack.guard = guarded
    setattr(owner, name, guarded)
    return guarded


def layers_of(owner: Any, name: str) -> list[str]:
    """The layers on owner.name now, innermost first (empty: not patched, or replaced since)."""
    stack = _STACKS.get((id(owner), name))
    if stack is None or getattr(owner, name, None) is not stack.guard:
        return []
    return [LAYERS[layer.rank] for layer in stack.layers]


class Call:
    """A call's arguments by name (what `bind` returns): read or replace `arguments[name]`, then call
    `original(*call.args, **call.kwargs)`. Like inspect.BoundArguments with defaults applied, built
    faster: memory ops are wrapped and bound on every load and store."""

    __slots__ = ("arguments", "_shape")

    def __init__(self, arguments: dict[str, Any], shape: _Shape) -> None:
        self.arguments = arguments
        self._shape = shape

    @property
    def args(self) -> tuple:
        return tuple(self.arguments[n] for n in self._shape.positional)

    @property
    def kwargs(self) -> dict[str, Any]:
        return {n: self.arguments[n] for n in self._shape.keyword_only}


@dataclass(frozen=True)
class _Shape:
    """A signature without *args/**kwargs, as the fast `bind` needs it."""

    positional: tuple[str, ...]
    keyword_only: tuple[str, ...]
    defaults: dict[str, Any]


def rewrite_jit_functions(layer: str, name: str, module: types.ModuleType, rewrite: Callable[[Any], Any],
                          unless: Callable[[], bool] | None = None) -> None:
    """Every @jit function the interpreter rewrites (FunctionRewriter._transform_ast) also goes through
    `rewrite(tree)`, in `layer` (not while `unless()` holds); the rewritten code reaches `module` by `name` in its
    globals."""
    from triton.runtime import interpreter

    def make(original: Callable) -> Callable:
        def _transform_ast(*args, **kwargs):
            tree = original(*args, **kwargs)
            if unless is not None and unless():
                return tree
            bind(original, args, kwargs).arguments["self"].fn.__globals__[name] = module
            return rewrite(tree)

        return _transform_ast

    patcher(layer)(interpreter.FunctionRewriter, "_transform_ast", make)


def bind(original: Callable, args: tuple, kwargs: dict) -> Call | inspect.BoundArguments:
    """A call's arguments by name, defaults applied, whatever the running version's signature is;
    call `original(*bound.args, **bound.kwargs)` after changing `bound.arguments[...]`."""
    sig = _signature(original)
    shape = _SHAPES.get(original)
    if shape is None:
        shape = _SHAPES[original] = _shape(sig)
    try:
        if shape is False:  # *args or **kwargs in the signature: inspect's general binding
            bound = sig.bind(*args, **kwargs)
            bound.apply_defaults()
            return bound
        return Call(_fast_bind(shape, args, kwargs), shape)
    except TypeError as e:
        name = getattr(original, "__qualname__", repr(original))
        raise InternalError(f"tdebug's wrapper of {name} does not fit {triton_label()}: {e}") from None


def _shape(sig: inspect.Signature) -> _Shape | bool:
    kinds = inspect.Parameter
    params = list(sig.parameters.values())
    if any(p.kind in (kinds.VAR_POSITIONAL, kinds.VAR_KEYWORD, kinds.POSITIONAL_ONLY) for p in params):
        return False
    return _Shape(tuple(p.name for p in params if p.kind is kinds.POSITIONAL_OR_KEYWORD),
                  tuple(p.name for p in params if p.kind is kinds.KEYWORD_ONLY),
                  {p.name: p.default for p in params if p.default is not kinds.empty})


def _fast_bind(shape: _Shape, args: tuple, kwargs: dict) -> dict[str, Any]:
    if len(args) > len(shape.positional):
        raise TypeError(f"takes {len(shape.positional)} positional arguments but {len(args)} were given")
    arguments = dict(zip(shape.positional, args))
    for key, value in kwargs.items():
        if key in arguments or (key not in shape.defaults and key not in shape.positional
                                and key not in shape.keyword_only):
            raise TypeError(f"unexpected or repeated argument {key!r}")
        arguments[key] = value
    for name in shape.positional + shape.keyword_only:
        if name not in arguments:
            if name not in shape.defaults:
                raise TypeError(f"missing a required argument: {name!r}")
            arguments[name] = shape.defaults[name]
    return arguments


_SIGNATURES: dict[Any, inspect.Signature] = {}
_SHAPES: dict[Any, _Shape | bool] = {}


def _signature(fn: Callable) -> inspect.Signature:
    sig = _SIGNATURES.get(fn)
    if sig is None:
        sig = _SIGNATURES[fn] = inspect.signature(fn)
    return sig


def _range(internal: Internal) -> str:
    low = ".".join(map(str, internal.since))
    return f">= {low}" + (f", < {'.'.join(map(str, internal.until))}" if internal.until else "")


def problems() -> list[str]:
    """Every mismatch between INTERNALS/READS and the running Triton (empty when tdebug fits it)."""
    found = []
    for internal in INTERNALS.values():
        if not internal.applies():
            continue
        if "*" in internal.name or "[" in internal.name:
            found += _family_problems(internal)
            continue
        owner = OWNERS[internal.owner]()
        target = getattr(owner, internal.name, None)
        if target is None:
            found.append(f"{internal.key}: missing in {triton_label()}")
            continue
        params = inspect.signature(target).parameters
        missing = [p for p in internal.binds if p not in params]
        if missing:
            found.append(f"{internal.key}{inspect.signature(target)}: no parameter {', '.join(missing)}")
    for owner_name, attrs in READS.items():
        owner = OWNERS[owner_name]()
        if owner_name == "InterpreterBuilder":
            owner = type(owner)()
            owner.set_grid_dim(1, 1, 1)
            owner.set_grid_idx(0, 0, 0)
        for attr in attrs:
            if not hasattr(owner, attr):
                found.append(f"{owner_name}.{attr}: missing in {triton_label()}")
    return found


def _family_problems(family: Internal) -> list[str]:
    """Members of a family that this process patched and that lack a parameter the family binds."""
    prefix = family.owner + "."
    members = [k[len(prefix):] for k in sorted(PATCHED) if k.startswith(prefix)]
    members = [n for n in members if fnmatch.fnmatchcase(n, family.name)]
    if not family.binds or not members:
        return []
    owner = OWNERS[family.owner]()
    found = []
    for name in members:
        key = prefix + name
        params = _signature(_ORIGINALS[(id(owner), name)][2]).parameters
        missing = [p for p in family.binds if p not in params]
        if missing:
            found.append(f"{key}: no parameter {', '.join(missing)}")
    return found


def registered(key: str) -> Internal | None:
    """The INTERNALS entry (an internal, or the first family) that covers "Owner.name"."""
    if key in INTERNALS:
        return INTERNALS[key]
    if key in _FAMILY_OF:
        return _FAMILY_OF[key]
    owner, _, name = key.rpartition(".")
    found = _FAMILY_OF[key] = next((i for i in _TABLE if i.owner == owner and fnmatch.fnmatchcase(name, i.name)),
                                   None)
    return found


_FAMILY_OF: dict[str, Internal | None] = {}  # registered()'s answers for keys INTERNALS does not name (patched by
# several layers: each asks)


def unregistered() -> list[str]:
    """Patches made in this process that INTERNALS does not list."""
    return sorted(key for key in PATCHED if registered(key) is None)


def triton_viz_problem() -> str | None:
    """Why triton-viz cannot serve here (one line), or None when it can. Reads versions only: cheap."""
    if TRITON >= TRITON_VIZ_UNTIL:
        return (f"needs triton-viz, which works with Triton {TRITON_VIZ_TRITONS} only; this is "
                f"{triton_label()}")
    try:
        importlib.metadata.version("triton-viz")
    except importlib.metadata.PackageNotFoundError:
        return (f"needs triton-viz (works with Triton {TRITON_VIZ_TRITONS}): pip install 'tdebug[triton-viz]'")
    return None


def unpatch_all() -> None:
    """Put back every original that `patch` replaced (for tests)."""
    for owner, name, original in _ORIGINALS.values():
        setattr(owner, name, original)
    _ORIGINALS.clear()
    _STACKS.clear()
    PATCHED.clear()
