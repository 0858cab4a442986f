"""Exercise 13: the fp16 tolerance trap. The kernel is right; the test is not.

What you were doing: checking an fp16 matmul against torch on 128 x 128 x 1024 with your own test,
user_check below: the largest absolute difference from an fp32 reference must stay under 0.02, a bound
that had always worked for your fp32 kernels.

What you saw: user_check fails with a largest difference of 0.03 to 0.05, and you started hunting for a
bug in the kernel's indexing. There is none: `tdebug check` on this file passes, and its report shows
where the error sits. The outputs reach 100 and more; near 128 neighbouring fp16 numbers are 0.125 apart,
so the correctly rounded answer can be 0.0625 from the exact one. Fix the test, not the kernel: the
exercise passes when user_check accepts this kernel and still rejects wrong results.
"""

import torch

import tdebug
from kernels.matmul import complete_shape, make_inputs, matmul, matmul_kernel, reference


def user_check(out: torch.Tensor, ref: torch.Tensor) -> bool:
    """Does the fp16 output `out` match `ref` (fp32 or fp64)?"""
    return float((out.double() - ref.double()).abs().max()) <= 0.02


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

BUG = tdebug.Bug(
    fixes='kernels/matmul_fp16.py',
    title='fp16 tolerance trap: the check is wrong, not the kernel',
    symptom=(
        'user_check (max abs error <= 0.02) rejects a correct fp16 matmul at 128x128x1024 (errors of '
        '0.03-0.05 on outputs around 100)'
    ),
    hints=[
        (
            'Run tdebug check on this file first. Does tdebug think the kernel is wrong? Read its error '
            'report: the max abs error, the max relative error, and the tolerance it used.'
        ),
        (
            'How far apart are neighbouring fp16 numbers near 100? torch.finfo(torch.float16).eps is the '
            'spacing near 1; the spacing scales with the value.'
        ),
        (
            'Judge fp16 results relative to their size: torch.allclose(out, ref, rtol=1e-2, atol=...) '
            'with atol proportional to ref.abs().max(), not a fixed 0.02.'
        ),
    ],
    caught_by=['clean'],
    difficulty='easy',
    shape=(128, 128, 1024),
    layout='contiguous',
    dtype='fp16',
    gpu_only=False,
    config=0,
)
