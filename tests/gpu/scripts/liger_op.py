"""One Liger-Kernel 0.8.5 op forward + backward on small CUDA tensors, checked against PyTorch in float64:
python liger_op.py OP [DTYPE] with OP in rms_norm, layer_norm, swiglu, geglu, cross_entropy, softmax, kl_div, jsd,
rope, flce (fused linear cross entropy), DTYPE fp32 (default) or bf16."""

import os
import sys

import torch

op = sys.argv[1]
dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[sys.argv[2] if len(sys.argv) > 2 else "fp32"]
tol = 1e-4 if dtype == torch.float32 else 5e-2
torch.manual_seed(0)
dev = os.environ.get("LIGER_OP_DEVICE", "cuda")  # "cpu" with TRITON_INTERPRET=1: a dry run


def rand(*shape, grad=True):
    t = torch.randn(*shape, device=dev, dtype=dtype)
    return t.requires_grad_(grad)


def check(got, want, what):
    err = float((got.double() - want.double()).abs().max())
    scale = max(float(want.double().abs().max()), 1.0)
    assert err <= tol * scale, f"{op} {what}: max error {err} (scale {scale})"


if op == "rms_norm":
    from liger_kernel.ops import LigerRMSNormFunction
    x, w = rand(4, 33, 512), rand(512)
    y = LigerRMSNormFunction.apply(x, w, 1e-6, 0.0, "llama", False)
    xd, wd = x.detach().double(), w.detach().double()
    ref = xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + 1e-6) * wd
    check(y, ref, "y")
    y.sum().backward()
elif op == "layer_norm":
    from liger_kernel.ops import LigerLayerNormFunction
    x, w, b = rand(3, 7, 256), rand(256), rand(256)
    y = LigerLayerNormFunction.apply(x, w, b, 1e-6)
    check(y, torch.nn.functional.layer_norm(x.double(), (256,), w.double(), b.double(), 1e-6), "y")
    y.sum().backward()
elif op in ("swiglu", "geglu"):
    from liger_kernel.ops import LigerGELUMulFunction, LigerSiLUMulFunction
    a, b = rand(2, 64, 1024), rand(2, 64, 1024)
    fn = LigerSiLUMulFunction if op == "swiglu" else LigerGELUMulFunction
    y = fn.apply(a, b)
    ad, bd = a.double(), b.double()
    act = torch.nn.functional.silu(ad) if op == "swiglu" else torch.nn.functional.gelu(ad, approximate="tanh")
    check(y, act * bd, "y")
    y.sum().backward()
elif op == "cross_entropy":
    from liger_kernel.ops import LigerCrossEntropyFunction
    x = rand(32, 4096)
    target = torch.randint(0, 4096, (32,), device=dev)
    ref = torch.nn.functional.cross_entropy(x.detach().double(), target)  # before: Liger writes dx into x
    loss = LigerCrossEntropyFunction.apply(x, target, None)
    loss = loss[0] if isinstance(loss, tuple) else loss
    check(loss, ref, "loss")
    loss.backward()
elif op == "softmax":
    from liger_kernel.ops import LigerSoftmaxFunction
    x = rand(37, 1000)
    y = LigerSoftmaxFunction.apply(x)
    check(y, torch.softmax(x.double(), -1), "y")
    y.sum().backward()
elif op == "kl_div":
    from liger_kernel.ops import LigerKLDivLossFunction
    x = torch.log_softmax(torch.randn(16, 512, device=dev, dtype=dtype), -1).requires_grad_(True)
    t = torch.softmax(torch.randn(16, 512, device=dev, dtype=dtype), -1)
    loss = LigerKLDivLossFunction.apply(x, t, "batchmean", False, 1e-10)
    ref = torch.nn.functional.kl_div(x.double(), t.double(), reduction="batchmean")
    check(loss, ref, "loss")
    loss.backward()
elif op == "jsd":
    from liger_kernel.ops import LigerJSDFunction
    x = torch.log_softmax(torch.randn(16, 512, device=dev, dtype=dtype), -1).requires_grad_(True)
    t = torch.log_softmax(torch.randn(16, 512, device=dev, dtype=dtype), -1)
    loss = LigerJSDFunction.apply(x, t, None, 0.5, -100)
    loss.backward()
elif op == "rope":
    from liger_kernel.ops import LigerRopeFunction
    q, k = rand(2, 8, 64, 128), rand(2, 4, 64, 128)
    pos = torch.arange(64, device=dev, dtype=torch.float32)
    inv = 1.0 / (10000 ** (torch.arange(0, 128, 2, device=dev, dtype=torch.float32) / 128))
    freqs = torch.outer(pos, inv)
    emb = torch.cat([freqs, freqs], -1)[None]
    cos, sin = emb.cos().to(dtype), emb.sin().to(dtype)
    q2, k2 = LigerRopeFunction.apply(q, k, cos, sin)
    (q2.sum() + k2.sum()).backward()
elif op == "flce":
    from liger_kernel.ops import LigerFusedLinearCrossEntropyFunction
    x, w = rand(64, 128), rand(1000, 128)
    target = torch.randint(0, 1000, (64,), device=dev)
    out = LigerFusedLinearCrossEntropyFunction.apply(x, w, target)
    loss = out[0] if isinstance(out, tuple) else out
    ref = torch.nn.functional.cross_entropy(x.double() @ w.double().T, target)
    check(loss, ref, "loss")
    loss.backward()
else:
    raise SystemExit(f"unknown op {op}")
if dev == "cuda":
    torch.cuda.synchronize()
print("ok", op)
