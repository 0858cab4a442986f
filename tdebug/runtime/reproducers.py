"""--repro DIR: for each Triton launch with a finding (or the last launch before a failing comparison), a
self-contained folder that replays just that launch: the kernel's module (its imports, definitions and
constants, every other top-level line blanked so line numbers stay), the launch's tensors (torch.save, their
whole storages, aliasing kept), its scalars, constexprs, config and grid (launch.json), the finding, and a
repro.py that `tdebug sanitize repro.py` runs to report the same finding."""

from __future__ import annotations

import ast
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import settings

MARKER = ".tdebug-repro"  # in a folder tdebug made for reproducers
MAX_BYTES = settings.get("TDEBUG_REPRO_MAX_MIB") << 20  # the tensors one reproducer may save
_RESERVED = {"num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion", "launch_cooperative_grid",
             "launch_pdl", "debug", "sanitize_overflow", "instrumentation_mode"}


class ReproError(ValueError):
    """The --repro folder cannot be used (a file, not writable): a usage error."""


def prepare_root(path: str | Path) -> Path:
    """The folder reproducers go into: DIR itself when it is new, empty or tdebug's own (it holds MARKER),
    else a fresh subfolder DIR/tdebug-repro[-N]: no file tdebug did not write is ever replaced."""
    root = Path(path).expanduser().resolve()
    if root.exists() and not root.is_dir():
        raise ReproError(f"--repro {path}: a file, not a folder")
    if root.is_dir() and any(root.iterdir()) and not (root / MARKER).exists():
        base, n = root / "tdebug-repro", 1
        root = base
        while root.exists() and not (root / MARKER).exists():
            n += 1
            root = base.with_name(f"tdebug-repro-{n}")
    try:
        root.mkdir(parents=True, exist_ok=True)
        (root / MARKER).touch()
    except OSError as e:
        raise ReproError(f"--repro {path}: cannot write there ({e.strerror})") from None
    return root


@dataclass
class Snapshot:
    """One launch as it started: what repro.py needs to run it again."""

    kernel: str
    file: str
    module_name: str
    grid: tuple[int, ...] = ()
    args: list[Any] = field(default_factory=list)  # encoded (see _encode)
    kwargs: dict[str, Any] = field(default_factory=dict)
    tensors: list[Any] = field(default_factory=list)  # copies, views of copied storages
    empty: list[bool] = field(default_factory=list)  # per tensor: its storage came from torch.empty
    ptrs: list[int] = field(default_factory=list)  # per tensor: where the caller's tensor started
    nbytes: int = 0
    problem: str = ""  # why this launch cannot be reproduced ("" when it can)
    config: str = ""


WRITER: ReproWriter | None = None  # the one installed in this process (install)


