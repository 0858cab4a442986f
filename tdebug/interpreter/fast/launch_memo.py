"""Memoisations in Triton's per-op and per-launch interpreter path, with unchanged results: the language is patched
once per module per launch (not again on every call of a nested @jit function: tl.max, tl.sum, tl.cdiv and user
helpers), the builtins it patches are listed once rather than with inspect.getmembers at every launch,
`_get_np_dtype` answers from a table instead of building a 19-entry dict on each call, a launch's tensor and int32
arguments get their types from a table (`_implicit_cvt`: Triton mangles and parses a type name for each), and a
kernel's constexpr parameters are found once (GridExecutor.__init__ normalises its annotations at every launch).
And one shortcut in the rewrite of each jit function (once per function and process): its file and `def` line read
from the source lines Python keeps, where Triton builds a whole JITFunction (signature, source, hashing) to learn
them.

Why the first is exact: Triton's `_patch_lang(fn)` swaps the builtins of the `tl` modules that fn's module
can see for interpreted versions, and a device-function call (`InterpretedFunction.__call__`) runs it again
and drops the scope it returns (its changes stay until the launch's own scope is restored). What it does
depends on fn's module globals only, and nothing puts those names back before the launch ends, so a repeat
for a module already patched in this launch re-sets attributes to equivalent values: it is skipped (the
call gets an empty scope, which it drops anyway). The launch's own call, and every call outside a launch,
run as before. tdebug's alias patch (aliases.py) wraps `_patch_lang` inside this one and is skipped with it.
"""

from __future__ import annotations

import inspect
import operator
from collections import deque
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any

import numpy as np

from ..batched.launch import current_launch
from ..versions import patcher

patch = patcher("launch_memo")
# Inside the grid layer's wrapper of GridExecutor.__init__, outermost on _implicit_cvt (what it returns it tags
# itself: provenance.tag)
patch_setup = patcher("launch_setup")
_OWNER = operator.itemgetter(0)  # of a patch scope's change: (owner, name, original)


@dataclass
class _Launch:
    """The module globals (by id) whose language is patched during the running launch."""

    patched: set[int] = field(default_factory=set)


@dataclass
class _State:
    device_call: bool = False  # set by InterpretedFunction.__call__ for the _patch_lang call it makes first


_STATE = _State()


def _running() -> _Launch | None:
    """The running launch's patched modules (grid_loop's Launch keeps them); None outside a launch: every
    _patch_lang call runs."""
    launch = current_launch()
    return None if launch is None else launch.part("launch_memo", _Launch)


def _mark_device_call(original):
    def __call__(*args, **kwargs):
        _STATE.device_call = True
        return original(*args, **kwargs)

    return __call__


def _once_per_launch(original):
    from triton.runtime import interpreter

    def _patch_lang(fn):
        device_call, _STATE.device_call = _STATE.device_call, False
        launch = _running()
        if launch is None:
            return original(fn)
        key = id(fn.__globals__)
        if device_call and key in launch.patched:
            return interpreter._LangPatchScope()  # already patched in this launch; the caller drops it
        scope = original(fn)
        launch.patched.add(key)
        return scope

    return _patch_lang


@dataclass
class _Listing:
    """A package's builtins as listed at a launch's patching, and what patching them set, per patching context."""

    pkg: Any
    size: int  # len(vars(pkg)) when listed
    members: list[tuple[str, Any]]  # (name, Triton's builtin)
    # (executor, then _patch_attr, semantic, builder by id) -> (those three, the value set per member)
    patched: dict[tuple, tuple] = field(default_factory=dict)
    names: tuple[str, ...] = ()  # the members' names, in order
    builtins: tuple[Any, ...] = ()  # and their builtins
    changes: tuple[tuple, ...] = ()  # (pkg, name, builtin) per member: what scope.set_attr records

    def __post_init__(self) -> None:
        self.names = tuple(name for name, _ in self.members)
        self.builtins = tuple(member for _, member in self.members)
        self.changes = tuple((self.pkg, name, member) for name, member in self.members)

    def unchanged(self) -> bool:
        """Is every member still pkg's attribute (Triton's original builtin, not patched over)?"""
        now = map(getattr, repeat(self.pkg), self.names, repeat(None))
        return all(map(operator.is_, now, self.builtins))


