"""What `tdebug bench` reports: the targets each kernel is held to, a table for people, JSON for machines.

The targets are the project's (issue 8), for the H100 in fp16: a kernel's ratio is the baseline's median
time over ours (above 1: we are faster), its peak fraction its achieved rate over the ceiling measured in
the same run (copy bandwidth for memory-bound kernels, a large cuBLAS matmul for compute-bound ones).
"""

from __future__ import annotations

from dataclasses import dataclass

from .timing import Row, Stats, geomean

MB = 2**20


@dataclass(frozen=True)
class Goal:
    """A kernel's target. Ratios are baseline time / our time; peak_fraction is of the measured copy rate."""

    text: str
    geomean_ratio: float | None = None  # over all its bench shapes
    min_ratio: float | None = None  # every counted shape
    peak_fraction: float | None = None  # every counted shape
    min_bytes: float = 0  # only shapes whose working set is at least this count
    shapes: tuple[tuple[int, ...], ...] = ()  # only these shapes count (all when empty)


MATMUL_SHAPES = ((1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192),
                 (8192, 4096, 4096), (8192, 11008, 4096), (8192, 4096, 11008))


GOALS: dict[str, Goal] = {
    "matmul": Goal("geomean ratio >= 1.0 over 1024^3, 2048^3, 4096^3, 8192^3 and M=8192 with (N,K) = "
                   "(4096,4096), (11008,4096), (4096,11008); no shape below 0.9", geomean_ratio=1.0, min_ratio=0.9,
                   shapes=MATMUL_SHAPES),
    "add": Goal(">= 90% of copy bandwidth and >= 1.0x at >= 256 MB", min_ratio=1.0, peak_fraction=0.9,
                min_bytes=256 * MB),
    "gelu": Goal(">= 90% of copy bandwidth and >= 1.0x at >= 256 MB", min_ratio=1.0, peak_fraction=0.9,
                 min_bytes=256 * MB),
    "softmax": Goal(">= 90% of copy bandwidth and >= 1.0x at >= 256 MB", min_ratio=1.0, peak_fraction=0.9,
                    min_bytes=256 * MB),
    "layernorm": Goal(">= 90% of copy bandwidth and >= 1.0x at >= 256 MB", min_ratio=1.0, peak_fraction=0.9,
                      min_bytes=256 * MB),
    "attention": Goal(">= 1.0x SDPA at B=4, H=32, S=4096, D=128, causal and not", min_ratio=1.0,
                      shapes=((4, 32, 4096, 128),)),
    "matmul_bias_relu": Goal(">= 1.1x torch.matmul + bias + relu unfused", min_ratio=1.1),
}


@dataclass
class GoalResult:
    """One kernel's timings judged against its Goal: met, missed, or nothing to judge, with the lines why."""

    kernel: str
    goal: str
    met: bool | None  # None: nothing to judge (no counted shape, or errors)
    lines: list[str]


def _shortfall(value: float, target: float) -> str:
    return f"missed by {100 * (1 - value / target):.1f}%"


def judge(kernel: str, rows: list[Row], copy_gbps: float | None = None,
          goals: dict[str, Goal] = GOALS) -> GoalResult | None:
    goal = goals.get(kernel)
    if goal is None:
        return None
    lines: list[str] = []
    counted = [r for r in rows if r.ratio is not None and (r.bytes or 0) >= goal.min_bytes
               and (not goal.shapes or tuple(r.shape) in goal.shapes)]
    bad = [r for r in rows if r.error or (r.check is not None and not r.check.ok)]
    met = True
    for r in bad:
        lines.append(f"{r.label()}: {'error: ' + r.error if r.error else 'wrong results'}")
        met = False
    if goal.shapes and counted and len({tuple(r.shape) for r in counted}) < len(goal.shapes):
        missing = [s for s in goal.shapes if s not in {tuple(r.shape) for r in counted}]
        lines.append("not measured: " + ", ".join("x".join(map(str, s)) for s in missing))
        met = False if goal.geomean_ratio is not None else met
    if not counted:
        lines.append("no shape to judge" + (f" (needs a working set >= {goal.min_bytes / MB:.0f} MB)"
                                            if goal.min_bytes else "") + (
            " (target shapes: " + ", ".join("x".join(map(str, s)) for s in goal.shapes) + ")"
            if goal.shapes else ""))
        return GoalResult(kernel, goal.text, None if met else False, lines)
    if goal.geomean_ratio is not None:
        g = geomean([r.ratio for r in counted])
        ok = g >= goal.geomean_ratio
        met &= ok
        lines.append(f"geomean ratio {g:.3f}x (target >= {goal.geomean_ratio}x)"
                     + ("" if ok else f": {_shortfall(g, goal.geomean_ratio)}"))
    for r in counted:
        parts = []
        if goal.min_ratio is not None:
            ok = r.ratio >= goal.min_ratio
            met &= ok
            parts.append(f"ratio {r.ratio:.3f}x" + ("" if ok else f" < {goal.min_ratio}x, "
                                                     f"{_shortfall(r.ratio, goal.min_ratio)}"))
        if goal.peak_fraction is not None:
            frac = r.gbps / copy_gbps if r.gbps is not None and copy_gbps else None
            if frac is not None:
                ok = frac >= goal.peak_fraction
                met &= ok
                parts.append(f"{100 * frac:.1f}% of copy bandwidth" + (
                    "" if ok else f" < {100 * goal.peak_fraction:.0f}%, {_shortfall(frac, goal.peak_fraction)}"))
        lines.append(f"{r.label()}: " + ", ".join(parts))
    return GoalResult(kernel, goal.text, met, lines)


