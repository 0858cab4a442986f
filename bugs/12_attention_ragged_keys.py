"""Exercise 12: flash attention on a ragged sequence length, padded keys left in the softmax.

What you were doing: a flash-attention forward, checked against scaled_dot_product_attention for
S = 128, 256 and 1024: all equal. Then a batch came with S = 67. The K and V tails are loaded under a
mask, padded with zeros, so the kernel reads no memory it should not.

What you saw: causal attention is still right, full attention is off everywhere on that batch. A
padded key is a row of zeros, so its score is q . 0 = 0, not -inf: every query gives each padded key a
weight exp(0 - max) in the softmax's denominator. The padding is safe for memory, not for the maths.
"""

import torch
import triton
import triton.language as tl

import tdebug

HEAD_DIMS = (16, 32, 64, 128)


@triton.jit
def attention_fwd_kernel(q_ptr, k_ptr, v_ptr, o_ptr,
                         sm_scale, H, S,
                         stride_qb, stride_qh, stride_qs, stride_qd,
                         stride_kb, stride_kh, stride_ks, stride_kd,
                         stride_vb, stride_vh, stride_vs, stride_vd,
                         stride_ob, stride_oh, stride_os, stride_od,
                         CAUSAL: tl.constexpr, HEAD_DIM: tl.constexpr, INPUT_PRECISION: tl.constexpr,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    start_m = tl.program_id(0)
    off_bh = tl.program_id(1).to(tl.int64)
    off_b = off_bh // H
    off_h = off_bh % H
    q_base = q_ptr + off_b * stride_qb + off_h * stride_qh
    k_base = k_ptr + off_b * stride_kb + off_h * stride_kh
    v_base = v_ptr + off_b * stride_vb + off_h * stride_vh
    o_base = o_ptr + off_b * stride_ob + off_h * stride_oh

    offs_m = start_m.to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q_mask = offs_m[:, None] < S
    q = tl.load(q_base + offs_m[:, None] * stride_qs + offs_d[None, :] * stride_qd, mask=q_mask, other=0.0)

    m_i = tl.full([BLOCK_M], -float("inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.4426950408889634  # log2(e): exp(x) == exp2(x * log2(e))

    if CAUSAL:
        hi = tl.minimum((start_m + 1) * BLOCK_M, S)
    else:
        hi = S
    for start_n in range(0, hi, BLOCK_N):
        cols = start_n + offs_n
        kv_valid = cols < S
        # K^T block (HEAD_DIM x BLOCK_N), read through K's strides.
        k = tl.load(k_base + cols[None, :] * stride_ks + offs_d[:, None] * stride_kd,
                    mask=kv_valid[None, :], other=0.0)
        qk = tl.dot(q, k, input_precision=INPUT_PRECISION) * qk_scale
        if CAUSAL:
            visible = kv_valid[None, :] & (cols[None, :] <= offs_m[:, None])
            qk = tl.where(visible, qk, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(qk, axis=1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(qk - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(v_base + cols[:, None] * stride_vs + offs_d[None, :] * stride_vd,
                    mask=kv_valid[:, None], other=0.0)
        acc = acc * alpha[:, None]
        acc = tl.dot(p.to(v.dtype), v, acc, input_precision=INPUT_PRECISION)
        m_i = m_new

    out = acc / l_i[:, None]
    tl.store(o_base + offs_m[:, None] * stride_os + offs_d[None, :] * stride_od,
             out.to(o_ptr.dtype.element_ty), mask=q_mask)


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False) -> torch.Tensor:
    if q.dim() != 4 or k.shape != q.shape or v.shape != q.shape:
        raise ValueError(f"attention takes q, k, v of one shape (B, H, S, D), got {tuple(q.shape)}, "
                         f"{tuple(k.shape)}, {tuple(v.shape)}")
    if not q.is_floating_point() or k.dtype != q.dtype or v.dtype != q.dtype:
        raise ValueError(f"attention: q, k, v must share a floating dtype, got {q.dtype}, {k.dtype}, {v.dtype}")
    B, H, S, D = q.shape
    if D not in HEAD_DIMS:
        raise ValueError(f"attention: head dim D={D} not supported; D must be one of {HEAD_DIMS} "
                         "(a power of 2 >= 16: tl.arange and tl.dot need it)")
    if S == 0 or B * H == 0:
        raise ValueError(f"attention: empty input {tuple(q.shape)}")
    o = torch.empty((B, H, S, D), device=q.device, dtype=q.dtype)
    fp32 = q.dtype == torch.float32
    precision = "ieee" if fp32 else "tf32"  # "tf32" is ignored for 16-bit inputs
    # fp32 operands take twice the shared memory of fp16 ones: smaller tiles, fewer stages.
    if fp32:
        BLOCK_M, BLOCK_N, num_warps, num_stages = 64, 32, 4, 2
    elif D <= 64:
        BLOCK_M, BLOCK_N, num_warps, num_stages = 128, 64, 4, 3
    else:
        BLOCK_M, BLOCK_N, num_warps, num_stages = 128, 64, 8, 3
    grid = lambda META: (triton.cdiv(S, META["BLOCK_M"]), B * H)
    attention_fwd_kernel[grid](q, k, v, o, 1.0 / D ** 0.5, H, S,
                               q.stride(0), q.stride(1), q.stride(2), q.stride(3),
                               k.stride(0), k.stride(1), k.stride(2), k.stride(3),
                               v.stride(0), v.stride(1), v.stride(2), v.stride(3),
                               o.stride(0), o.stride(1), o.stride(2), o.stride(3),
                               CAUSAL=bool(causal), HEAD_DIM=D, INPUT_PRECISION=precision,
                               BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, num_warps=num_warps, num_stages=num_stages)
    return o


def reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False) -> torch.Tensor:
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)


def flash_sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False) -> torch.Tensor:
    """The benchmark baseline: SDPA's flash backend (left to itself, SDPA picks cuDNN on an H100)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)


def make_inputs(case: tdebug.Case) -> tuple:
    B, H, S, D = case.shape
    q = tdebug.randn(case, (B, H, S, D), salt=1)
    k = tdebug.randn(case, (B, H, S, D), salt=2)
    v = tdebug.randn(case, (B, H, S, D), salt=3)
    return q, k, v, case.variant == "causal"


def attention_flops(s: tuple) -> float:
    B, H, S, D = s
    return 4.0 * B * H * S * S * D  # full; causal does about half


SPEC = tdebug.KernelSpec(
    name="attention",
    launch=attention,
    reference=reference,
    make_inputs=make_inputs,
    kernel=attention_fwd_kernel,
    dims=("B", "H", "S", "D"),
    default_shape=(1, 2, 67, 16),
    variants=("full", "causal"),
    # S against the blocks (fp32 64x32, fp16 128x64): 1, 31/33, 67, 128, 129 (a 1-row tail block).
    shapes=[(1, 2, 67, 16), (2, 1, 128, 32), (1, 1, 1, 16), (1, 2, 129, 64), (1, 1, 33, 128), (2, 2, 31, 16)],
    quick_shapes=[(1, 2, 67, 16), (1, 2, 129, 64)],
    baseline=flash_sdpa,
    flops=attention_flops,
    bytes=lambda s, size: 4 * s[0] * s[1] * s[2] * s[3] * size,
    bench_shapes=[(4, 32, 4096, 128), (8, 16, 2048, 64), (1, 32, 16384, 128)],
)

BUG = tdebug.Bug(
    fixes='kernels/attention.py',
    title='Flash attention: padded keys not masked out of the softmax',
    symptom=(
        'non-causal output wrong on every row when S is not a multiple of BLOCK_N (e.g. S=67); causal and '
        'S=128 are right'
    ),
    hints=[
        (
            'Full attention fails at S = 67 and passes at S = 128; causal passes at both. What does the '
            'last key block hold at S = 67?'
        ),
        (
            'A masked load keeps memory safe, but the padded keys still get a score. What is q . k for a '
            'key loaded as zeros, and what weight does the softmax give it?'
        ),
        (
            'Set the scores of keys at or past S to -inf before the max and the exponentials, causal or '
            "not: qk = tl.where(cols[None, :] < S, qk, -float('inf'))."
        ),
    ],
    caught_by=['check'],
    difficulty='hard',
    shape=(1, 2, 67, 16),
    layout='contiguous',
    dtype='fp32',
    gpu_only=False,
)
