"""Liger-Kernel 0.8.5's bf16 test_liger_layer_norm cases on the CPU: its kernel under tdebug's interpreter
(exact bf16) and torch's CPU layer_norm (the test's reference), each against float64 computed from the same
bf16 inputs (results/liger-suite.md). Needs liger-kernel; run with PYTHONPATH at the repository."""

import os

os.environ["TRITON_INTERPRET"] = "1"
import torch  # noqa: E402

from tdebug.interpreter import patches  # noqa: E402

patches.install()
from liger_kernel.transformers.layer_norm import LigerLayerNorm  # noqa: E402


def err(a, ref):
    return float((a.detach().double() - ref.detach()).abs().max())


for (b, s, h) in [(2, 8, 64), (4, 16, 128), (1, 1, 1023), (3, 7, 256), (1, 1, 1500)]:
    torch.manual_seed(0)
    dtype = torch.bfloat16
    x = torch.randn(b, s, h, dtype=dtype)
    lx, tx = x.clone().requires_grad_(True), x.clone().requires_grad_(True)
    lln, tln = LigerLayerNorm(h, eps=1e-6).to(dtype), torch.nn.LayerNorm(h, eps=1e-6).to(dtype)
    with torch.no_grad():
        tln.weight.copy_(lln.weight)
        tln.bias.copy_(lln.bias)
    lo, to = lln(lx), tln(tx)
    g = torch.randn_like(x)
    lo.backward(g, retain_graph=True)
    to.backward(g, retain_graph=True)
    # float64 reference from the same bf16 values
    x64 = x.double().requires_grad_(True)
    w64 = lln.weight.detach().double().requires_grad_(True)
    b64 = lln.bias.detach().double().requires_grad_(True)
    o64 = torch.nn.functional.layer_norm(x64, (h,), w64, b64, eps=1e-6)
    o64.backward(g.double())
    rows = [("out", lo, to, o64), ("dx", lx.grad, tx.grad, x64.grad),
            ("dW", lln.weight.grad, tln.weight.grad, w64.grad), ("db", lln.bias.grad, tln.bias.grad, b64.grad)]
    fails = [n for n, a, t, _ in rows if not torch.allclose(a, t, atol=2e-2, rtol=2e-2)]
    print(f"{b}x{s}x{h}: test fails on {fails or 'nothing'}")
    for n, a, t, r in rows:
        print(f"   {n}: max|liger-f64| {err(a, r):.4g}  max|torch-f64| {err(t, r):.4g}  "
              f"max|liger-torch| {err(a, t):.4g}  (max|ref| {float(r.detach().abs().max()):.3g})")