def goal_results(rows: list[Row], copy_gbps: float | None = None) -> list[GoalResult]:
    by_kernel: dict[str, list[Row]] = {}
    for r in rows:
        by_kernel.setdefault(r.kernel, []).append(r)
    out = []
    for kernel, krows in by_kernel.items():
        v = judge(kernel, krows, copy_gbps)
        if v is not None:
            out.append(v)
    return out


# ------------------------------------------------------------------------------------------------ rendering


def _ms(s: Stats | None) -> str:
    return "-" if s is None else f"{s.median:.4g}"


def _spread(s: Stats | None) -> str:
    return "-" if s is None else f"{s.p20:.4g}-{s.p80:.4g} cv{100 * s.cv:.1f}%"


def _rate(r: Row) -> str:
    if r.bound == "compute" and r.tflops is not None:
        return f"{r.tflops:.1f} TFLOP/s"
    if r.gbps is not None:
        return f"{r.gbps:.0f} GB/s"
    if r.tflops is not None:
        return f"{r.tflops:.1f} TFLOP/s"
    return "-"


def _check(r: Row) -> str:
    if r.check is None:
        return "-"
    mark = "ok" if r.check.ok else "FAIL"
    return mark + ("*" if r.check.note else "")


def table_rows(rows: list[Row]) -> list[list[str]]:
    out = []
    for r in rows:
        if r.error:
            out.append([r.kernel, r.label(), _check(r), "error", "", "", "", "", "", r.error[:80]])
            continue
        out.append([
            r.kernel, r.label(), _check(r), _ms(r.ours), _spread(r.ours), _ms(r.baseline), _spread(r.baseline),
            "-" if r.ratio is None else f"{r.ratio:.3f}x", _rate(r),
            "-" if r.peak_fraction is None else f"{100 * r.peak_fraction:.0f}% {r.bound}",
        ])
    return out


HEADER = ["kernel", "shape", "check", "ours ms", "p20-p80, cv", "base ms", "p20-p80, cv", "base/ours", "ours",
          "of peak"]