def _builtins_listed_once(original):
    """Triton's `_patch_builtin(pkg, builder, scope)` lists pkg's members with inspect.getmembers (every
    attribute of tl, tl.tensor, tl.math: sorted, classes walked through their MRO) at every launch and hands each
    builtin to `_patch_attr`. The builtins are the same objects launch after launch: listed at a launch's own
    patching, while pkg holds Triton's originals, and handed over again at later launches' while every one is
    still pkg's attribute and pkg has gained or lost none (else listed anew). What `_patch_attr` (Triton's, under
    op_memo's) sets for a builtin depends on the builtin, the executor, the interpreter's semantic and builder
    only: the values one launch set are set again by later launches in the same context, each recorded in the
    scope as `_patch_attr` records it. Any other call (a device function's module patched inside a launch, pkg
    patched already in this scope, a call outside a launch) sees swapped attributes, or may: Triton's own
    listing runs."""
    from triton.language import core
    from triton.runtime import interpreter

    from ..batched.grid_loop import executor

    listed: dict[int, _Listing] = {}

    def _patch_builtin(pkg, builder, scope):
        launch = _running()
        if launch is None or launch.patched or any(map(operator.is_, map(_OWNER, scope._changes), repeat(pkg))):
            return original(pkg, builder, scope)
        entry = listed.get(id(pkg))
        size = len(vars(pkg))
        if entry is None or entry.pkg is not pkg or entry.size != size or not entry.unchanged():
            members = [(name, member) for name, member in inspect.getmembers(pkg) if core.is_builtin(member)]
            same = entry is not None and entry.pkg is pkg and len(members) == len(entry.members) and all(
                a == c and b is d for (a, b), (c, d) in zip(members, entry.members))
            # pkg gained an attribute that is no builtin (a submodule imported at a first launch): values kept
            entry = listed[id(pkg)] = _Listing(pkg, size, members, entry.patched if same else {})
        context = (interpreter._patch_attr, interpreter.interpreter_semantic, builder)
        key = (executor(),) + tuple(id(x) for x in context)
        found = entry.patched.get(key)
        if found is not None and all(a is b for a, b in zip(found[0], context)):
            # What scope.set_attr records and sets for each member in turn (member is pkg's attribute), the
            # records made first: nothing between the two reads them.
            scope._changes.extend(entry.changes)
            deque(map(setattr, repeat(pkg), entry.names, found[1]), maxlen=0)
            return
        start = len(scope._changes)
        for name, member in entry.members:
            interpreter._patch_attr(pkg, name, member, builder, scope)
        # Kept only when the pass set each builtin once, in order, over Triton's original (nothing else changed)
        if scope._changes[start:] == [(pkg, name, member) for name, member in entry.members]:
            entry.patched[key] = (context, [getattr(pkg, name) for name, _ in entry.members])

    return _patch_builtin


def _memo_np_dtype(original):
    table: dict[tuple[type, str], Any] = {}

    def _get_np_dtype(tt_dtype):
        # Its answer depends on the type's class and name only (block types name their shape and element).
        try:
            key = (type(tt_dtype), tt_dtype.name)
        except AttributeError:
            return original(tt_dtype)
        found = table.get(key)
        if found is None:
            found = table[key] = original(tt_dtype)
        return found

    return _get_np_dtype