class ReproWriter:
    """Snapshots each launch while it runs (GridExecutor.__call__), writes a folder for each launch whose
    run added findings, and at the end of a case for the kernels of case-level findings (unwritten) and of a
    failing comparison."""

    def __init__(self, root: str | Path, label: str = "", max_bytes: int = MAX_BYTES) -> None:
        self.root = Path(root)
        self.label = label  # the case, test or script the launches belong to (written to finding.txt)
        self.max_bytes = max_bytes
        self.findings_so_far = lambda: 0  # the sanitizer's count of findings (set by install)
        self.last: dict[str, Snapshot] = {}  # kernel -> its last launch in this case
        self.done: set[str] = set()  # kernels of this case with a reproducer written
        self.written: list[Path] = []
        self._pending: list[tuple[Path, Snapshot]] = []
        self.probing = lambda: False

    # -- the launch hook ---------------------------------------------------------------------------
    def install(self, session=None) -> None:
        """Listen around the interpreter's launches (layer "repro", over the sanitizer's: it sees a launch's
        findings)."""
        from ..interpreter.batched import grid_loop

        global WRITER
        WRITER = self
        if session is not None:
            self.findings_so_far = lambda: len(session.case_findings)
            self.probing = lambda: session.probing is not None
        grid_loop.listen("repro", self)  # around_launch

    def around_launch(self, proceed, executor, *args, **kwargs):
        """A snapshot of the launch before the sanitizer begins; after its end, a reproducer if it found
        something (or the kernel raised a finding of its own)."""
        if self.probing():
            return proceed(executor, *args, **kwargs)
        snap = self.snapshot(executor, args, kwargs)
        before = self.findings_so_far()
        try:
            out = proceed(executor, *args, **kwargs)
        except BaseException as exc:
            if _is_kernel_finding(exc):
                self.finish(snap)
                self.write(snap, [_exception_text(exc)])
            raise
        self.finish(snap)
        self.last[snap.kernel] = snap
        if self.findings_so_far() > before:
            self.write(snap, [])  # the findings themselves are added at the case's end
        return out

    def begin_case(self, label: str = "") -> None:
        self.label = label or self.label
        self.last, self.done, self.written, self._pending = {}, set(), [], []

    def snapshot(self, executor, args: tuple, kwargs: dict) -> Snapshot:
        import torch

        from ..catalogue.poison import ALLOCATIONS

        fn = executor.fn
        snap = Snapshot(kernel=getattr(fn, "__name__", "kernel"), file=getattr(fn, "__code__", None)
                        and fn.__code__.co_filename or "", module_name=getattr(fn, "__module__", "") or "")
        if "<locals>" in getattr(fn, "__qualname__", ""):
            snap.problem = f"{snap.kernel} is defined inside a function: repro.py cannot import it"
        copies: dict[int, Any] = {}  # storage address -> its copy
        index: dict[int, int] = {}

        def encode(value):
            if isinstance(value, torch.Tensor):
                if id(value) not in index:
                    storage = value.untyped_storage()
                    ptr = storage.data_ptr()
                    if ptr not in copies:
                        snap.nbytes += storage.nbytes()
                        copies[ptr] = storage.cpu().clone() if snap.nbytes <= self.max_bytes else None
                    if copies[ptr] is not None:
                        view = torch.empty(0, dtype=value.dtype, device="cpu").set_(copies[ptr], value.storage_offset(),
                                                                       value.size(), value.stride())
                        snap.tensors.append(view)
                        snap.empty.append(ALLOCATIONS.was_empty(ptr))
                        snap.ptrs.append(value.data_ptr())
                    index[id(value)] = len(index)
                return {"tensor": index[id(value)]}
            base = getattr(value, "base", None)  # triton's TensorWrapper (reinterpret)
            if base is not None and isinstance(base, torch.Tensor) and hasattr(value, "dtype"):
                snap.problem = snap.problem or "an argument is a reinterpreted tensor (triton.reinterpret)"
                return None
            if value is None or isinstance(value, (bool, int, float, str)):
                return value
            name = getattr(value, "name", None)
            if type(value).__name__ == "dtype" and isinstance(name, str):  # tl.float32 and friends
                return {"tl_dtype": name}
            if isinstance(value, torch.dtype):
                return {"torch_dtype": str(value).removeprefix("torch.")}
            inner = getattr(value, "value", None)
            if type(value).__name__ == "constexpr":
                return encode(inner)
            snap.problem = snap.problem or f"an argument of type {type(value).__name__} cannot be saved"
            return None

        snap.args = [encode(a) for a in args]
        snap.kwargs = {k: encode(v) for k, v in kwargs.items()}
        if snap.nbytes > self.max_bytes:
            snap.problem = (f"its tensors hold {snap.nbytes / 2**20:.1f} MiB, more than a reproducer saves "
                            f"({self.max_bytes >> 20} MiB; TDEBUG_REPRO_MAX_MIB raises it)")
            snap.tensors = []
        return snap

    def finish(self, snap: Snapshot) -> None:
        """After the launch: the grid it ran and its autotune config (recorded by the interpreter patches)."""
        from ..interpreter.patches import STATE

        record = next((r for r in reversed(STATE.launches) if r.kernel == snap.kernel), None)
        if record is not None:
            snap.grid, snap.config = tuple(record.grid), record.config

    # -- writing -------------------------------------------------------------------------------------
    def write(self, snap: Snapshot, lines: list[str], expected: dict | None = None) -> Path | None:
        """A folder for this launch (findings as text lines; expected: argument index -> (tensor, rtol,
        atol) for a failing comparison). Returns it."""
        import torch

        folder = _fresh_folder(self.root, snap.kernel)
        self.done.add(snap.kernel)
        self.written.append(folder)
        self._pending.append((folder, snap))
        what = [f"tdebug reproducer: one launch of {snap.kernel} ({snap.file})",
                f"from: {self.label}" if self.label else "", f"grid: {list(snap.grid)}",
                f"autotune config: {snap.config}" if snap.config else ""]
        if snap.problem:
            _write(folder / "finding.txt", "\n".join(x for x in what + [f"NOT WRITTEN: {snap.problem}"] + lines
                                                      if x) + "\n")
            return folder
        module = _module_file_name(snap)
        source = Path(snap.file)
        _write(folder / module, strip_module(source.read_text()) if source.is_file() else "")
        payload = {"tensors": snap.tensors, "expected": {}}
        checks = {}
        for arg, (tensor, rtol, atol) in (expected or {}).items():
            payload["expected"][str(arg)] = tensor.detach().cpu().to(torch.float64)
            checks[str(arg)] = {"rtol": rtol, "atol": atol}
        torch.save(payload, folder / "tensors.pt")
        launch = {"kernel": snap.kernel, "module": module.removesuffix(".py"), "source": snap.file,
                  "grid": list(snap.grid), "config": snap.config, "args": snap.args, "kwargs": snap.kwargs,
                  "empty": snap.empty, "compare": checks, "nbytes": snap.nbytes}
        _write(folder / "launch.json", json.dumps(launch, indent=1) + "\n")
        _write(folder / "repro.py", REPRO_PY)
        _write(folder / "finding.txt", "\n".join(x for x in what + lines if x) + "\n")
        return folder

    def case_done(self, findings: list, comparison: tuple | None = None) -> list[Path]:
        """End of a case (findings: Finding objects or their dicts): each finding's text goes into its
        kernel's folder, a folder is written for a kernel whose finding only shows now (unwritten);
        comparison = (outputs, references, comparisons) of a failing check: a folder for the last launch
        that had each failing output among its arguments. Returns the folders written in this case."""
        from ..report import Finding, render

        findings = [Finding.from_dict(f) if isinstance(f, dict) else f for f in findings]
        for f in findings:
            if f.kernel and f.kernel not in self.done and f.kernel in self.last:
                self.write(self.last[f.kernel], [])
        for folder, snap in self._pending:
            texts = [render(f, context=False) for f in findings if f.kernel == snap.kernel]
            if texts:
                with open(folder / "finding.txt", "a") as out:
                    out.write("\nwhat tdebug reported for this kernel in that run:\n" + "\n".join(texts) + "\n")
        if comparison is not None:
            self._failed_comparison(*comparison)
        written = list(self.written)
        self.written, self._pending = [], []
        self.last, self.done = {}, set()
        return written

    def _failed_comparison(self, outs, refs, comps) -> None:
        import torch

        outs = outs if isinstance(outs, (tuple, list)) else (outs,)
        refs = refs if isinstance(refs, (tuple, list)) else (refs,)
        for out, ref, comp in zip(outs, refs, comps):
            if comp.ok or not isinstance(out, torch.Tensor):
                continue
            for snap in reversed(list(self.last.values())):
                arg = _argument_of(snap, out)
                if arg is not None and not snap.problem:
                    self.write(snap, [f"wrong output: {comp.summary()}"] + comp.details(),
                               expected={arg: (ref, comp.rtol, comp.atol)})
                    break