def text_table(header: list[str], body: list[list[str]]) -> str:
    widths = [max(len(h), *(len(row[i]) for row in body)) if body else len(h) for i, h in enumerate(header)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    for row in body:
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
    return "\n".join(lines)


def render_text(report: dict, rows: list[Row]) -> str:
    env = report.get("environment", {})
    peaks = report.get("peaks")
    out = [f"device: {env.get('device')}  torch {env.get('torch')}  triton {env.get('triton')}  "
           f"CUDA {env.get('cuda')}  dtype {report.get('dtype')}  {env.get('date')}"]
    if peaks:
        out.append(f"measured peaks: copy {peaks['copy_gbps']:.0f} GB/s (read+write), "
                   f"{peaks['matmul_dtype']} matmul {'x'.join(map(str, peaks['matmul_shape']))} "
                   f"{peaks['matmul_tflops']:.0f} TFLOP/s (cuBLAS)")
    out.append("")
    out.append(text_table(HEADER, table_rows(rows)))
    notes = [f"  {r.kernel} {r.label()}: {r.check.note}" for r in rows if r.check is not None and r.check.note]
    if notes:
        out.append("* " + notes[0].strip())
        out += notes[1:]
    fails = [r for r in rows if r.check is not None and not r.check.ok]
    for r in fails:
        out.append(f"FAIL {r.kernel} {r.label()}: {r.check.summary}")
    configs = [f"  {r.kernel} {r.label()}: {r.config}" for r in rows if r.config]
    if configs:
        out.append("autotuner's choices:")
        out += configs
    for item in report.get("skipped") or []:
        out.append(f"skipped {item['reason']}")
    vs = report.get("targets") or []
    if vs:
        out.append("targets:")
        for v in vs:
            state = {True: "MET", False: "MISSED", None: "n/a"}[v["met"]]
            out.append(f"  {v['kernel']}: {state} ({v['goal']})")
            out += [f"    {line}" for line in v["lines"]]
    return "\n".join(out)


def markdown(report: dict) -> str:
    """The README's performance table, from a JSON report (rows as dicts)."""
    env = report.get("environment", {})
    peaks = report.get("peaks") or {}
    lines = [f"Measured on {env.get('device')} ({env.get('date', '')[:10]}), torch {env.get('torch')}, "
             f"triton {env.get('triton')}, CUDA {env.get('cuda')}, {report.get('dtype')}. "
             f"Median of many runs with the L2 flushed between them; ratio = baseline time / our time "
             f"(> 1: ours is faster).", ""]
    if peaks:
        lines.append(f"Measured peaks: copy {peaks['copy_gbps']:.0f} GB/s (read + write), "
                     f"{peaks['matmul_dtype']} cuBLAS matmul {'x'.join(map(str, peaks['matmul_shape']))} "
                     f"{peaks['matmul_tflops']:.0f} TFLOP/s.")
        lines.append("")
    lines.append("| kernel | shape | check | ours (ms) | p20-p80 (cv) | baseline | baseline (ms) | ratio | "
                 "achieved | of peak |")
    lines.append("|---|---|---|---:|---|---|---:|---:|---:|---:|")
    for r in report.get("results", []):
        shape = "x".join(map(str, r["shape"])) + (f" {r['variant']}" if r.get("variant") else "")
        if r.get("error"):
            lines.append(f"| {r['kernel']} | {shape} | error | | | {r.get('baseline_name', '')} | | | | "
                         f"{r['error'][:60]} |")
            continue
        check = r.get("check") or {}
        mark = "-" if not check else ("ok" if check.get("ok") else "**FAIL**") + ("*" if check.get("note") else "")
        ours, base = r.get("ours"), r.get("baseline")
        if r.get("bound") == "compute" and r.get("tflops") is not None:
            rate = f"{r['tflops']:.0f} TFLOP/s"
        elif r.get("gbps") is not None:
            rate = f"{r['gbps']:.0f} GB/s"
        else:
            rate = "-"
        frac = "-" if r.get("peak_fraction") is None else f"{100 * r['peak_fraction']:.0f}% ({r['bound']})"
        lines.append(
            f"| {r['kernel']} | {shape} | {mark} | {_fmt(ours, 'median')} | "
            f"{_fmt(ours, 'p20')}-{_fmt(ours, 'p80')} ({_cv(ours)}) | {r.get('baseline_name', '')} | "
            f"{_fmt(base, 'median')} | " + ("-" if r.get("ratio") is None else f"{r['ratio']:.2f}x") +
            f" | {rate} | {frac} |")
    if any((r.get("check") or {}).get("note") for r in report.get("results", [])):
        lines += ["", "\\* reference checked on a smaller shape of the same kernel (a float64 reference at full "
                  "size is too large); the full-size output was checked for unwritten elements."]
    for item in report.get("skipped") or []:
        lines += ["", f"Skipped: {item['reason']}"]
    vs = report.get("targets") or []
    if vs:
        lines += ["", "| kernel | target | result |", "|---|---|---|"]
        for v in vs:
            state = {True: "met", False: "**missed**", None: "n/a"}[v["met"]]
            detail = "; ".join(v["lines"])
            lines.append(f"| {v['kernel']} | {v['goal']} | {state}: {detail} |")
    return "\n".join(lines) + "\n"


def _fmt(stats: dict | None, key: str) -> str:
    return "-" if not stats else f"{stats[key]:.4g}"


def _cv(stats: dict | None) -> str:
    return "-" if not stats else f"cv {100 * stats['cv']:.1f}%"
