"""Size caps for an interpreter run of a script written for the GPU: a launch over a cap stops the run, before
its host copies and programs, with LaunchTooLarge (what was checked before it stands; nothing after it is)."""

from __future__ import annotations

from dataclasses import dataclass

from ..frames import KernelError


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


class _BytesCap:
    """A listener of grid_loop: the launch's tensor storages (found once by its Launch) over the cap stop the
    run before the interpreter copies them to the host."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes

    def before_host_args(self, launch) -> None:
        total = sum(s.nbytes() for s in launch.device_storages())
        if total > self.max_bytes:
            raise LaunchTooLarge(launch.name, "tensor-argument bytes", total, self.max_bytes, "--max-mib")


def install(limits: Limits) -> None:
    """Check every launch against the caps. Layer "limits", over the sanitizer's: the check runs before its
    shadow memory and the interpreter's host copies are made."""
    from triton.runtime import interpreter

    from ..batched import grid_loop
    from ..batched.launch import current_launch
    from ..versions import bind, patcher

    patch = patcher("limits")

    builder = interpreter.interpreter_builder

    def kernel() -> str:
        launch = current_launch()
        return "kernel" if launch is None else launch.name

    if limits.max_bytes:
        grid_loop.listen("limits", _BytesCap(limits.max_bytes))

    if limits.max_programs:
        def make_set_grid_dim(original):
            def set_grid_dim(*args, **kwargs):
                call = bind(original, args, kwargs)
                programs = 1
                for n in call.arguments.values():
                    programs *= int(n)
                if programs > limits.max_programs:
                    raise LaunchTooLarge(kernel(), "grid of programs", programs, limits.max_programs,
                                         "--max-programs")
                return original(*call.args, **call.kwargs)
            return set_grid_dim

        patch(builder, "set_grid_dim", make_set_grid_dim)
