"""Liger-Kernel's bf16 ops on the GPU, compiled against tdebug's interpreter, bit for bit, and both against float64.

Issue 28.2: two bf16 `test_liger_layer_norm` cases fail their own tolerance under tdebug on a CPU. Which side is
off: tdebug's bf16 emulation, compiled Triton itself, or the test's torch reference? Per op (layer_norm on the
test's five bf16 shapes and the functional test's three, rms_norm, swiglu, geglu, cross_entropy; forward and
backward), on the same bf16 inputs (made on the CPU with the test's torch.manual_seed(0), as a CPU run of the
test makes them):

  compiled      the op with its Triton kernels compiled, on CUDA tensors (this process);
  interp-cuda   the same under TRITON_INTERPRET=1 and tdebug's interpreter patches, on the same CUDA tensors (a child;
                Liger's host code, e.g. layer_norm's SM count, sees the same device: only the kernels differ);
  interp-cpu    the same on CPU tensors (a child): what `pytest --tdebug` computes on a CPU-only machine;
  torch-cpu     the test's torch reference in bf16 on the CPU; torch-cuda the same on the GPU;
  float64       the op in float64 from the same bf16 inputs.

compiled vs interp-cuda is the bit-for-bit comparison (elements that differ, largest distance in bf16 ulps, or in
fp32 ulps for fp32 outputs); each side's largest and mean error against float64 says which is closer.
Writes OUT/gpu-liger-bf16.{json,md}; exit 0 when compiled and interp-cuda agree bit for bit everywhere, 1 otherwise.

Usage: python scripts/gpu_liger_bf16.py [--out results]   (needs CUDA and liger-kernel 0.8.5)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LN_SHAPES = [(2, 8, 64), (4, 16, 128), (1, 1, 1023), (3, 7, 256), (1, 1, 1500)]  # test_liger_layer_norm
LN_FUNCTIONAL_SHAPES = [(2, 8, 64), (4, 16, 128), (3, 512, 128)]  # test_liger_layer_norm_functional
TOL = 2e-2  # the test's bf16 atol = rtol


def make_cases() -> dict:
    """name -> the op's inputs (bf16 CPU tensors), made as the Liger tests make them on a CPU run."""
    import torch

    cases: dict = {}
    for b, t, h in LN_SHAPES:  # test_liger_layer_norm: x, LigerLayerNorm's init (ones / zeros), then grad_output
        torch.manual_seed(0)
        x = torch.randn(b, t, h, dtype=torch.bfloat16)
        cases[f"layer_norm {b}x{t}x{h}"] = {"op": "layer_norm", "x": x, "w": torch.ones(h, dtype=torch.bfloat16),
                                            "b": torch.zeros(h, dtype=torch.bfloat16),
                                            "dy": torch.randn_like(x)}
    for b, t, h in LN_FUNCTIONAL_SHAPES:
        torch.manual_seed(0)
        x = torch.randn(b, t, h, dtype=torch.bfloat16)
        w, bias = torch.randn(h, dtype=torch.bfloat16), torch.randn(h, dtype=torch.bfloat16)
        cases[f"layer_norm functional {b}x{t}x{h}"] = {"op": "layer_norm", "x": x, "w": w, "b": bias,
                                                       "dy": torch.randn_like(x)}
    g = torch.Generator().manual_seed(1)

    def randn(*shape):
        return torch.randn(*shape, generator=g).to(torch.bfloat16)

    cases["rms_norm 2x128x512"] = {"op": "rms_norm", "x": randn(2, 128, 512), "w": randn(512),
                                   "dy": randn(2, 128, 512)}
    cases["swiglu 2x64x1024"] = {"op": "swiglu", "a": randn(2, 64, 1024), "b": randn(2, 64, 1024),
                                 "dy": randn(2, 64, 1024)}
    cases["geglu 2x64x1024"] = {"op": "geglu", "a": randn(2, 64, 1024), "b": randn(2, 64, 1024),
                                "dy": randn(2, 64, 1024)}
    cases["cross_entropy 64x4096"] = {"op": "cross_entropy", "x": randn(64, 4096) * 4,
                                      "target": torch.randint(0, 4096, (64,), generator=g)}
    return cases


