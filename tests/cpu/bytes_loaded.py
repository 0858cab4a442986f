"""A check written as one listener class and nothing else (issue 50): the bytes each program loads.
memory_events.listen() hands it every load as an Access, each launch's beginning and end, and the batched engine's
checkpoint / rollback / commit (that engine undoes its part of a batch it runs again). No patch: the serial and
the batched engine give the same counts (test_listener_example.py)."""

from __future__ import annotations

from collections import Counter

import numpy as np

from tdebug.interpreter.batched import program_axis
from tdebug.interpreter.hooks import memory_events


class BytesLoaded:
    """Bytes loaded per program id: active lanes times the element size, every load of every launch."""

    def __init__(self) -> None:
        self.by_program: Counter[tuple[int, int, int]] = Counter()
        self.launches: list[list] = []  # per launch: kernel, tensors copied to the host, how it ended

    def on_launch(self, launch) -> None:  # grid_loop's Launch: kernel, arguments, tensors found once, grid
        self.launches.append([launch.name, 0, "running"])
    def on_host_args(self, launch, args_hst: list, kwargs_hst: dict) -> None:  # the interpreter's copies made
        self.launches[-1][1] = len(launch.device_storages())

    def on_launch_end(self, launch, error: BaseException | None) -> None:  # after it, or what it raised
        self.launches[-1][2] = "ok" if error is None else type(error).__name__

    def before(self, access: memory_events.Access) -> None:
        from triton.runtime.interpreter import _get_np_dtype, interpreter_builder

        ptrs = access.ptrs
        size = np.dtype(_get_np_dtype(ptrs.get_element_ty())).itemsize
        shape = np.shape(ptrs.data)
        mask = np.ones(shape, bool) if access.mask is None else np.broadcast_to(access.mask.data, shape)
        lanes = program_axis.lane_programs()  # the batch whose programs' lanes this op holds, a row each
        if lanes is None:  # one program's op
            self.by_program[tuple(int(i) for i in interpreter_builder.grid_idx)] += size * int(mask.sum())
            return
        for pid, n in zip(lanes.pids.T.tolist(), mask.reshape(lanes.size, -1).sum(axis=1).tolist()):
            self.by_program[tuple(pid)] += size * int(n)

    def checkpoint(self) -> Counter:
        return Counter(self.by_program)

    def rollback(self, token: Counter) -> None:
        self.by_program = token

    def commit(self, token: Counter) -> None:
        pass


def install() -> BytesLoaded:
    """Listen to every load, outside every check (layer "test")."""
    listener = BytesLoaded()
    memory_events.listen("test", listener, ("create_masked_load",))
    return listener