def _file_line_from_source(original):
    """FunctionRewriter._get_jit_fn_file_line: Triton's answer is JITFunction(fn)'s file (fn.__code__'s) and the
    line of the first `def ` line of fn's source block (inspect.getsourcelines: from co_firstlineno, the first
    decorator's line, on); the same read from linecache's lines of that file. A function whose source is not a
    plain function's (wrapped, no file lines, no such line) goes to Triton's own."""
    import linecache

    def _get_jit_fn_file_line(self):
        fn = getattr(self, "fn", None)
        code = getattr(fn, "__code__", None)
        if code is None or hasattr(fn, "__wrapped__"):
            return original(self)
        lines = linecache.getlines(code.co_filename, getattr(fn, "__globals__", None))
        first = code.co_firstlineno
        for number in range(first, min(len(lines), first + 200) + 1):
            if lines[number - 1].strip().startswith("def "):
                return code.co_filename, number
        return original(self)

    return _get_jit_fn_file_line


def _typed_args(original):
    """`_implicit_cvt` of a plain CPU or device tensor and of an int in int32's range from a table of their types:
    Triton asks `tl.str_to_ty(mangle_type(arg))` for every argument of every launch (~15 us each, the largest part
    of a small launch's set-up); the type depends on the tensor's dtype only (a pointer to it), and an int's on its
    range only (i32 from -2^31 to 2^31 - 1: Triton's mangling, 3.6 to 3.9). The same handle and type as Triton's,
    a tensor's tagged with its storage as provenance.py tags it; anything else (a bool, a float, a wider int, a
    wrapper, a tuple, a descriptor) goes to the layers below (scalars, provenance, Triton's own)."""
    import torch
    import triton.language as tl
    from triton.runtime import interpreter

    from ..hooks.provenance import tag

    pointers: dict = {}  # torch dtype -> Triton's type of a tensor of it

    def _implicit_cvt(arg):
        kind = type(arg)
        if kind is torch.Tensor:
            ty = pointers.get(arg.dtype)
            if ty is None:
                ty = pointers[arg.dtype] = original(arg).type
            handle = interpreter.TensorHandle(np.array([arg.data_ptr()], dtype=np.uint64), ty)
            tag(handle, arg)
            return tl.tensor(handle, ty)
        if kind is int and -2**31 <= arg < 2**31:
            return tl.tensor(interpreter.TensorHandle(np.array([arg], dtype=np.int32), tl.int32), tl.int32)
        return original(arg)

    return _implicit_cvt


_EXECUTOR_FIELDS = {"fn", "arg_names", "grid", "pre_run_hooks", "constexprs"}


def _constexprs_once(original):
    """GridExecutor.__init__ (Triton's, once per launch) normalises the kernel's annotations to find its constexpr
    parameters; they are the same for the same function and parameter names: found once. A later executor of the
    function gets Triton's own four fields and that list, where Triton's __init__ sets exactly those five (else it
    runs as it is)."""
    found: dict[int, tuple] = {}  # id(fn) -> (fn, arg_names, constexprs)

    def __init__(self, fn, arg_names, grid, pre_run_hooks=[]):  # noqa: B006 - Triton's own signature
        known = found.get(id(fn))
        if known is not None and known[0] is fn and known[1] == arg_names:
            self.fn, self.arg_names, self.grid, self.pre_run_hooks = fn, arg_names, grid, pre_run_hooks
            self.constexprs = list(known[2])
            return
        original(self, fn, arg_names, grid, pre_run_hooks)
        if set(vars(self)) == _EXECUTOR_FIELDS:
            if len(found) > 4096:
                found.clear()
            found[id(fn)] = (fn, list(arg_names), tuple(self.constexprs))

    return __init__


def install() -> None:
    """After aliases.install: the once-per-launch check wraps the alias patch too."""
    from triton.runtime import interpreter

    patch(interpreter, "_get_np_dtype", _memo_np_dtype)
    patch(interpreter, "_patch_builtin", _builtins_listed_once)
    patch(interpreter.InterpretedFunction, "__call__", _mark_device_call)
    patch(interpreter, "_patch_lang", _once_per_launch)
    patch(interpreter.FunctionRewriter, "_get_jit_fn_file_line", _file_line_from_source)
    patch_setup(interpreter, "_implicit_cvt", _typed_args)
    patch_setup(interpreter.GridExecutor, "__init__", _constexprs_once)