def _argument_of(snap: Snapshot, out) -> int | None:
    """The index of snap's tensor argument that is `out` (same start, shape and strides), last first."""
    for i in range(len(snap.tensors) - 1, -1, -1):
        t = snap.tensors[i]
        if snap.ptrs[i] == out.data_ptr() and t.shape == out.shape and t.stride() == out.stride():
            return i
    return None


def _is_kernel_finding(exc: BaseException) -> bool:
    from ..interpreter.patches import DeviceAssertError

    return isinstance(exc, DeviceAssertError)


def _exception_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _module_file_name(snap: Snapshot) -> str:
    stem = Path(snap.file).stem if snap.file else "kernel"
    stem = re.sub(r"\W", "_", stem)
    if not stem.isidentifier() or stem in ("repro", "torch", "triton"):
        stem = f"kernel_{stem}"
    return f"{stem}.py"


def _fresh_folder(root: Path, kernel: str) -> Path:
    """root/<kernel>-<n>, made here (mkdir fails if it exists: parallel writers never share one)."""
    n = 1
    while True:
        folder = root / f"{kernel}-{n}"
        try:
            folder.mkdir(parents=True)
            return folder
        except FileExistsError:
            n += 1


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    tmp.write_text(text)
    os.replace(tmp, path)


# -- the kernel's module, without its top-level work ---------------------------------------------------
def _simple(node: ast.AST) -> bool:
    """An expression a module-level constant may hold: literals, names, attributes, arithmetic, tuples,
    and calls of tl.constexpr / triton.language.constexpr."""
    if isinstance(node, (ast.Constant, ast.Name, ast.Attribute)):
        return True
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return all(_simple(e) for e in node.elts)
    if isinstance(node, ast.UnaryOp):
        return _simple(node.operand)
    if isinstance(node, ast.BinOp):
        return _simple(node.left) and _simple(node.right)
    if isinstance(node, ast.Call):
        return (isinstance(node.func, (ast.Attribute, ast.Name)) and ast.unparse(node.func).endswith("constexpr")
                and all(_simple(a) for a in node.args))
    return False


