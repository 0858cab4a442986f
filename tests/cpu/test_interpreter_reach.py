"""What tdebug's interpreter adds to Triton's so that real kernels run: typed scalar arguments, libdevice,
grids as compiled Triton reads them, exact bf16 and fp8 casts, and a clear "could not run" for the rest."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from tdebug.interpreter.semantics.bf16 import decode, encode, fp32_to_bf16
from tdebug.interpreter.semantics.grid import GridError, normalize_grid
from tdebug.interpreter.unsupported import NotRunnable, unsupported_reason

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "cpu" / "data"


def tdebug(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tdebug", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)


def special_floats() -> np.ndarray:
    rng = np.random.default_rng()
    normal = rng.standard_normal(20000).astype(np.float32) * np.float32(10.0) ** rng.integers(-40, 38, 20000)
    ties = (rng.integers(0, 2**16, 2000, dtype=np.uint32) << 16 | 0x8000).view(np.float32)  # exact halfway cases
    edge = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 3.3895314e38, 3.4028235e38, 1e-45, -1e-40],
                    dtype=np.float32)
    return np.concatenate([normal, ties[np.isfinite(ties)], edge])


def test_fp32_to_bf16_rounds_like_torch_to_nearest_even():
    values = special_floats()
    want = torch.from_numpy(values).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
    got = fp32_to_bf16(values)
    nan = np.isnan(values)
    assert np.array_equal(got[~nan], want[~nan])
    assert np.isnan(decode(got[nan], "bf16")).all()


def test_fp64_to_bf16_rounds_once():
    # 1 + 2**-8 + 2**-40: rounded to fp32 first it becomes the tie 1 + 2**-8, which rounds to even (1.0);
    # rounded once, it is above the tie and rounds up to 1 + 2**-7.
    got = decode(encode(np.array([1 + 2**-8 + 2**-40]), "bf16"), "bf16")
    assert got[0] == np.float32(1 + 2**-7)


@pytest.mark.parametrize("name, torch_dtype, largest", [("fp8e4nv", torch.float8_e4m3fn, 448.0),
                                                         ("fp8e5", torch.float8_e5m2, 57344.0)])
def test_fp8_casts_are_exact_and_saturate(name, torch_dtype, largest):
    values = np.concatenate([np.random.default_rng().standard_normal(5000).astype(np.float32) * 50,
                             np.array([1e6, -1e6, np.inf, 0.0], dtype=np.float32)])
    bits = encode(values, name)
    want = torch.from_numpy(values).clamp(-largest, largest).to(torch_dtype).view(torch.uint8).numpy()
    assert np.array_equal(bits, want)
    assert decode(bits, name)[-4:].tolist() == [largest, -largest, largest, 0.0]


@pytest.mark.parametrize("grid, want", [
    (7, (7, 1, 1)), ([3, 2], (3, 2, 1)), ((4,), (4, 1, 1)), ((5, 6, 1, 1), (5, 6, 1)),
    (lambda meta: [meta["n"], 2], (9, 2, 1)), (np.int64(3), (3, 1, 1)),
])
def test_grids_are_read_as_compiled_triton_reads_them(grid, want):
    assert normalize_grid(grid, {"n": 9}) == want


@pytest.mark.parametrize("grid", [(), "abc", (1.5j,)])
def test_a_grid_compiled_triton_cannot_launch_is_an_error(grid):
    with pytest.raises(GridError):
        normalize_grid(grid, {})


def test_unsupported_is_told_apart_from_the_kernels_own_errors():
    assert unsupported_reason(NotRunnable("libdevice.j0")) == "libdevice.j0"
    missing = AttributeError("'InterpreterBuilder' object has no attribute 'create_map_elementwise'")
    assert "map_elementwise" in unsupported_reason(missing)
    assert "inline_asm" in unsupported_reason(NotImplementedError("inline_asm not supported in interpreter mode"))
    assert unsupported_reason(ValueError("shape mismatch")) is None
    assert unsupported_reason(AttributeError("'float' object has no attribute 'to'")) is None


def test_real_kernel_constructs_run_clean_and_match_torch():
    # Scalars, libdevice, list/int/4-tuple grids, bf16 bit for bit, bf16 reductions and dots, fp8, bf16 atomics.
    proc = tdebug("sanitize", "--device", "cpu", "--timeout", "600", str(DATA / "interpreter_reach.py"))
    assert proc.returncode == 0, (proc.stdout[-3000:], proc.stderr[-3000:])
    oks = [line for line in proc.stdout.splitlines() if line.endswith(": ok")]
    assert len(oks) == 12, proc.stdout
    assert "interpreter_reach.py: clean" in proc.stdout


@pytest.mark.parametrize("command, instead", [(["run"], "--mode debug"),
                                              (["sanitize", "--device", "cpu"], "--device cuda")])
def test_an_unsupported_construct_ends_with_one_line_and_exit_3(command, instead):
    proc = tdebug(*command, str(DATA / "unsupported_asm.py"))
    assert proc.returncode == 3, (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "could not run" in lines[0] and "inline_asm" in lines[0]
    assert "unsupported_asm.py:13" in lines[0]  # the kernel line
    assert instead in lines[0]
    assert "Traceback" not in proc.stdout + proc.stderr


def test_bf16_kernel_with_a_missing_mask_is_caught_on_the_cpu():
    proc = tdebug("sanitize", "bugs/04_gelu_missing_masks.py", "--dtype", "bf16", "--shape", "129x127")
    assert proc.returncode == 1, proc.stdout[-2000:]
    assert "bounds: load past the end of 'x_ptr'" in proc.stdout
    assert "bf16" in proc.stdout


def test_a_catalogue_kernel_passes_in_bf16():
    proc = tdebug("run", "kernels/layernorm.py", "--dtype", "bf16", "--shape", "37x300")
    assert proc.returncode == 0, proc.stdout
    assert "PASS  37x300 bf16 contiguous" in proc.stdout


def test_a_product_plus_an_addend_is_rounded_once_like_the_gpus_fma():
    from types import SimpleNamespace

    from tdebug.interpreter.semantics.fma import fused

    def handle(value, name):
        return SimpleNamespace(data=np.array([value], dtype=np.float32), dtype=SimpleNamespace(name=name))

    a = handle(1 + 2**-12, "fp32")  # a * a = 1 + 2**-11 + 2**-24: rounded alone, the 2**-24 tie goes to even
    two_roundings = np.float32(np.float32(a.data[0] * a.data[0]) - np.float32(1))
    once = fused(a, a, handle(1.0, "fp32"), 1.0, -1.0, "fp32")[0]
    assert two_roundings == np.float32(2**-11)
    assert once == np.float32(2**-11 + 2**-24)


def test_libdevice_rounding_modes_and_conversions():
    from tdebug.interpreter.semantics.libdevice import NUMPY

    one, three = np.array([1.0], dtype=np.float32), np.array([3.0], dtype=np.float32)
    down, up = NUMPY["div_rd"](one, three)[0], NUMPY["div_ru"](one, three)[0]
    assert down < np.float32(1 / 3) < up or np.float32(1 / 3) in (down, up)
    assert np.nextafter(down, np.float32(1)) == up  # one fp32 step apart, around the exact third
    halves = np.array([1.5, -1.5, 2.5], dtype=np.float32)
    assert NUMPY["float2int_rz"](halves).tolist() == [1, -1, 2]
    assert NUMPY["float2int_rn"](halves).tolist() == [2, -2, 2]
    assert NUMPY["round"](halves).tolist() == [2, -2, 3]  # C round(): half away from zero
    big = np.array([2**24 + 1], dtype=np.int64)
    assert NUMPY["ll2float_rd"](big)[0] == 2**24 and NUMPY["ll2float_ru"](big)[0] == 2**24 + 2


@pytest.mark.parametrize("executor", ["serial", "batched"])
def test_maximum_of_a_signaling_nan_is_the_number_on_both_engines(executor):
    """numpy's fmax gave the NaN in its scalar loop and the number in its vector loop (engine-dependent); a GPU's
    max.f32 gives the number, and so does tdebug now, whichever engine runs the kernel."""
    import os

    env = {**os.environ, "TDEBUG_EXECUTOR": executor, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "tdebug", "run", "tests/cpu/data/signaling_nan_max.py", "--mode",
                           "interpret"], cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "nan count 0" in proc.stdout
    assert "zero signs 0 16 0" in proc.stdout  # max +0.0, min -0.0
