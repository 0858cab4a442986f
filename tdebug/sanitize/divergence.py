"""The `divergence` check on a GPU: each launch runs compiled and interpreted from the same snapshot of its
arguments; elements where they part are a finding, localised like a failing check.

In the GPU's interpreter pass (TRITON_INTERPRET=1, the script's tensors on the GPU) every launch with CUDA tensor
arguments is wrapped: the arguments' storages are copied (the snapshot), the launch is interpreted (with every
detector and the store records), its results kept; the snapshot is put back and the same kernel runs compiled
on the same arguments (a JITFunction made from the kernel's Python function, its device functions compiled too,
libdevice as Triton has it); its results are kept, and the interpreted ones put back, so the script goes on as
the interpreter pass always did. In-place kernels are covered: both start from the snapshot.

Compared per tensor argument: integers and booleans bit for bit, floats within `check`'s dtype tolerance (the
interpreter is exact for bf16/fp8 elementwise, and fp32 sums may be ordered differently). A storage a launch
updated with atomics is compared within that tolerance too, and the finding says so: float accumulation order is
free on a GPU. Integers of a launch that converted floats to integers (a quantisation, `.to(tl.int8)`, a float
stored through an int pointer) within one code: compiled fp32 `/`, `tl.sqrt`, `tl.exp` and the like are
approximate (`div.full.f32`, `ex2.approx`; up to 2 ulp), so a value within the float tolerance can land on the
other side of a rounding boundary. Floats of a launch that read bf16 or fp16 tensors within that dtype's tolerance
whatever the output's dtype: their sums are rounded to it step by step, in an order the compiled reduction need
not share (an fp32 rstd from bf16 rows). A launch made while a CUDA graph is captured, or (pytest,
keep="compiled") one over the size cap, runs compiled only, with a note that the interpreter did not check it.
The differing elements are described from the interpreter's store records (runtime/localise.py):
which programs and store line wrote them, the pattern, the first differing element with both values, and the
`tdebug run ... --break LINE --pid P` command that stops there. A kernel that cannot be compiled in the pass
(what Triton says is kept) gets one note line: divergence not compared for it (`--check divergence` makes that
strict: the run is then NOT fully checked). The compiled side is the kernel's own function as a JITFunction, its
jit helpers compiled however the kernel reaches them (a global name, `module.helper`, tl's own @jit functions).
"""

from __future__ import annotations

import contextlib
import inspect
import sys
import types
from collections.abc import Callable

import numpy as np

from ..interpreter.hooks.stores import RECORDER
from ..interpreter.versions import original_of, patcher, replaced
from ..report import Finding
from ..runtime import host_memory
from ..runtime.localise import localise, run_command

patch = patcher("divergence")

_COMPILED: dict = {}  # the kernel's Python function -> its JITFunction
MAX_SHOWN = 4


def compiled_function(fn, jit_kwargs: dict | None = None):
    """A JITFunction for an interpreted kernel's Python function: its @triton.jit device functions compiled too
    (the interpreter holds them as InterpretedFunctions), and tdebug's replacements (libdevice) undone."""
    if fn in _COMPILED:
        return _COMPILED[fn]
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    names = dict(fn.__globals__)  # filled in below, once this kernel is known (it may call itself by name)
    clone = types.FunctionType(fn.__code__, names, fn.__name__, fn.__defaults__, fn.__closure__)
    clone.__kwdefaults__ = fn.__kwdefaults__
    clone.__annotations__ = dict(getattr(fn, "__annotations__", {}))  # `BLOCK: tl.constexpr` makes a constexpr
    clone.__dict__.update(getattr(fn, "__dict__", {}))
    clone.__module__ = fn.__module__
    clone.__qualname__ = fn.__qualname__
    clone.__doc__ = fn.__doc__
    accepted = inspect.signature(JITFunction.__init__).parameters
    kwargs = {k: v for k, v in (jit_kwargs or {}).items() if k in accepted}
    jit = JITFunction(clone, **kwargs)
    _COMPILED[fn] = jit
    undo = replaced()
    for name, value in list(names.items()):
        if isinstance(value, InterpretedFunction):
            names[name] = compiled_function(value.fn, value.kwargs)
        elif callable(value):
            names[name] = original_of(value, undo)
    return jit


