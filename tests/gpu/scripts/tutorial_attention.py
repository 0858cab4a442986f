"""Correct: a fused attention forward as Triton's fused-attention tutorial builds one (one program per query block
and head, an online softmax in base 2 over key blocks in a @triton.jit helper, causal runs split into the blocks
below the diagonal and the masked diagonal block, the row log-sum-exp stored for a backward, autotuned), fp16 in
and out, fp32 accumulation, causal and not, on a GPU if there is one, checked against PyTorch in float64."""

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
LOG2E = 1.4426950408889634


@triton.jit
def key_blocks(acc, l_i, m_i, q, k_base, v_base, stride_t, start_m, qk_scale, offs_m, offs_n, n_ctx,
               HEAD: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, PART: tl.constexpr):
    # PART 1: key blocks wholly below the diagonal; 2: the diagonal block, masked; 3: every key block.
    if PART == 1:
        lo, hi = 0, start_m * BLOCK_M
    elif PART == 2:
        lo, hi = start_m * BLOCK_M, (start_m + 1) * BLOCK_M
    else:
        lo, hi = 0, n_ctx
    offs_d = tl.arange(0, HEAD)
    for start_n in range(lo, hi, BLOCK_N):
        keys = start_n + offs_n
        k = tl.load(k_base + keys[None, :] * stride_t + offs_d[:, None])  # HEAD x BLOCK_N: K transposed
        s = tl.dot(q, k)
        if PART == 2:
            s = s * qk_scale + tl.where(offs_m[:, None] >= keys[None, :], 0.0, float("-inf"))
            m_new = tl.maximum(m_i, tl.max(s, 1))
            s -= m_new[:, None]
        else:
            m_new = tl.maximum(m_i, tl.max(s, 1) * qk_scale)
            s = s * qk_scale - m_new[:, None]
        p = tl.math.exp2(s)
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_base + keys[:, None] * stride_t + offs_d[None, :])
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)
        m_i = m_new
    return acc, l_i, m_i


@triton.autotune(configs=[triton.Config({"BLOCK_M": 64, "BLOCK_N": 32}, num_warps=4, num_stages=3),
                          triton.Config({"BLOCK_M": 128, "BLOCK_N": 64}, num_warps=8, num_stages=3)],
                 key=["n_ctx", "HEAD"])
@triton.jit
def attention_forward(q_ptr, k_ptr, v_ptr, o_ptr, lse_ptr, sm_scale, stride_h, stride_t, n_ctx,
                      HEAD: tl.constexpr, CAUSAL: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    start_m = tl.program_id(0)
    head = tl.program_id(1).to(tl.int64)  # batch x heads, flattened
    base = head * stride_h
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD)
    q = tl.load(q_ptr + base + offs_m[:, None] * stride_t + offs_d[None, :])
    m_i = tl.full((BLOCK_M,), float("-inf"), tl.float32)
    l_i = tl.full((BLOCK_M,), 1.0, tl.float32)  # exp2(-inf - m) is 0 in the first block: the 1 is scaled away
    acc = tl.zeros((BLOCK_M, HEAD), tl.float32)
    qk_scale = sm_scale * 1.4426950408889634  # softmax in base 2
    if CAUSAL:
        acc, l_i, m_i = key_blocks(acc, l_i, m_i, q, k_ptr + base, v_ptr + base, stride_t, start_m, qk_scale,
                                   offs_m, offs_n, n_ctx, HEAD, BLOCK_M, BLOCK_N, 1)
        acc, l_i, m_i = key_blocks(acc, l_i, m_i, q, k_ptr + base, v_ptr + base, stride_t, start_m, qk_scale,
                                   offs_m, offs_n, n_ctx, HEAD, BLOCK_M, BLOCK_N, 2)
    else:
        acc, l_i, m_i = key_blocks(acc, l_i, m_i, q, k_ptr + base, v_ptr + base, stride_t, start_m, qk_scale,
                                   offs_m, offs_n, n_ctx, HEAD, BLOCK_M, BLOCK_N, 3)
    tl.store(lse_ptr + head * n_ctx + offs_m, m_i + tl.math.log2(l_i))
    tl.store(o_ptr + base + offs_m[:, None] * stride_t + offs_d[None, :], (acc / l_i[:, None]).to(tl.float16))


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, sm_scale: float):
    batch, heads, n_ctx, head = q.shape
    assert n_ctx % 128 == 0 and q.is_contiguous() and k.is_contiguous() and v.is_contiguous()
    o = torch.empty_like(q)
    lse = torch.empty((batch, heads, n_ctx), device=q.device, dtype=torch.float32)

    def grid(meta: dict) -> tuple[int, int]:
        return (triton.cdiv(n_ctx, meta["BLOCK_M"]), batch * heads)

    attention_forward[grid](q, k, v, o, lse, sm_scale, q.stride(1), q.stride(2), n_ctx, HEAD=head, CAUSAL=causal)
    return o, lse


torch.manual_seed(0)
Z, H, T, D = 2, 4, 256, 64
q, k, v = (torch.randn(Z, H, T, D, device=DEVICE, dtype=torch.float16) for _ in range(3))
scale = D ** -0.5
for causal in (False, True):
    o, lse = attention(q, k, v, causal, scale)
    s = q.double() @ k.double().transpose(-1, -2) * scale
    if causal:
        s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=DEVICE).triu(1), float("-inf"))
    ref = torch.softmax(s, -1) @ v.double()
    err = float((o.double() - ref).abs().max())
    lse_err = float((lse.double() - torch.logsumexp(s, -1) * LOG2E).abs().max())
    assert err < 1e-2 and lse_err < 1e-2, (causal, err, lse_err)
    print(f"ok causal={causal} {err:.2e} {lse_err:.2e}")
