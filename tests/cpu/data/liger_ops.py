"""Liger-Kernel's ops on small ragged shapes against float64 PyTorch references, forward and backward.

A script for tdebug to run (`tdebug run --mode interpret`, `tdebug sanitize --device cpu`): it imports
the ops of the pinned test-only dependency `liger-kernel`, calls each on fresh random fp32 inputs and
compares its outputs and input gradients with the same computation in float64 PyTorch (computed first:
cross_entropy writes gradients into its logits in place and swiglu's backward overwrites its inputs).
Prints one line per op and exits 1 when any op is off its reference.

Usage: python liger_ops.py [--ops rms_norm,swiglu] [--large] [--seed N]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

RTOL, ATOL = 1e-4, 1e-5


@dataclass
class Op:
    name: str
    make: Callable[[tuple[int, ...]], list[torch.Tensor]]  # shape -> inputs (fp32; float ones get gradients)
    liger: Callable[..., torch.Tensor | tuple[torch.Tensor, ...]]
    reference: Callable[..., torch.Tensor | tuple[torch.Tensor, ...]]
    small: tuple[int, ...]
    large: tuple[int, ...]
    constants: tuple[int, ...] = ()  # inputs the op gives no gradient for (tables, targets)


def randn(*shape: int) -> torch.Tensor:
    return torch.randn(shape, dtype=torch.float32)


def log_probs(rows: int, cols: int) -> torch.Tensor:
    return torch.log_softmax(randn(rows, cols), dim=-1)


def targets(rows: int, cols: int, ignored: int = -100) -> torch.Tensor:
    t = torch.randint(0, cols, (rows,))
    t[torch.randperm(rows)[: max(1, rows // 5)]] = ignored  # some ignored rows
    return t


def rms(x: torch.Tensor, eps: float) -> torch.Tensor:
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rope_tables(seq: int, dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    inv = 1.0 / (10000 ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim))
    freqs = torch.outer(torch.arange(seq, dtype=torch.float64), inv)
    emb = torch.cat((freqs, freqs), dim=-1)[None]
    return emb.cos().float(), emb.sin().float()


def llama4_freqs(seq: int, dim: int) -> torch.Tensor:
    cos, sin = rope_tables(seq, dim)
    return torch.complex(cos[0, :, : dim // 2], sin[0, :, : dim // 2])


def complex_rotate(x: torch.Tensor, freqs: torch.Tensor) -> torch.Tensor:
    """x's consecutive (real, imaginary) pairs times freqs (seq, dim / 2), as Llama 4 applies RoPE."""
    pairs = torch.view_as_complex(x.reshape(*x.shape[:-1], -1, 2).contiguous())
    return torch.view_as_real(pairs * freqs.to(pairs.dtype)[None, :, None, :]).flatten(-2)


def sparsemax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    z = x.movedim(dim, -1)
    srt, _ = torch.sort(z, dim=-1, descending=True)
    k = torch.arange(1, z.shape[-1] + 1, dtype=z.dtype)
    cssv = srt.cumsum(-1) - 1
    support = (srt * k > cssv).sum(-1, keepdim=True)
    tau = cssv.gather(-1, support - 1) / support.to(z.dtype)
    return torch.clamp(z - tau, min=0).movedim(-1, dim)


def jsd(student_log_q: torch.Tensor, teacher_log_p: torch.Tensor, beta: float) -> torch.Tensor:
    p, q = teacher_log_p.exp(), student_log_q.exp()
    m = beta * p + (1 - beta) * q
    log_m = m.log()
    loss = beta * (p * (teacher_log_p - log_m)) + (1 - beta) * (q * (student_log_q - log_m))
    return loss.sum() / student_log_q.shape[0]