# triton.language as it was before any launch: under TRITON_INTERPRET=1 its @jit functions (tl.sum, tl.cumsum, ...)
# are InterpretedFunctions, and a device-function call inside an interpreted launch leaves the language patched
# with the interpreter's builtins (Triton restores only the launch's own scope). Compiling needs the real ones.
_PRISTINE: dict = {}


def snapshot_language() -> None:
    """Remember triton.language's modules and tensor classes as they are now (call before the first launch)."""
    import triton.language as tl

    owners = [m for name, m in list(sys.modules.items()) if name.startswith("triton.language") and m is not None]
    owners += [tl.core.tensor, tl.core.tensor_descriptor_base]
    for owner in owners:
        _PRISTINE.setdefault(owner, dict(vars(owner)))


def _set_all(owner, names: dict) -> None:
    """Make owner's attributes exactly `names` (those added since are removed)."""
    current = vars(owner)
    for name in [n for n in current if n not in names]:
        try:
            delattr(owner, name)
        except (AttributeError, TypeError):
            continue
    for name, value in names.items():
        if current.get(name) is not value:
            try:
                setattr(owner, name, value)
            except (AttributeError, TypeError):
                continue


@contextlib.contextmanager
def compiled_language():
    """Inside: triton.language as compiled Triton has it (its @jit functions as JITFunctions, no interpreter
    builtins, tdebug's replacements undone); afterwards, exactly as it was."""
    from triton.runtime.interpreter import InterpretedFunction

    saved = {owner: dict(vars(owner)) for owner in _PRISTINE}
    undo = replaced()

    def compiled(value):
        if isinstance(value, InterpretedFunction):
            return compiled_function(value.fn, value.kwargs)
        wrapped = _member_of(value)  # tl.tensor.sum: compiled Triton sets the JITFunction itself
        return compiled_function(wrapped.fn, wrapped.kwargs) if wrapped is not None else original_of(value, undo)

    from triton import knobs

    swapped = _swap_modules()
    try:
        for owner, names in _PRISTINE.items():
            _set_all(owner, {name: compiled(v) for name, v in names.items()})
        with knobs.runtime.scope():
            # a @constexpr_function (triton.cdiv, next_power_of_2) returns a constexpr to the code generator only
            # when Triton is not interpreting: `tl.static_range(triton.cdiv(H, BLOCK))` compiles then
            knobs.runtime.interpret = False
            yield
    finally:
        for owner, names in saved.items():
            _set_all(owner, names)
        for module, name, value in swapped:
            setattr(module, name, value)


_HOLDERS: dict = {"count": -1, "found": []}  # the modules (and names) that hold an InterpretedFunction


def _interpreted_holders() -> list[tuple[object, str]]:
    """(module, name) of every module-level InterpretedFunction outside triton.language: the jit helpers a kernel
    reaches as `module.helper` (FlagGems' `tle.program_id`, a `utils.helper`), which no clone's globals cover.
    Rescanned when the set of imported modules changes."""
    from triton.runtime.interpreter import InterpretedFunction

    if _HOLDERS["count"] == len(sys.modules):
        return _HOLDERS["found"]
    found = []
    for name, module in list(sys.modules.items()):
        if module is None or name.startswith("triton.language") or not isinstance(module, types.ModuleType):
            continue
        try:
            items = list(vars(module).items())
        except TypeError:
            continue
        # type(), not isinstance(): no module's lazy or deprecated object is asked for its __class__
        found += [(module, key) for key, value in items if issubclass(type(value), InterpretedFunction)]
    _HOLDERS.update(count=len(sys.modules), found=found)
    return found


def _swap_modules() -> list[tuple[object, str, object]]:
    """Put the compiled JITFunction in place of each module-level InterpretedFunction; what to put back."""
    from triton.runtime.interpreter import InterpretedFunction

    swapped = []
    for module, name in _interpreted_holders():
        value = vars(module).get(name)
        if isinstance(value, InterpretedFunction):
            setattr(module, name, compiled_function(value.fn, value.kwargs))
            swapped.append((module, name, value))
    return swapped


