"""Each interpreted launch of a sanitizing process takes its turn for host memory (runtime/host_memory.py): a
listener of the grid loop that reserves room for the sanitizer's shadow tables before the launch and frees it
after, so pytest-xdist workers on one machine do not together outgrow its memory."""

from __future__ import annotations

from ..runtime import host_memory

# Host memory the sanitizer adds per element of a launch's tensors on the CPU (the shadow tables: writers, readers,
# written marks, initialised bits; store records; the engine's batches): measured 19 bytes per element for a Liger
# cross entropy over 2048 x 32000 fp32 logits under pytest --tdebug (1.2 GB more peak RSS than plain)
BYTES_PER_ELEMENT = 24


def launch_bytes(launch) -> int:
    """Host memory the launch's checks will take, estimated from its distinct storages and the smallest element
    size among its tensor arguments (both found once by the Launch)."""
    storages = launch.device_storages()
    return BYTES_PER_ELEMENT * sum(s.nbytes() for s in storages) // (launch.smallest_element() or 4)


class HostMemoryTurns:
    """on_launch reserves, on_launch_end releases (a reservation of the GPU's divergence check around the
    launch already counts it: the inner one then takes nothing)."""

    def __init__(self) -> None:
        self.held: list[host_memory.Reservation] = []  # a stack: a kernel launched from a kernel's Python
        self.waited = 0.0

    def on_launch(self, launch) -> None:
        held = host_memory.reserve(launch_bytes(launch))
        self.waited += held.waited
        self.held.append(held)

    def on_launch_end(self, launch, error: BaseException | None) -> None:
        if self.held:
            self.held.pop().release()


def install() -> HostMemoryTurns:
    from ..interpreter.batched import grid_loop

    turns = HostMemoryTurns()
    grid_loop.listen("host_memory", turns)
    return turns