def liger_ops() -> list[Op]:
    from liger_kernel.ops.cross_entropy import LigerCrossEntropyFunction
    from liger_kernel.ops.dyt import LigerDyTFunction
    from liger_kernel.ops.fused_add_rms_norm import LigerFusedAddRMSNormFunction
    from liger_kernel.ops.fused_linear_cross_entropy import LigerFusedLinearCrossEntropyFunction
    from liger_kernel.ops.fused_linear_jsd import LigerFusedLinearJSDFunction
    from liger_kernel.ops.geglu import LigerGELUMulFunction
    from liger_kernel.ops.group_norm import LigerGroupNormFunction
    from liger_kernel.ops.jsd import LigerJSDFunction
    from liger_kernel.ops.kl_div import LigerKLDivLossFunction
    from liger_kernel.ops.layer_norm import LigerLayerNormFunction
    from liger_kernel.ops.llama4_rope import LigerLlama4RopeFunction
    from liger_kernel.ops.poly_norm import LigerPolyNormFunction
    from liger_kernel.ops.relu_squared import LigerReLUSquaredFunction
    from liger_kernel.ops.rms_norm import LigerRMSNormFunction
    from liger_kernel.ops.rope import LigerRopeFunction
    from liger_kernel.ops.softmax import LigerSoftmaxFunction
    from liger_kernel.ops.sparsemax import LigerSparsemaxFunction
    from liger_kernel.ops.swiglu import LigerSiLUMulFunction
    from liger_kernel.ops.tvd import LigerTVDLossFunction

    # dyt's backward sizes a buffer by the device's SM count, which Liger's host code asks of CUDA, XPU or
    # an NPU only (on a CPU it fails before any kernel runs): take its NPU branch (20 cores by default).
    dyt_module = sys.modules[LigerDyTFunction.__module__]
    dyt_module.infer_device = lambda: "npu"
    eps = 1e-6
    return [
        Op("rms_norm", lambda s: [randn(*s), randn(s[-1])],
           lambda x, w: LigerRMSNormFunction.apply(x, w, eps),
           lambda x, w: rms(x, eps) * w, (3, 5, 67), (4, 33, 1000)),
        Op("layer_norm", lambda s: [randn(*s), randn(s[-1]), randn(s[-1])],
           lambda x, w, b: LigerLayerNormFunction.apply(x, w, b, eps),
           lambda x, w, b: F.layer_norm(x, (x.shape[-1],), w, b, eps), (7, 67), (129, 1000)),
        Op("fused_add_rms_norm", lambda s: [randn(*s), randn(*s), randn(s[-1])],
           lambda x, r, w: LigerFusedAddRMSNormFunction.apply(x, r, w, eps),
           lambda x, r, w: (rms(x + r, eps) * w, x + r), (7, 67), (129, 1000)),
        Op("poly_norm", lambda s: [randn(*s), randn(3), randn(1)[0]],
           lambda x, w, b: LigerPolyNormFunction.apply(x, w, b, eps),
           lambda x, w, b: w[0] * rms(x ** 3, eps) + w[1] * rms(x ** 2, eps) + w[2] * rms(x, eps) + b,
           (7, 67), (129, 1000)),
        Op("group_norm", lambda s: [randn(*s), randn(s[1]), randn(s[1])],
           lambda x, w, b: LigerGroupNormFunction.apply(x, w, b, x.shape[1], 3, eps),
           lambda x, w, b: F.group_norm(x, 3, w, b, eps), (3, 6, 37), (5, 12, 333)),
        Op("swiglu", lambda s: [randn(*s), randn(*s)], LigerSiLUMulFunction.apply,
           lambda a, b: F.silu(a) * b, (3, 5, 67), (4, 33, 1000)),
        Op("geglu", lambda s: [randn(*s), randn(*s)], LigerGELUMulFunction.apply,
           lambda a, b: F.gelu(a, approximate="tanh") * b, (3, 5, 67), (4, 33, 1000)),
        Op("relu_squared", lambda s: [randn(*s)], LigerReLUSquaredFunction.apply,
           lambda x: F.relu(x) ** 2, (7, 67), (129, 1000)),
        Op("dyt", lambda s: [randn(*s), randn(1), randn(s[-1]), randn(s[-1])], LigerDyTFunction.apply,
           lambda x, a, g, b: g * torch.tanh(a * x) + b, (7, 67), (129, 1000)),
        Op("softmax", lambda s: [randn(*s)], LigerSoftmaxFunction.apply,
           lambda x: torch.softmax(x, -1), (7, 67), (129, 1000)),
        Op("sparsemax", lambda s: [randn(*s)], lambda x: LigerSparsemaxFunction.apply(x, -1),
           sparsemax, (7, 67), (129, 1000)),
        Op("rope", lambda s: [randn(*s), randn(s[0], 2, s[2], s[3]), *rope_tables(s[2], s[3])],
           lambda q, k, cos, sin: LigerRopeFunction.apply(q, k, cos, sin),
           lambda q, k, cos, sin: (q * cos[:, None] + rotate_half(q) * sin[:, None],
                                   k * cos[:, None] + rotate_half(k) * sin[:, None]), (2, 4, 7, 16), (2, 8, 65, 64),
           constants=(2, 3)),
        Op("llama4_rope", lambda s: [randn(*s), randn(s[0], s[1], 2, s[3]), llama4_freqs(s[1], s[3])],
           lambda q, k, f: LigerLlama4RopeFunction.apply(q, k, f),
           lambda q, k, f: (complex_rotate(q, f), complex_rotate(k, f)), (2, 7, 4, 16), (2, 65, 8, 64),
           constants=(2,)),
        Op("cross_entropy", lambda s: [randn(*s), targets(*s)],
           lambda x, t: LigerCrossEntropyFunction.apply(x, t, None)[0],
           lambda x, t: F.cross_entropy(x, t), (9, 67), (129, 1000)),
        Op("fused_linear_cross_entropy", lambda s: [randn(s[0], s[1]), randn(s[2], s[1]) / 4, targets(s[0], s[2]),
                                                    randn(s[2])],
           lambda x, w, t, b: LigerFusedLinearCrossEntropyFunction.apply(x, w, t, b)[0],
           lambda x, w, t, b: F.cross_entropy(x @ w.T + b, t), (9, 16, 67), (65, 64, 1000)),
        Op("fused_linear_jsd", lambda s: [randn(s[0], s[1]), randn(s[2], s[1]) / 4, randn(s[0], s[1]),
                                          randn(s[2], s[1]) / 4],
           lambda x, w, tx, tw: LigerFusedLinearJSDFunction.apply(x, w, tx, tw, None, 0.3),
           lambda x, w, tx, tw: jsd(torch.log_softmax(x @ w.T, -1), torch.log_softmax(tx @ tw.T, -1), 0.3),
           (9, 16, 67), (65, 64, 1000), constants=(2, 3)),
        Op("kl_div", lambda s: [log_probs(*s), log_probs(*s).exp()],
           lambda p, t: LigerKLDivLossFunction.apply(p, t, "batchmean"),
           lambda p, t: F.kl_div(p, t, reduction="batchmean"), (7, 67), (129, 1000), constants=(1,)),
        Op("jsd", lambda s: [log_probs(*s), log_probs(*s)],
           lambda q, p: LigerJSDFunction.apply(q, p, None, 0.3),
           lambda q, p: jsd(q, p, 0.3), (7, 67), (129, 1000), constants=(1,)),
        Op("tvd", lambda s: [log_probs(*s).exp(), log_probs(*s).exp()],
           lambda p, q: LigerTVDLossFunction.apply(p, q),
           lambda p, q: 0.5 * (p - q).abs().sum() / p.shape[0], (7, 67), (129, 1000), constants=(1,)),
    ]