def run_liger(case: dict, device: str) -> dict:
    """The Liger op forward + backward on `device`: its outputs and gradients, on the CPU."""
    import torch
    from liger_kernel.ops import (
        LigerCrossEntropyFunction,
        LigerGELUMulFunction,
        LigerLayerNormFunction,
        LigerRMSNormFunction,
        LigerSiLUMulFunction,
    )

    t = {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in case.items()}
    op = case["op"]
    out: dict = {}
    if op == "layer_norm":
        x, w, b = (t[k].clone().requires_grad_(True) for k in ("x", "w", "b"))
        y = LigerLayerNormFunction.apply(x, w, b, 1e-6)
        y.backward(t["dy"])
        out = {"y": y, "dx": x.grad, "dw": w.grad, "db": b.grad}
    elif op == "rms_norm":
        x, w = (t[k].clone().requires_grad_(True) for k in ("x", "w"))
        y = LigerRMSNormFunction.apply(x, w, 1e-6, 0.0, "llama", False)
        y.backward(t["dy"])
        out = {"y": y, "dx": x.grad, "dw": w.grad}
    elif op in ("swiglu", "geglu"):
        a, b = (t[k].clone().requires_grad_(True) for k in ("a", "b"))
        fn = LigerSiLUMulFunction if op == "swiglu" else LigerGELUMulFunction
        y = fn.apply(a, b)
        y.backward(t["dy"])
        out = {"y": y, "da": a.grad, "db": b.grad}
    elif op == "cross_entropy":
        x = t["x"].clone().requires_grad_(True)
        loss = LigerCrossEntropyFunction.apply(x, t["target"], None)
        loss = loss[0] if isinstance(loss, tuple) else loss
        loss.backward()
        out = {"loss": loss, "dx": x.grad}
    if device == "cuda":
        torch.cuda.synchronize()
    return {k: v.detach().cpu() for k, v in out.items()}


def run_torch(case: dict, device: str, dtype) -> dict:
    """The op in plain torch (the tests' reference) in `dtype` on `device`; float64 is the exact reference."""
    import torch
    import torch.nn.functional as F

    t = {k: (v.to(device, dtype) if v.is_floating_point() else v.to(device)) if isinstance(v, torch.Tensor) else v
         for k, v in case.items()}
    op = case["op"]
    if op == "layer_norm":
        x, w, b = (t[k].clone().requires_grad_(True) for k in ("x", "w", "b"))
        y = F.layer_norm(x, (x.shape[-1],), w, b, 1e-6)
        y.backward(t["dy"])
        out = {"y": y, "dx": x.grad, "dw": w.grad, "db": b.grad}
    elif op == "rms_norm":  # llama casting: the norm in fp32 (here: dtype), cast back, times the weight
        x, w = (t[k].clone().requires_grad_(True) for k in ("x", "w"))
        xf = x.float() if dtype != torch.float64 else x
        y = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(dtype) * w
        y.backward(t["dy"])
        out = {"y": y, "dx": x.grad, "dw": w.grad}
    elif op in ("swiglu", "geglu"):
        a, b = (t[k].clone().requires_grad_(True) for k in ("a", "b"))
        act = F.silu(a) if op == "swiglu" else F.gelu(a, approximate="tanh")
        y = act * b
        y.backward(t["dy"])
        out = {"y": y, "da": a.grad, "db": b.grad}
    else:
        x = t["x"].clone().requires_grad_(True)
        loss = F.cross_entropy(x, t["target"])
        loss.backward()
        out = {"loss": loss, "dx": x.grad}
    return {k: v.detach().cpu() for k, v in out.items()}


# ---- comparing ----

def _ordered(t):
    """Bits of a float tensor on a monotonic integer line (sign-magnitude folded), as int64."""
    import torch

    if t.dtype == torch.bfloat16:
        i = t.view(torch.int16).long()
        return torch.where(i < 0, -32768 - i, i)
    i = t.float().view(torch.int32).long()
    return torch.where(i < 0, -(2**31) - i, i)


def bit_diff(a, b) -> tuple[int, int]:
    """(elements that differ bit for bit, NaN = NaN; largest distance in ulps of the dtype)."""
    nan = a.isnan() & b.isnan()
    differ = (_ordered(a) != _ordered(b)) & ~nan
    finite = a.isfinite() & b.isfinite()
    ulps = int((_ordered(a) - _ordered(b)).abs()[finite].max()) if finite.any() else 0
    return int(differ.sum()), ulps


def errors(got, ref) -> dict:
    import torch

    e = (got.double() - ref.double()).abs()
    return {"max": float(e.max()), "mean": float(e.mean()), "rel": float(e.max() / ref.double().abs().max().clamp_min(
        torch.finfo(torch.float64).tiny))}


def close(a, b) -> bool:
    import torch

    return bool(torch.allclose(a.float(), b.float(), atol=TOL, rtol=TOL))


def compare(cases: dict, runs: dict) -> list[dict]:
    rows = []
    for name in cases:
        f64 = runs["float64"][name]
        for out in f64:
            comp, icuda, icpu = (runs[side][name][out] for side in ("compiled", "interp-cuda", "interp-cpu"))
            differ, ulps = bit_diff(comp, icuda)
            delta = (comp.double() - icuda.double()).abs().nan_to_num(0.0)
            apart = delta > 0
            where = float(icuda.double().abs()[apart].max()) if apart.any() else 0.0
            errs = {side: errors(runs[side][name][out], f64[out]) for side in
                    ("compiled", "interp-cuda", "interp-cpu", "torch-cpu", "torch-cuda")}
            closest = min(("compiled", "interp-cpu", "torch-cpu"), key=lambda s: (errs[s]["max"], errs[s]["mean"]))
            rows.append({"case": name, "output": out, "dtype": str(comp.dtype).replace("torch.", ""),
                         "n": comp.numel(), "differ": differ, "ulps": ulps, "errors": errs,
                         "max_delta": float(delta.max()), "largest_differing": where,
                         "scale": float(f64[out].abs().max()),
                         "cpu_test_passes": close(icpu, runs["torch-cpu"][name][out]),
                         "gpu_test_passes": close(comp, runs["torch-cuda"][name][out]),
                         "closest_of_cpu_test": closest})
    return rows


