"""Size caps for an interpreter run of a script written for the GPU: a launch over a cap stops the run, before
its host copies and programs, with LaunchTooLarge (what was checked before it stands; nothing after it is)."""

from __future__ import annotations

from dataclasses import dataclass

from .frames import KernelError


@dataclass
class Limits:
    max_programs: int = 0  # programs in one launch's grid (0: no cap)
    max_bytes: int = 0  # bytes of distinct tensor storages one launch takes (0: no cap)


class LaunchTooLarge(KernelError, RuntimeError):
    """A launch over a cap: the interpreter run stops here, and says what it did not check."""

    def __init__(self, kernel: str, what: str, size: int, cap: int, option: str) -> None:
        self.kernel, self.what, self.size, self.cap, self.option = kernel, what, size, cap, option
        super().__init__(f"launch of {kernel} not interpreted: {what} {size:,} is over the cap of {cap:,} "
                         f"({option}); this launch and every later one were not checked by the interpreter")


def _storage_bytes(value, seen: dict[int, int]) -> None:
    if isinstance(value, tuple):
        for v in value:
            _storage_bytes(v, seen)
        return
    t = getattr(value, "base", value)  # a TensorWrapper (reinterpreted dtype) holds the tensor in .base
    storage = getattr(t, "untyped_storage", None)
    if storage is not None:
        s = storage()
        seen[s.data_ptr()] = s.nbytes()


def install(limits: Limits) -> None:
    """Check every launch against the caps. Layer "limits", over the sanitizer's: the check runs before its
    shadow memory and the interpreter's host copies are made."""
    from triton.runtime import interpreter

    from .versions import bind, patcher

    patch = patcher("limits")

    builder = interpreter.interpreter_builder
    current: dict[str, str] = {"kernel": "kernel"}

    if limits.max_bytes:
        def make_init_args(original):
            def _init_args_hst(*args, **kwargs):
                call = bind(original, args, kwargs)
                executor = call.arguments["self"]
                current["kernel"] = getattr(executor.fn, "__name__", "kernel")
                seen: dict[int, int] = {}
                for value in list(call.arguments["args_dev"]) + list(call.arguments["kwargs"].values()):
                    _storage_bytes(value, seen)
                total = sum(seen.values())
                if total > limits.max_bytes:
                    raise LaunchTooLarge(current["kernel"], "tensor-argument bytes", total, limits.max_bytes,
                                         "--max-mib")
                return original(*call.args, **call.kwargs)
            return _init_args_hst

        patch(interpreter.GridExecutor, "_init_args_hst", make_init_args)

    if limits.max_programs:
        def make_set_grid_dim(original):
            def set_grid_dim(*args, **kwargs):
                call = bind(original, args, kwargs)
                programs = 1
                for n in call.arguments.values():
                    programs *= int(n)
                if programs > limits.max_programs:
                    raise LaunchTooLarge(current["kernel"], "grid of programs", programs, limits.max_programs,
                                         "--max-programs")
                return original(*call.args, **call.kwargs)
            return set_grid_dim

        patch(builder, "set_grid_dim", make_set_grid_dim)

        def make_call(original):
            def __call__(self, *args, **kwargs):
                current["kernel"] = getattr(self.fn, "__name__", "kernel")
                return original(self, *args, **kwargs)
            return __call__

        patch(interpreter.GridExecutor, "__call__", make_call)
