"""Correct: a fused attention forward (online softmax over key blocks, as Triton's fused-attention tutorial does
it), fp16 in, fp32 accumulation, on 2 x 4 heads x 200 queries x 64, checked against PyTorch in float64."""

import torch
import triton
import triton.language as tl


@triton.jit
def attention_fwd_kernel(q_ptr, k_ptr, v_ptr, o_ptr, n_ctx, scale, stride_h, stride_t,
                         HEAD: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    start_m = tl.program_id(0)
    head = tl.program_id(1)
    rm = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rd = tl.arange(0, HEAD)
    base = head * stride_h
    q = tl.load(q_ptr + base + rm[:, None] * stride_t + rd[None, :], mask=rm[:, None] < n_ctx, other=0.0)
    m_i = tl.full((BLOCK_M,), float("-inf"), tl.float32)
    l_i = tl.zeros((BLOCK_M,), tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD), tl.float32)
    for start_n in range(0, n_ctx, BLOCK_N):
        rn = start_n + tl.arange(0, BLOCK_N)
        k = tl.load(k_ptr + base + rn[:, None] * stride_t + rd[None, :], mask=rn[:, None] < n_ctx, other=0.0)
        v = tl.load(v_ptr + base + rn[:, None] * stride_t + rd[None, :], mask=rn[:, None] < n_ctx, other=0.0)
        s = tl.dot(q, tl.trans(k)) * scale
        s = tl.where(rn[None, :] < n_ctx, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)
        m_i = m_new
    out = acc / l_i[:, None]
    tl.store(o_ptr + base + rm[:, None] * stride_t + rd[None, :], out.to(tl.float16), mask=rm[:, None] < n_ctx)


torch.manual_seed(0)
B, H, T, D = 2, 4, 200, 64
q, k, v = (torch.randn(B * H, T, D, device="cuda", dtype=torch.float16) for _ in range(3))
o = torch.empty_like(q)
scale = D ** -0.5
attention_fwd_kernel[(triton.cdiv(T, 64), B * H)](q, k, v, o, T, scale, q.stride(0), q.stride(1),
                                                  HEAD=D, BLOCK_M=64, BLOCK_N=32)
torch.cuda.synchronize()
ref = torch.softmax(q.double() @ k.double().transpose(1, 2) * scale, -1) @ v.double()
err = float((o.double() - ref).abs().max())
assert err < 1e-2, err
print("ok", err)
