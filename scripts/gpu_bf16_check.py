"""bf16 on the GPU against tdebug's interpreter: the same kernels on the same inputs, compiled and interpreted.

The kernels (scripts/gpu_bf16_kernels.py): an elementwise bf16 chain, a fused-looking x * y + z, casts (fp32 ->
bf16, bf16 -> fp16 -> bf16, int32 -> bf16, fp32 -> fp8 -> fp32), transcendentals, per-row reductions (fp32
and bf16 accumulation, max), a bf16 dot with fp32 accumulation and a bf16 atomic_add. This process runs them
compiled on CUDA; a child process runs them under TRITON_INTERPRET=1 with tdebug's interpreter patches on CPU
copies of the same inputs. Elementwise results must be bit-identical (NaN = NaN; the GPU fuses x * y + z into
one fma by default, and tdebug's interpreter rounds such sums once too: tdebug/interpreter/semantics/fma.py;
tl.maximum / tl.minimum of every pair of special fp32 values too: NaNs, signaling ones included, and signed zeros);
transcendentals are
reported in bf16 ulps (the GPU's fast exp/log differ from numpy's in the last fp32 bits); reductions, dots
and atomics must agree within their accumulation-order tolerance. Writes DIR/gpu-bf16-check.{json,md};
exit 0 when every verdict holds, 1 otherwise.

Usage: python scripts/gpu_bf16_check.py [--out results] [--seed 0]
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
N = 100_003  # ragged against every block
ROWS, COLS = 37, 1000
M, N_DOT, K = 129, 127, 200
N_ATOMIC = 8192  # the interpreter emulates bf16 atomics lane by lane: keep it small


def make_inputs(seed: int) -> dict:
    import torch

    g = torch.Generator().manual_seed(seed)
    randn = lambda *s: torch.randn(*s, generator=g)  # noqa: E731
    special = torch.tensor([0.0, -0.0, 1e-40, -3e38, 3e38, float("inf"), -float("inf"), float("nan"), 1.0, -1.0])
    f = torch.cat([randn(N - 2 * len(special)) * 10 ** torch.randint(-3, 4, (N - 2 * len(special),), generator=g),
                   special, 1 + (torch.arange(len(special)) + 0.5) * 2**-8])  # ties for bf16 rounding
    # Every ordered pair of these fp32 bit patterns: a signaling NaN (tdebug's poison of torch.empty memory is
    # one), quiet NaNs of both signs, signed zeros, infinities, numbers, a subnormal.
    pattern = torch.tensor([0x7FA00000, 0x7FC00000, -0x00400000, 0, -0x80000000, 0x3F800000, -0x40800000,
                            0x7F800000, -0x00800000, 0x00000100], dtype=torch.int32).view(torch.float32)
    pairs = torch.cartesian_prod(torch.arange(len(pattern)), torch.arange(len(pattern)))
    return {
        "pa": pattern[pairs[:, 0]].clone(), "pb": pattern[pairs[:, 1]].clone(),
        "x": randn(N).to(torch.bfloat16), "y": randn(N).to(torch.bfloat16), "z": randn(N).to(torch.bfloat16),
        "f": f.float(), "i": torch.randint(-2**30, 2**30, (N,), generator=g, dtype=torch.int32),
        "rows": (randn(ROWS, COLS) * 4).to(torch.bfloat16),
        "a": randn(M, K).to(torch.bfloat16), "b": randn(K, N_DOT).to(torch.bfloat16),
    }


def run_kernels(inputs: dict, device: str, fp_fusion: bool = True) -> dict:
    """Every kernel on `inputs` moved to `device`; outputs on the CPU."""
    import gpu_bf16_kernels as k
    import torch
    import triton

    t = {name: v.to(device) for name, v in inputs.items()}
    extra = {} if fp_fusion else {"enable_fp_fusion": False}
    grid = (triton.cdiv(N, 1024),)
    out: dict = {}
    out["chain"] = torch.empty(N, dtype=torch.bfloat16, device=device)
    k.chain_kernel[grid](t["x"], t["y"], t["z"], out["chain"], N, 0.7, BLOCK=1024, **extra)
    out["mul_add"] = torch.empty(N, dtype=torch.bfloat16, device=device)
    k.mul_add_kernel[grid](t["x"], t["y"], t["z"], out["mul_add"], N, BLOCK=1024, **extra)
    cast_names = ("cast_bf16", "cast_via_fp16", "cast_int", "cast_fp8e4nv", "cast_fp8e5")
    dtypes = (torch.bfloat16, torch.bfloat16, torch.bfloat16, torch.float32, torch.float32)
    for name, dtype in zip(cast_names, dtypes):
        out[name] = torch.empty(N, dtype=dtype, device=device)
    k.casts_kernel[grid](t["f"], t["i"], *(out[n] for n in cast_names), N, BLOCK=1024, **extra)
    out["math"] = torch.empty(N, dtype=torch.bfloat16, device=device)
    k.math_kernel[grid](t["x"], out["math"], N, BLOCK=1024, **extra)
    out["row_sum_fp32"] = torch.empty(ROWS, device=device)
    out["row_sum_bf16"] = torch.empty(ROWS, dtype=torch.bfloat16, device=device)
    out["row_max"] = torch.empty(ROWS, dtype=torch.bfloat16, device=device)
    k.row_stats_kernel[(ROWS,)](t["rows"], out["row_sum_fp32"], out["row_sum_bf16"], out["row_max"],
                                N_COLS=COLS, BLOCK=1024, **extra)
    out["dot_fp32"] = torch.empty(M, N_DOT, device=device)
    out["dot_bf16"] = torch.empty(M, N_DOT, dtype=torch.bfloat16, device=device)
    k.dot_kernel[(triton.cdiv(M, 64), triton.cdiv(N_DOT, 64))](t["a"], t["b"], out["dot_fp32"], out["dot_bf16"],
                                                               M=M, N=N_DOT, K=K, BLOCK_M=64, BLOCK_N=64,
                                                               BLOCK_K=32, **extra)
    pairs = t["pa"].numel()
    out["max_special"], out["min_special"] = torch.empty(pairs, device=device), torch.empty(pairs, device=device)
    k.minmax_kernel[(1,)](t["pa"], t["pb"], out["max_special"], out["min_special"], pairs, BLOCK=128, **extra)
    out["atomic"] = torch.zeros(8, dtype=torch.bfloat16, device=device)
    k.atomic_kernel[(N_ATOMIC // 1024,)](t["x"], out["atomic"], N_ATOMIC, BLOCK=1024, **extra)
    if device == "cuda":
        torch.cuda.synchronize()
    return {name: v.cpu() for name, v in out.items()}


def bits(t):
    import torch

    return t.view(torch.int16) if t.dtype == torch.bfloat16 else t.view(torch.int32)


def same_bits(a, b) -> int:
    """How many elements differ bit for bit (two NaNs count as equal)."""
    nan = a.isnan() & b.isnan()
    return int(((bits(a) != bits(b)) & ~nan).sum())


def bf16_ulps(a, b) -> int:
    """Largest distance in bf16 steps between finite elements of two bf16 tensors."""
    ia, ib = bits(a).int(), bits(b).int()
    ia = (ia < 0) * (-32768 - ia) + (ia >= 0) * ia  # sign-magnitude to a monotonic integer line
    ib = (ib < 0) * (-32768 - ib) + (ib >= 0) * ib
    finite = a.isfinite() & b.isfinite()
    return int((ia - ib).abs()[finite].max()) if finite.any() else 0


def compare(gpu: dict, interp: dict, unfused: dict, inputs: dict) -> list[dict]:
    rows = []

    def row(name, kind, ok, detail):
        rows.append({"kernel": name, "kind": kind, "ok": bool(ok), "detail": detail})

    for name in ("chain", "cast_bf16", "cast_via_fp16", "cast_int", "cast_fp8e4nv", "cast_fp8e5"):
        diff = same_bits(gpu[name], interp[name])
        row(name, "elementwise: bit-identical", diff == 0, f"{diff} of {gpu[name].numel()} elements differ")
    for name in ("max_special", "min_special"):
        diff = same_bits(gpu[name], interp[name])
        row(name, "tl.maximum / tl.minimum of NaNs (signaling too), signed zeros: bit-identical", diff == 0,
            f"{diff} of {gpu[name].numel()} pairs differ")
    fused, plain = same_bits(gpu["mul_add"], interp["mul_add"]), same_bits(unfused["mul_add"], interp["mul_add"])
    row("mul_add", "elementwise: bit-identical (x * y + z fused into one fma, Triton's default)", fused == 0,
        f"{fused} of {N} differ; against the GPU with enable_fp_fusion=False (two roundings) {plain} differ")
    diff, ulps = same_bits(gpu["math"], interp["math"]), bf16_ulps(gpu["math"], interp["math"])
    row("math", "transcendentals: within 1 bf16 ulp", ulps <= 1, f"{diff} of {N} differ, max {ulps} bf16 ulp")
    rows_abs = inputs["rows"].double().abs().sum(-1)
    err = (gpu["row_sum_fp32"].double() - interp["row_sum_fp32"].double()).abs()
    row("row_sum_fp32", "reduction: fp32 accumulation order", bool((err <= 1e-6 * rows_abs + 1e-6).all()),
        f"max error {err.max().item():.3g} (sum|x| up to {rows_abs.max().item():.4g})")
    err16 = (gpu["row_sum_bf16"].double() - interp["row_sum_bf16"].double()).abs()
    row("row_sum_bf16", "reduction: bf16 accumulation order", bool((err16 <= 2**-7 * rows_abs).all()),
        f"max error {err16.max().item():.3g}")
    diff = same_bits(gpu["row_max"], interp["row_max"])
    row("row_max", "reduction: max is order-free, bit-identical", diff == 0, f"{diff} of {ROWS} differ")
    scale = inputs["a"].double().abs() @ inputs["b"].double().abs()
    err = (gpu["dot_fp32"].double() - interp["dot_fp32"].double()).abs()
    row("dot_fp32", "dot: fp32 accumulation order", bool((err <= 1e-5 * scale).all()),
        f"max error {err.max().item():.3g}, relative to sum|a||b| {(err / scale).max().item():.3g}")
    ulps = bf16_ulps(gpu["dot_bf16"], interp["dot_bf16"])
    row("dot_bf16", "dot: fp32 accumulation, rounded to bf16 (1 ulp where the fp32 sums differ)", ulps <= 1,
        f"{same_bits(gpu['dot_bf16'], interp['dot_bf16'])} of {M * N_DOT} differ, max {ulps} bf16 ulp")
    total = inputs["x"].double().abs()[:N_ATOMIC].view(-1, 8).sum(0) + 8
    err = (gpu["atomic"].double() - interp["atomic"].double()).abs()
    row("atomic", "bf16 atomic_add: accumulation order", bool((err <= 2**-6 * total).all()),
        f"max error {err.max().item():.3g} (sum|x| per bin ~{total.mean().item():.4g})")
    return rows


def interpret_phase(out: Path) -> None:
    """Child: the same kernels under tdebug's interpreter patches, on CPU copies of the inputs."""
    os.environ["TRITON_INTERPRET"] = "1"
    import torch

    sys.path[:0] = [str(ROOT), str(ROOT / "scripts")]
    from tdebug.interpreter import patches

    patches.install()
    inputs = torch.load(out / "bf16_inputs.pt")
    started = time.perf_counter()
    results = run_kernels(inputs, "cpu")
    results["_seconds"] = time.perf_counter() - started
    torch.save(results, out / "bf16_interp.pt")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "results")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--phase", choices=["all", "interpret"], default="all", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.phase == "interpret":
        interpret_phase(args.out)
        return 0
    import torch
    import triton

    if not torch.cuda.is_available():
        print("gpu_bf16_check: needs a CUDA GPU", file=sys.stderr)
        return 2
    sys.path.insert(0, str(ROOT / "scripts"))
    inputs = make_inputs(args.seed)
    torch.save(inputs, args.out / "bf16_inputs.pt")
    gpu = run_kernels(inputs, "cuda")
    unfused = run_kernels(inputs, "cuda", fp_fusion=False)
    child = subprocess.run([sys.executable, __file__, "--phase", "interpret", "--out", str(args.out)],
                           capture_output=True, text=True)
    if child.returncode != 0:
        print(child.stdout + child.stderr, file=sys.stderr)
        return 1
    interp = torch.load(args.out / "bf16_interp.pt")
    seconds = interp.pop("_seconds")
    rows = compare(gpu, interp, unfused, inputs)
    for name in ("bf16_inputs.pt", "bf16_interp.pt"):
        (args.out / name).unlink()
    meta = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "gpu": torch.cuda.get_device_name(),
            "torch": torch.__version__, "triton": triton.__version__, "python": platform.python_version(),
            "seed": args.seed, "interpreter_seconds": round(seconds, 2)}
    (args.out / "gpu-bf16-check.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    lines = [f"# bf16: compiled on {meta['gpu']} vs tdebug's interpreter (scripts/gpu_bf16_check.py)", "",
             f"{meta['date']}, torch {meta['torch']}, triton {meta['triton']}, seed {args.seed}; "
             f"the interpreter side took {meta['interpreter_seconds']} s on the CPU.", "",
             "| kernel | what must hold | holds | detail |", "|---|---|---|---|"]
    lines += [f"| {r['kernel']} | {r['kind']} | {'yes' if r['ok'] else 'NO'} | {r['detail']} |" for r in rows]
    (args.out / "gpu-bf16-check.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