def _member_of(value):
    """The InterpretedFunction a tensor member wraps (`x.sum(...)` under TRITON_INTERPRET=1), or None."""
    from triton.runtime.interpreter import InterpretedFunction

    if not isinstance(value, types.FunctionType) or not value.__closure__ or \
            not value.__qualname__.startswith("_tensor_member_fn."):
        return None
    for cell in value.__closure__:
        try:
            inner = cell.cell_contents
        except ValueError:
            continue
        if isinstance(inner, InterpretedFunction):
            return inner
    return None


def _tensors(value, name: str) -> list[tuple[str, object]]:
    import torch

    value = getattr(value, "base", value)  # TensorWrapper
    if isinstance(value, torch.Tensor):
        return [(name, value)]
    if isinstance(value, (tuple, list)):
        return [t for i, item in enumerate(value) for t in _tensors(item, f"{name}[{i}]")]
    return []


def _view(storage, t):
    import torch

    return torch.empty(0, dtype=t.dtype, device=storage.device).set_(storage, t.storage_offset(), t.size(), t.stride())


def host_bytes(named: list) -> int:
    """Host memory the interpreted launch of these (name, tensor) arguments holds at its peak, estimated."""
    sizes: dict[int, tuple[int, int]] = {}
    for _, t in named:
        s = t.untyped_storage()
        nbytes, elsize = sizes.get(s.data_ptr(), (s.nbytes(), t.element_size()))
        sizes[s.data_ptr()] = (nbytes, min(elsize, t.element_size()))
    return sum(HOST_COPIES * n + HOST_BYTES_PER_ELEMENT * (n // e) for n, e in sizes.values())


def _copy(storage):
    """A host copy of a storage: the snapshots and both sides' results live in host memory, so the check adds no
    GPU memory to the script's (pytest-xdist workers share one card)."""
    import torch

    out = torch.UntypedStorage(storage.nbytes())
    out.copy_(storage)
    return out


# Host memory an interpreted launch holds (runtime/host_memory.py admits it): per storage, four copies (the
# interpreter's host copy, the snapshot, the interpreted and the compiled results) and per element the sanitizer's
# shadow tables, store records and the engine's batches. Measured on an H200, one Liger cross entropy at
# 2 x 4096 x 32000 fp32 (a 1 GiB storage, 262M elements) in its own pytest: 16.4 GiB of peak RSS while compare()
# made float64 copies of whole tensors, 5.1 GiB (the process's own included) since it goes chunk by chunk
# (results/gpu/pytest-tdebug-liger.md); this estimate, 6.1 GiB for it, stays above that.
HOST_COPIES = 4
HOST_BYTES_PER_ELEMENT = 8
DEVICES = ("cuda",)  # the launches compared: those with tensor arguments on these devices


CHUNK = 1 << 22  # elements compared at a time: float64 copies and their temporaries of a chunk, not of a tensor


def compare(compiled, interpreted, atomic: bool, from_floats: bool = False, floor=None) -> tuple[np.ndarray, float,
                                                                                              float]:
    """Where a tensor's compiled and interpreted values part: (mask, rtol, atol) as `check` would judge them;
    `from_floats`: the launch converted floats to integers, so integers may part by one code (atol 1); `floor`:
    the least precise float dtype the launch read (bf16 inputs: an fp32 output of their sums is as exact as
    bf16 sums ordered one way or another), its tolerance when looser than the output's own. Compared CHUNK
    elements at a time: a 1 GiB fp32 tensor's float64 copies and temporaries would take ten times its size."""
    import torch

    from ..catalogue.compare import outside_tolerance

    got, want = compiled.detach().cpu().reshape(-1), interpreted.detach().cpu().reshape(-1)
    differ = np.empty(got.numel(), dtype=bool)
    chunks = range(0, got.numel(), CHUNK)
    if not compiled.is_floating_point():
        for i in chunks:
            g, w = got[i:i + CHUNK], want[i:i + CHUNK]
            d = g != w
            if from_floats and g.dtype != torch.bool:
                g, w = g.to(torch.int64), w.to(torch.int64)  # uint64 wraps alike on both sides
                d &= (g != w + 1) & (w != g + 1)
            differ[i:i + CHUNK] = d.numpy()
        return differ.reshape(tuple(compiled.shape)), 0.0, (1.0 if from_floats and got.dtype != torch.bool else 0.0)
    rtol, atol_factor = _tolerance(compiled.dtype)
    if floor is not None:
        rtol, atol_factor = (max(a, b) for a, b in zip((rtol, atol_factor), _tolerance(floor)))
    largest = 1.0  # catalogue.compare.scaled_atol's max(|finite want|, 1), chunk by chunk
    for i in chunks:
        w = want[i:i + CHUNK].to(torch.float64)
        finite = w[torch.isfinite(w)]
        if finite.numel():
            largest = max(largest, float(finite.abs().max()))
    atol = atol_factor * largest
    for i in chunks:
        g, w = got[i:i + CHUNK].to(torch.float64), want[i:i + CHUNK].to(torch.float64)
        differ[i:i + CHUNK] = outside_tolerance(g, w, rtol, atol).numpy()
    return differ.reshape(tuple(compiled.shape)), rtol, atol


def _tolerance(dtype) -> tuple[float, float]:
    import torch

    from ..catalogue.compare import TOLERANCES, dtype_name

    if dtype not in (torch.float32, torch.float16, torch.bfloat16, torch.float64):  # fp8
        return TOLERANCES["bf16"]
    return TOLERANCES.get(dtype_name(dtype), TOLERANCES["fp32"])


def _least_precise(tensors) -> object | None:
    """The float dtype of the launch's tensors with the fewest mantissa bits (None: no float tensor)."""
    import torch

    floats = [t.dtype for t in tensors if t.is_floating_point()]
    return max(floats, key=lambda d: torch.finfo(d).eps, default=None)


class DivergenceCheck:
    """Installed in the interpreter pass's child on a GPU; findings go to `report`, notes to `note`."""

    def __init__(self, report: Callable[[Finding], None], target: str, argv: list[str] | None = None,
                 note: Callable[[Finding], None] | None = None, keep: str = "interpreted",
                 max_bytes: int = 0, waiting: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext
                 ) -> None:
        self.report = report
        self.waiting = waiting  # entered while a launch waits for host memory (host_memory.admitted)
        self.note = note or report
        self.target = target
        self.argv = list(argv or [])
        self.not_compiled: set[str] = set()
        self.busy = False
        # Whose results the script goes on with: "interpreted" (sanitize's interpreter pass) or "compiled"
        # (pytest --tdebug on a GPU: the test sees what its GPU suite sees; the interpreter ran on the side).
        self.keep = keep
        self.compared = 0  # launches compared
        self.waited = 0.0  # seconds launches waited for host memory
        # keep="compiled": a launch whose tensor storages take more bytes runs compiled only (0: no cap), as its
        # host copies, snapshots and shadows would take several times its size in host memory
        self.max_bytes = max_bytes
        self.float_to_int = False  # the launch being interpreted converted a float to an integer

    @classmethod
    def into(cls, session, target: str, argv: list[str] | None = None, keep: str = "interpreted",
             max_bytes: int = 0, waiting: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext
             ) -> DivergenceCheck:
        """A check whose findings join the sanitizer session's findings of the case (named by its config)."""
        def report(finding: Finding) -> None:
            finding.config = finding.config or session.config
            session.case_findings.append(finding)

        return cls(report, target, argv, keep=keep, max_bytes=max_bytes, waiting=waiting)

    def install(self) -> None:
        from triton.runtime import interpreter

        check = self

        def make(original):
            def run(*args, **kwargs):
                if check.busy or kwargs.get("warmup"):
                    return original(*args, **kwargs)
                return check.launch(original, args, kwargs)

            return run

        def converting(original):
            def convert(*args, **kwargs):
                check.float_to_int = True
                return original(*args, **kwargs)

            return convert

        patch(interpreter.InterpretedFunction, "run", make)
        for name in ("create_fp_to_si", "create_fp_to_ui"):
            patch(interpreter.interpreter_builder, name, converting)
        snapshot_language()

    def launch(self, original, args: tuple, kwargs: dict):
        fn = args[0]
        named = [t for i, a in enumerate(args[1:]) for t in _tensors(a, _arg_name(fn, i))]
        named += [t for k, v in kwargs.items() if k not in ("grid", "warmup") for t in _tensors(v, k)]
        named = [(n, t) for n, t in named if t.device.type in DEVICES]
        if not named:
            return original(*args, **kwargs)

        storages = {t.untyped_storage().data_ptr(): t.untyped_storage() for _, t in named}
        kernel = getattr(fn, "__name__", "kernel")
        why = self._not_interpretable(storages)
        if why:
            return self._compiled_only(fn, args, kwargs, kernel, why)
        with host_memory.admitted(host_bytes(named), waiting=self.waiting) as waited:
            self.waited += waited
            return self._compare(original, args, kwargs, fn, kernel, named, storages)

    def _compare(self, original, args: tuple, kwargs: dict, fn, kernel: str, named: list, storages: dict):
        """The launch interpreted, then compiled from the same snapshot; where the two part is a finding."""
        import torch

        before = {p: _copy(s) for p, s in storages.items()}
        launches = len(RECORDER.launches)
        self.float_to_int = False
        out = original(*args, **kwargs)  # interpreted, every detector on, stores recorded
        from_floats = self.float_to_int
        record = RECORDER.launches[-1] if len(RECORDER.launches) > launches else None
        interpreted = {p: _copy(s) for p, s in storages.items()}
        for p, s in storages.items():
            s.copy_(before[p])
        del before  # host memory: one copy of the launch's storages less held through the compiled run
        try:
            self._run_compiled(fn, args, kwargs)
            if torch.cuda.is_initialized():  # the compiled run's kernels done before its results are read
                torch.cuda.synchronize()
        except Exception as exc:  # noqa: BLE001 - what Triton says becomes the note; the pass goes on
            for p, s in storages.items():
                s.copy_(interpreted[p])
            if kernel not in self.not_compiled:
                self.not_compiled.add(kernel)
                why = str(exc).strip().splitlines()[-1][:300] if str(exc).strip() else type(exc).__name__
                self.note(Finding(check="note", kernel=kernel, extra={"unchecked": "divergence"}, message=(
                    f"divergence not compared for {kernel}: Triton could not run it compiled from the interpreter "
                    f"pass ({type(exc).__name__}: {why})")))
            return out
        self.compared += 1
        compiled = {p: _copy(s) for p, s in storages.items()}
        if self.keep != "compiled":
            for p, s in storages.items():
                s.copy_(interpreted[p])
        floor = _least_precise(t for _, t in named)
        seen: set[tuple] = set()
        for name, t in named:
            key = (t.untyped_storage().data_ptr(), t.storage_offset(), tuple(t.size()), tuple(t.stride()), t.dtype)
            if key in seen or t.numel() == 0:
                continue
            seen.add(key)
            p = key[0]
            if torch.equal(_as_bytes(compiled[p]), _as_bytes(interpreted[p])):
                continue
            atomic = record is not None and (record.dropped or any(  # records let go: judged as atomic (lenient)
                r.atomic for r in record.records for info in record.storages.values()
                if info.device_ptr == p and r.storage == info.host_ptr))
            got, want = _view(compiled[p], t), _view(interpreted[p], t)
            differ, rtol, atol = compare(got, want, atomic, from_floats, floor)
            if differ.any():
                self.report(self.finding(kernel, name, t, got, want, differ, rtol, atol, atomic))
        return out

    def _not_interpretable(self, storages: dict) -> str:
        """Why this launch runs compiled only ("" when it is interpreted too)."""
        import torch

        if torch.cuda.is_initialized() and torch.cuda.is_current_stream_capturing():
            return "launched while a CUDA graph is captured (the graph records the compiled kernel)"
        size = sum(s.nbytes() for s in storages.values())
        if self.keep == "compiled" and self.max_bytes and size > self.max_bytes:
            return (f"its tensor arguments take {size / 2**20:,.0f} MiB, over the cap of "
                    f"{self.max_bytes / 2**20:,.0f} MiB (--tdebug-max-mib)")
        return ""

    def _compiled_only(self, fn, args: tuple, kwargs: dict, kernel: str, why: str):
        """The launch run compiled, not interpreted: a note says it was not checked."""
        self.note(Finding(check="note", kernel=kernel, extra={"unchecked": "launch"}, message=(
            f"launch of {kernel} run compiled only, not checked by the interpreter: {why}")))
        return self._run_compiled(fn, args, kwargs)

    def _run_compiled(self, fn, args: tuple, kwargs: dict):
        """The launch's kernel (an InterpretedFunction's run arguments) run compiled, with the language as compiled
        Triton has it; launches it makes meanwhile are not intercepted."""
        jit = compiled_function(fn.fn, getattr(fn, "kwargs", None))
        self.busy = True
        try:
            with compiled_language():
                return jit.run(*args[1:], warmup=False, **{k: v for k, v in kwargs.items() if k != "warmup"})
        finally:
            self.busy = False

    def finding(self, kernel: str, name: str, out, got, want, differ: np.ndarray, rtol: float, atol: float,
                atomic: bool) -> Finding:
        import torch

        g = got.detach().cpu().to(torch.float64).numpy()
        w = want.detach().cpu().to(torch.float64).numpy()
        script = self.target if self.target.endswith(".py") else ""
        command = (lambda file, line, pid: run_command(script, None, file, line, pid, self.argv)) if script else None
        # localised from the interpreter's store records, so its values are the interpreter's (a breakpoint shows
        # them), and what localise calls "expected" is here what the compiled kernel stored
        loc = localise(out, w, g, differ, np.zeros_like(differ), RECORDER, command)
        if loc is not None:
            loc.lines = [line.replace("wrong values:", "differing values:").replace("(expected ", "(compiled: ")
                         .replace("first wrong element", "first differing element") for line in loc.lines]
        first = tuple(int(i) for i in np.argwhere(differ)[0])
        how = ("bit for bit" if rtol == 0 and atol == 0 else "within one code (converted from floats)"
               if not got.is_floating_point() else f"rtol {rtol:g}, atol {atol:.3g}")
        if atomic:
            how += "; updated by atomics, so within the accumulation-order tolerance"
        message = (f"{int(differ.sum()):,} of {differ.size:,} elements of '{name}' differ between the compiled "
                   f"kernel and the interpreter run from the same inputs ({how}); first {list(first)}: compiled "
                   f"{g[first]:.6g}, interpreted {w[first]:.6g}")
        file, line, pids = "", 0, []
        extra: dict = {"compiled": float(g[first]), "interpreted": float(w[first]), "index": list(first)}
        if loc is not None:
            extra["localisation"] = loc.to_dict()
            extra["lines"] = loc.render()
            if loc.first:
                file, line = loc.first["file"], loc.first["line"]
                pids = [tuple(loc.first["pid"])]
            elif loc.sites:
                file, line = loc.sites[0]["file"], loc.sites[0]["line"]
            message += "\n" + "\n".join(loc.render())
        else:
            message += " (no program of this launch stored those elements: the compiled kernel wrote them)"
        return Finding(check="divergence", message=message, kernel=kernel, file=file, line=line, pids=pids,
                       tensor=name, tensor_shape=tuple(out.shape), tensor_strides=tuple(out.stride()),
                       indices=[list(i) for i in np.argwhere(differ)[:MAX_SHOWN].tolist()],
                       count=int(differ.sum()), extra=extra)


def _as_bytes(storage):
    import torch

    return torch.empty(0, dtype=torch.uint8, device=storage.device).set_(storage)


def _arg_name(fn, index: int) -> str:
    names = getattr(fn, "arg_names", None) or []
    return names[index] if index < len(names) else f"arg{index}"