def child_phase(out: Path, device: str) -> None:
    """Child: every op under tdebug's interpreter patches (TRITON_INTERPRET=1) on `device` tensors."""
    os.environ["TRITON_INTERPRET"] = "1"
    import torch

    sys.path.insert(0, str(ROOT))
    from tdebug.interpreter import patches

    patches.install()
    cases = torch.load(out / "liger_bf16_inputs.pt")
    started = time.perf_counter()
    results = {name: run_liger(case, device) for name, case in cases.items()}
    results["_seconds"] = time.perf_counter() - started
    torch.save(results, out / f"liger_bf16_interp_{device}.pt")


def fmt(e: dict) -> str:
    return f"{e['max']:.3g} / {e['mean']:.2g}"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "results")
    parser.add_argument("--phase", choices=["all", "cuda", "cpu"], default="all", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.phase != "all":
        child_phase(args.out, args.phase)
        return 0
    import torch
    import triton

    if not torch.cuda.is_available():
        print("gpu_liger_bf16: needs a CUDA GPU", file=sys.stderr)
        return 2
    import liger_kernel

    cases = make_cases()
    torch.save(cases, args.out / "liger_bf16_inputs.pt")
    runs: dict = {"compiled": {n: run_liger(c, "cuda") for n, c in cases.items()},
                  "torch-cpu": {n: run_torch(c, "cpu", torch.bfloat16) for n, c in cases.items()},
                  "torch-cuda": {n: run_torch(c, "cuda", torch.bfloat16) for n, c in cases.items()},
                  "float64": {n: run_torch(c, "cpu", torch.float64) for n, c in cases.items()}}
    seconds = {}
    for device in ("cuda", "cpu"):
        child = subprocess.run([sys.executable, __file__, "--phase", device, "--out", str(args.out)],
                               capture_output=True, text=True)
        if child.returncode != 0:
            print(child.stdout[-4000:] + child.stderr[-8000:], file=sys.stderr)
            return 1
        path = args.out / f"liger_bf16_interp_{device}.pt"
        runs[f"interp-{device}"] = torch.load(path)
        seconds[device] = round(runs[f"interp-{device}"].pop("_seconds"), 2)
        path.unlink()
    (args.out / "liger_bf16_inputs.pt").unlink()
    rows = compare(cases, runs)
    meta = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "gpu": torch.cuda.get_device_name(),
            "torch": torch.__version__, "triton": triton.__version__, "python": platform.python_version(),
            "liger_kernel": getattr(liger_kernel, "__version__", "0.8.5"), "interpreter_seconds": seconds}
    (args.out / "gpu-liger-bf16.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    lines = [f"# Liger-Kernel bf16: compiled on {meta['gpu']} vs tdebug's interpreter (scripts/gpu_liger_bf16.py)",
             "", f"{meta['date']}, torch {meta['torch']}, triton {meta['triton']}; interpreter "
             f"{seconds['cuda']} s on CUDA tensors, {seconds['cpu']} s on CPU tensors.", "",
             "Errors against float64: max / mean absolute. 'differ' and 'ulps' compare compiled with interp-cuda "
             "bit for bit. 'CPU test' is the Liger test's own allclose (rtol = atol = 0.02) of interp-cpu against "
             "torch-cpu, as `pytest --tdebug` on a CPU runs it; 'GPU test' the same of compiled against torch-cuda.",
             "'max |Δ|' is the largest absolute difference compiled - interp-cuda; 'at |x| ≤' the largest magnitude "
             "among the elements that differ, against the output's largest (near-zero results of a cancellation, or "
             "sums in another order, differ by many ulps but little in value).",
             "", "| case | out | dtype | differ | ulps | max |Δ| | at |x| ≤ (of max |x|) | compiled | interp-cuda | "
             "interp-cpu | torch-cpu | torch-cuda "
             "| CPU test | GPU test | closest to f64 (CPU test's sides) |", "|---" * 15 + "|"]
    for r in rows:
        e = r["errors"]
        lines.append(f"| {r['case']} | {r['output']} | {r['dtype']} | {r['differ']} of {r['n']} | {r['ulps']} | "
                     f"{r['max_delta']:.3g} | {r['largest_differing']:.3g} ({r['scale']:.3g}) | "
                     f"{fmt(e['compiled'])} | {fmt(e['interp-cuda'])} | {fmt(e['interp-cpu'])} | "
                     f"{fmt(e['torch-cpu'])} | {fmt(e['torch-cuda'])} | {'pass' if r['cpu_test_passes'] else 'FAIL'}"
                     f" | {'pass' if r['gpu_test_passes'] else 'FAIL'} | {r['closest_of_cpu_test']} |")
    (args.out / "gpu-liger-bf16.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0 if all(r["differ"] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