def outputs(value) -> list[torch.Tensor]:
    return [v for v in (value if isinstance(value, tuple) else (value,)) if isinstance(v, torch.Tensor)]


def run(op: Op, shape: tuple[int, ...]) -> list[str]:
    """The op against its float64 reference; the list of what is off (empty: all match)."""
    inputs = op.make(shape)
    grads = [x.is_floating_point() and i not in op.constants for i, x in enumerate(inputs)]
    ref_in = [x.detach().double().requires_grad_(g) if g else x.clone() for x, g in zip(inputs, grads)]
    ref_out = outputs(op.reference(*ref_in))
    upstream = [torch.randn(o.shape) for o in ref_out]
    torch.autograd.backward(ref_out, [u.double() for u in upstream])
    ref_grads = [x.grad if g else None for x, g in zip(ref_in, grads)]
    ours_in = [x.detach().clone().requires_grad_(g) if g else x.clone() for x, g in zip(inputs, grads)]
    ours_out = outputs(op.liger(*ours_in))
    problems = []
    pairs = [(f"output {i}", o, r) for i, (o, r) in enumerate(zip(ours_out, ref_out))]
    torch.autograd.backward(ours_out, [u.clone() for u in upstream])
    pairs += [(f"grad of input {i}", x.grad, r) for i, (x, r) in enumerate(zip(ours_in, ref_grads)) if r is not None]
    for label, got, want in pairs:
        if got is None:
            problems.append(f"{label}: no gradient")
            continue
        err = (got.double() - want.detach()).abs()
        bound = ATOL * max(1.0, want.abs().max().item()) + RTOL * want.detach().abs()
        bad = int((err > bound).sum()) + int(torch.isnan(got).sum())
        if bad:
            problems.append(f"{label}: {bad} of {got.numel()} elements off (max error {err.max().item():.3g})")
    return problems


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", default="", help="comma-separated op names (default: all)")
    parser.add_argument("--large", action="store_true", help="the larger ragged shapes")
    parser.add_argument("--seed", type=int, default=None, help="default: a fresh seed each run (printed)")
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else time.time_ns() % 2**31
    torch.manual_seed(seed)
    ops = liger_ops()
    chosen = [o for o in ops if not args.ops or o.name in args.ops.split(",")]
    unknown = set(filter(None, args.ops.split(","))) - {o.name for o in ops}
    if unknown:
        parser.error(f"unknown ops: {', '.join(sorted(unknown))}; known: {', '.join(o.name for o in ops)}")
    print(f"seed {seed}")
    failed = 0
    for op in chosen:
        shape = op.large if args.large else op.small
        started = time.perf_counter()
        problems = run(op, shape)
        took = time.perf_counter() - started
        verdict = "ok" if not problems else "MISMATCH: " + "; ".join(problems)
        print(f"{op.name} {'x'.join(map(str, shape))}: {verdict} ({took:.1f} s)", flush=True)
        failed += bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