def _kept(node: ast.stmt) -> bool:
    if isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return True
    if isinstance(node, ast.Assign):
        return all(isinstance(t, ast.Name) for t in node.targets) and _simple(node.value)
    if isinstance(node, ast.AnnAssign):
        return isinstance(node.target, ast.Name) and (node.value is None or _simple(node.value))
    if isinstance(node, ast.Try):
        return all(_kept(s) for s in node.body + [s for h in node.handlers for s in h.body])
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):  # the docstring
        return True
    return False


def strip_module(source: str) -> str:
    """The module with only its imports, definitions and constants: every other top-level statement's lines
    blanked (a script's work, `if __name__ == "__main__":`), so each kept line keeps its number."""
    tree = ast.parse(source)
    lines = source.splitlines()
    out = [""] * len(lines)
    for node in tree.body:
        if not _kept(node):
            continue
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        for i in range(first - 1, node.end_lineno or node.lineno):
            out[i] = lines[i]
    return "\n".join(out) + "\n"


REPRO_PY = '''"""One Triton launch saved by tdebug --repro: `tdebug sanitize repro.py` replays it under the interpreter
sanitizer and reports what tdebug reported (finding.txt); plain `python repro.py` runs it under Triton's
interpreter. launch.json: the kernel, grid, scalars, constexprs and config; tensors.pt: its tensors."""

import json
import os
import sys
from pathlib import Path

os.environ.setdefault("TRITON_INTERPRET", "1")

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
launch = json.loads((HERE / "launch.json").read_text())
saved = torch.load(HERE / "tensors.pt", weights_only=True)
module = __import__(launch["module"])

kernel = getattr(module, launch["kernel"])
while not hasattr(kernel, "arg_names") or hasattr(kernel, "configs") or type(kernel).__name__ == "Heuristics":
    kernel = kernel.fn  # @triton.autotune / @triton.heuristics: the launch below is the one config that ran

# Tensors as the launch saw them: storages torch.empty made (they may hold unwritten elements) are made by
# torch.empty here too, so the uninitialised-read and unwritten checks see them as such.
storages = {}
allocated = []  # kept alive: tdebug knows torch.empty's tensors while they live
tensors = []
for t, empty in zip(saved["tensors"], launch["empty"]):
    storage = t.untyped_storage()
    key = storage.data_ptr()
    if key not in storages:
        if empty:
            fresh = torch.empty(storage.nbytes(), dtype=torch.uint8, device="cpu")
            # through numpy: a torch op's write would count as written (tdebug tracks them), the bytes would not
            fresh.numpy()[:] = torch.empty(0, dtype=torch.uint8, device="cpu").set_(storage).numpy()
            allocated.append(fresh)
            storages[key] = fresh.untyped_storage()
        else:
            storages[key] = storage
    tensors.append(torch.empty(0, dtype=t.dtype, device="cpu").set_(storages[key], t.storage_offset(), t.size(),
                                                                     t.stride()))


def value(v):
    if isinstance(v, dict) and "tensor" in v:
        return tensors[v["tensor"]]
    if isinstance(v, dict) and "tl_dtype" in v:
        return getattr(tl, v["tl_dtype"])
    if isinstance(v, dict) and "torch_dtype" in v:
        return getattr(torch, v["torch_dtype"])
    return v


args = [value(v) for v in launch["args"]]
kwargs = {k: value(v) for k, v in launch["kwargs"].items()}
kernel[tuple(launch["grid"])](*args, **kwargs)

for index, tol in launch["compare"].items():  # a failing check: the output against its float64 reference
    got, want = tensors[int(index)].to(torch.float64), saved["expected"][index]
    bad = ~torch.isclose(got, want, rtol=tol["rtol"], atol=tol["atol"], equal_nan=True)
    if bad.any():
        first = tuple(int(i) for i in bad.nonzero()[0])
        raise AssertionError(f"{int(bad.sum())} of {bad.numel()} elements outside tolerance (rtol {tol['rtol']:g}, "
                             f"atol {tol['atol']:.3g}); at {list(first)}: got {got[first]:.6g}, "
                             f"expected {want[first]:.6g}")
print(f"replayed {launch['kernel']} on grid {launch['grid']}")
'''
