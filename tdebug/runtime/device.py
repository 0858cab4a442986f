"""Where a job runs: the one GPU probe (asked of the CUDA driver, without importing torch) and the one decision
from what the user asked (--device auto|cpu|cuda, "auto" the default of every command)."""

from __future__ import annotations

import ctypes
import enum
import functools
import os

ASKED = ("auto", "cpu", "cuda")  # what --device takes
DEFAULT = "auto"  # every command's default: the GPU when one is visible, else the CPU interpreter
NO_GPU = "no CUDA GPU is visible"


class Device(str, enum.Enum):
    """The device a job's tensors live on; its value is the torch device name."""

    CPU = "cpu"
    CUDA = "cuda"

    def __str__(self) -> str:
        return self.value


class NoGpu(RuntimeError):
    """--device cuda where no CUDA GPU is visible: tdebug cannot do the job here (exit 3)."""


@functools.cache
def _probe() -> bool:
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    count = ctypes.c_int(0)
    return cuda.cuInit(0) == 0 and cuda.cuDeviceGetCount(ctypes.byref(count)) == 0 and count.value > 0


def gpu_visible() -> bool:
    """A CUDA device is visible to this process (CUDA_VISIBLE_DEVICES honoured), asked of the driver once:
    importing torch here would cost the parent seconds that its workers pay again."""
    return _probe()


def resolve(asked: str = DEFAULT, *, nvml: bool = False) -> Device:
    """The device for --device `asked`: "cpu" always; "cuda" or NoGpu; "auto" the GPU when visible. Every
    command decides here. `nvml`: the GPU asked of NVML (gpu_visible_nvml), for a process that forks later."""
    if asked not in ASKED:
        raise ValueError(f"--device {asked!r}: one of {', '.join(ASKED)}")
    if asked == "cpu":
        return Device.CPU
    if gpu_visible_nvml() if nvml else gpu_visible():
        return Device.CUDA
    if asked == "cuda":
        raise NoGpu(f"--device cuda: {NO_GPU}")
    return Device.CPU


def gpu_visible_nvml() -> bool:
    """A CUDA device is visible, asked of NVML (no CUDA context, no cuInit): safe in a process that forks later
    (CUDA cannot be used in a child forked after the parent initialised it). CUDA_VISIBLE_DEVICES honoured."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip() in ("", "-1"):
        return False
    try:
        nvml = ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        return False
    count = ctypes.c_uint(0)
    try:
        if nvml.nvmlInit_v2() != 0:
            return False
        try:
            return nvml.nvmlDeviceGetCount_v2(ctypes.byref(count)) == 0 and count.value > 0
        finally:
            nvml.nvmlShutdown()
    except AttributeError:
        return False
