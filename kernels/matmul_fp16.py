"""fp16 matmul and its acceptance test: deciding when fp16 results are right.

The kernel is kernels/matmul.py's (fp32 accumulation, one rounding to fp16 at the store). This entry
adds what a user writes next to it: `user_check(out, ref)`, which accepts or rejects an fp16 output
against an fp32 reference computed from the same fp16 inputs.

fp16 keeps 11 significant bits, so the spacing between neighbouring fp16 numbers (one ULP) grows with
the value: 2**-10 near 1, 0.0625 near 64, 0.25 near 256. A correctly rounded result is up to half an
ULP from the exact one, so the bound must scale with the values: a relative tolerance (1e-2 leaves
room for the rounding of the inputs' products as well) plus an absolute floor proportional to the
largest output, for the entries near zero where a relative bound alone is too strict.
"""

import torch

import tdebug
from kernels.matmul import complete_shape, make_inputs, matmul, matmul_kernel, reference


def user_check(out: torch.Tensor, ref: torch.Tensor) -> bool:
    """Does the fp16 output `out` match `ref` (fp32 or fp64) within what fp16 rounding allows?"""
    got, want = out.double(), ref.double()
    atol = 2e-3 * float(want.abs().max())
    return bool(torch.allclose(got, want, rtol=1e-2, atol=atol))


SPEC = tdebug.KernelSpec(
    name="matmul_fp16",
    launch=matmul,
    reference=reference,
    make_inputs=make_inputs,
    kernel=matmul_kernel,
    dims=("M", "N", "K"),
    complete_shape=complete_shape,
    # K = 1024: outputs reach ~100, where half an fp16 ULP (0.031) is above a 0.02 absolute bound.
    default_shape=(128, 128, 1024),
    shapes=[(128, 128, 1024), (129, 127, 65), (64, 64, 2048)],
    quick_shapes=[(128, 128, 1024)],
    dtypes=("fp16",),
    gpu_dtypes=("fp16",),
    layouts=("contiguous", "transposed"),
    tolerances={"fp16": (1e-2, 2e-3)},
    baseline=torch.matmul,
    flops=lambda s: 2.0 * s[0] * s[1] * s[2],
    bytes=lambda s, size: (s[0] * s[2] + s[2] * s[1] + s[0] * s[1]) * size,
    bench_shapes=[(1024, 1024, 1024), (4096, 4096, 4096)],
)
