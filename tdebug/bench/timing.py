"""GPU timing for `tdebug bench`: medians with their spread, a strong baseline, the device's measured peaks.

Timing: CUDA events around each call, a warm-up first, the L2 cache flushed (a 256 MB buffer zeroed)
before every repetition, and many repetitions; what is kept is every sample, summarised as the median,
the 20th and 80th percentiles and the coefficient of variation (std / mean).

Correctness comes first: each kernel is launched on poisoned outputs and compared with its float64
reference (the same reference and tolerance table as `tdebug check`). A float64 reference of a huge
shape would take long and much memory, so above CHECK_BYTES the reference check runs on a smaller shape
of the same kernel (the largest dimension halved until it fits), and the full-size launch is checked for
unwritten outputs only; the result says which.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ..catalogue.spec import Case, KernelSpec

FLUSH_BYTES = 256 * 2**20  # larger than any L2 (50 MB on the H100)
CHECK_BYTES = 512 * 2**20  # float64 working set above which the reference check runs on a smaller shape
COPY_BYTES = 2**30  # per buffer, for the copy-bandwidth peak
PEAK_MATMUL = (8192, 8192, 8192)


# ---------------------------------------------------------------------------------------------- statistics


@dataclass
class Stats:
    """A distribution of times in milliseconds."""

    median: float
    p20: float
    p80: float
    mean: float
    cv: float  # coefficient of variation: standard deviation / mean
    n: int
    min: float = 0.0
    max: float = 0.0
    host_us: float | None = None  # host time to enqueue one call (launch overhead), when measured

    def text(self) -> str:
        return f"{self.median:.4g} ms [{self.p20:.4g}-{self.p80:.4g}] cv {100 * self.cv:.1f}%"


def quantile(values: Sequence[float], q: float) -> float:
    """The q-quantile (0..1) with linear interpolation between order statistics."""
    if not values:
        raise ValueError("quantile of no values")
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile {q} outside [0, 1]")
    ordered = sorted(values)
    pos = q * (len(ordered) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def summarize(times: Sequence[float]) -> Stats:
    if not times:
        raise ValueError("no timings to summarise")
    mean = statistics.fmean(times)
    std = statistics.pstdev(times) if len(times) > 1 else 0.0
    return Stats(median=statistics.median(times), p20=quantile(times, 0.2), p80=quantile(times, 0.8),
                 mean=mean, cv=std / mean if mean > 0 else 0.0, n=len(times), min=min(times), max=max(times))


def geomean(values: Sequence[float]) -> float:
    values = [v for v in values if v is not None]
    if not values or any(v <= 0 for v in values):
        return float("nan")
    return math.exp(sum(math.log(v) for v in values) / len(values))


# ---------------------------------------------------------------------------------------------------- timing


class Timer:
    """Times callables on the current CUDA device with CUDA events.

    Before every repetition: the L2 is flushed (a 256 MB buffer zeroed) and the GPU is kept busy with a
    spin kernel long enough for the host to enqueue the call, so the events measure the GPU's time for
    the call alone, never the host's launch overhead (reported apart as host_us). Several callables are
    timed interleaved, repetition by repetition, so that clock and temperature drift reaches all alike.
    """

    def __init__(self, warmup_ms: float = 100.0, rep_ms: float = 400.0, min_reps: int = 25,
                 max_reps: int = 2000, flush: bool = True) -> None:
        import torch

        self.warmup_ms, self.rep_ms = warmup_ms, rep_ms
        self.min_reps, self.max_reps = min_reps, max_reps
        self._torch = torch
        self._cache = torch.empty(FLUSH_BYTES // 4, dtype=torch.int32, device="cuda") if flush else None
        self._cycles_per_us = self._calibrate_sleep()

    def _calibrate_sleep(self) -> float:
        torch = self._torch
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(1000)
        start.record()
        torch.cuda._sleep(2_000_000)
        end.record()
        torch.cuda.synchronize()
        return 2_000_000 / max(start.elapsed_time(end) * 1e3, 1.0)

    def flush(self) -> None:
        if self._cache is not None:
            self._cache.zero_()

    def _estimate(self, fn: Callable[[], Any], flush: bool) -> tuple[float, float]:
        """(GPU ms per call, host us per call) from a few calls after a first, synchronised one."""
        torch = self._torch
        fn()
        torch.cuda.synchronize()
        host = []
        for _ in range(5):
            if flush:
                self.flush()
            t0 = time.perf_counter()
            fn()
            host.append((time.perf_counter() - t0) * 1e6)
            torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(5):
            fn()
        end.record()
        torch.cuda.synchronize()
        return max(start.elapsed_time(end) / 5, 1e-4), statistics.median(host)

    def samples_many(self, fns: Sequence[Callable[[], Any]], flush: bool = True) -> list[tuple[list[float], float]]:
        """For each callable: its per-repetition times (ms) and its host launch time (us)."""
        torch = self._torch
        estimates = [self._estimate(fn, flush) for fn in fns]
        total = sum(e[0] for e in estimates)
        for fn, (gpu_ms, _) in zip(fns, estimates):
            for _ in range(max(1, min(int(self.warmup_ms / len(fns) / gpu_ms), self.max_reps))):
                fn()
        reps = max(self.min_reps, min(int(self.rep_ms / total), self.max_reps))
        # Spin long enough that the host has enqueued the call before the GPU reaches the start event.
        spin = [int((2 * host_us + 20) * self._cycles_per_us) for _, host_us in estimates]
        starts = [[torch.cuda.Event(enable_timing=True) for _ in range(reps)] for _ in fns]
        ends = [[torch.cuda.Event(enable_timing=True) for _ in range(reps)] for _ in fns]
        for i in range(reps):
            for j, fn in enumerate(fns):
                if flush:
                    self.flush()
                torch.cuda._sleep(spin[j])
                starts[j][i].record()
                fn()
                ends[j][i].record()
        torch.cuda.synchronize()
        return [([s.elapsed_time(e) for s, e in zip(starts[j], ends[j])], estimates[j][1]) for j in range(len(fns))]

    def time_many(self, fns: Sequence[Callable[[], Any]], flush: bool = True) -> list[Stats]:
        out = []
        for times, host_us in self.samples_many(fns, flush=flush):
            stats = summarize(times)
            stats.host_us = host_us
            out.append(stats)
        return out

    def time(self, fn: Callable[[], Any], flush: bool = True) -> Stats:
        return self.time_many([fn], flush=flush)[0]


# ------------------------------------------------------------------------------------------------ the device


@dataclass
class Peaks:
    """The device's ceilings as measured in this run (never datasheet numbers)."""

    copy_gbps: float  # device-to-device copy, bytes read + bytes written
    copy: Stats
    matmul_tflops: float  # torch.matmul (cuBLAS) on PEAK_MATMUL, random data
    matmul: Stats
    matmul_dtype: str
    matmul_shape: tuple[int, ...] = PEAK_MATMUL
    copy_bytes: int = 2 * COPY_BYTES


def _copy_peak(timer: Timer) -> Stats:
    import torch

    src = torch.randn(COPY_BYTES // 4, device="cuda")
    dst = torch.empty_like(src)
    return timer.time(lambda: dst.copy_(src), flush=False)  # 1 GiB buffers: the L2 holds none of it


def _matmul_peak(timer: Timer, dtype: str) -> Stats:
    import torch

    from ..catalogue.inputs import torch_dtype

    m, n, k = PEAK_MATMUL
    gen = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn((m, k), device="cuda", generator=gen).to(torch_dtype(dtype))
    b = torch.randn((k, n), device="cuda", generator=gen).to(torch_dtype(dtype))
    return timer.time(lambda: torch.matmul(a, b))


def measure_peaks(timer: Timer, dtype: str = "fp16") -> Peaks:
    import torch

    copy = _copy_peak(timer)
    mm_dtype = dtype if dtype in ("fp16", "bf16") else "fp16"
    mm = _matmul_peak(timer, mm_dtype)
    torch.cuda.empty_cache()
    m, n, k = PEAK_MATMUL
    return Peaks(copy_gbps=2 * COPY_BYTES / (copy.median * 1e-3) / 1e9, copy=copy,
                 matmul_tflops=2.0 * m * n * k / (mm.median * 1e-3) / 1e12, matmul=mm, matmul_dtype=mm_dtype)


def environment() -> dict:
    import datetime
    import platform

    import torch
    import triton

    env = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "python": platform.python_version(), "torch": torch.__version__, "triton": triton.__version__,
           "cuda": torch.version.cuda, "device": None}
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        env["device"] = props.name
        env["sm_count"] = props.multi_processor_count
        env["capability"] = f"{props.major}.{props.minor}"
        env["memory_gib"] = round(props.total_memory / 2**30, 1)
        try:
            import subprocess

            out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=20)
            env["driver"] = out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout else None
        except (OSError, subprocess.SubprocessError, IndexError):
            env["driver"] = None
    return env


# ------------------------------------------------------------------------------------------------ one result


@dataclass
class Check:
    ok: bool
    shape: tuple[int, ...]
    summary: str
    note: str = ""  # why the check ran on a smaller shape, when it did
    unwritten_full: int = 0  # outputs the full-size launch never wrote


@dataclass
class Row:
    """One kernel at one shape (and variant): its check, its timing, its baseline's."""

    kernel: str
    target: str
    shape: tuple[int, ...]
    dtype: str
    variant: str = ""
    check: Check | None = None
    config: str = ""
    ours: Stats | None = None
    baseline: Stats | None = None
    baseline_name: str = ""
    flops: float | None = None
    bytes: float | None = None
    error: str = ""
    # derived
    ratio: float | None = None  # baseline median / our median: > 1 means we are faster
    tflops: float | None = None
    gbps: float | None = None
    bound: str = ""  # "compute" or "memory": which ceiling the kernel is measured against
    peak_fraction: float | None = None  # achieved over the measured ceiling of its bound
    baseline_tflops: float | None = None
    baseline_gbps: float | None = None

    def label(self) -> str:
        text = "x".join(map(str, self.shape))
        return f"{text} {self.variant}" if self.variant else text

    def derive(self, peaks: Peaks | None) -> None:
        if self.ours is None:
            return
        seconds = self.ours.median * 1e-3
        if self.baseline is not None and self.ours.median > 0:
            self.ratio = self.baseline.median / self.ours.median
        if self.flops:
            self.tflops = self.flops / seconds / 1e12
            if self.baseline is not None:
                self.baseline_tflops = self.flops / (self.baseline.median * 1e-3) / 1e12
        if self.bytes:
            self.gbps = self.bytes / seconds / 1e9
            if self.baseline is not None:
                self.baseline_gbps = self.bytes / (self.baseline.median * 1e-3) / 1e9
        self.bound = bound_of(self.flops, self.bytes, peaks)
        if peaks is not None:
            if self.bound == "compute" and self.tflops is not None:
                self.peak_fraction = self.tflops / peaks.matmul_tflops
            elif self.bound == "memory" and self.gbps is not None:
                self.peak_fraction = self.gbps / peaks.copy_gbps


def bound_of(flops: float | None, nbytes: float | None, peaks: Peaks | None) -> str:
    """Compute-bound when the arithmetic intensity is above the device's ridge point (measured peaks)."""
    if flops and not nbytes:
        return "compute"
    if nbytes and not flops:
        return "memory"
    if not flops or not nbytes:
        return ""
    ridge = (peaks.matmul_tflops * 1e12) / (peaks.copy_gbps * 1e9) if peaks else 250.0
    return "compute" if flops / nbytes >= ridge else "memory"


def baseline_name(fn: Callable | None) -> str:
    """A short name for a baseline: torch.matmul, F.embedding, or a lambda's body (F.gelu(x, ...))."""
    if fn is None:
        return ""
    name = getattr(fn, "__name__", "") or type(fn).__name__
    if name == "<lambda>":
        body = lambda_body(fn)
        return body or "baseline (lambda)"
    module = getattr(fn, "__module__", "") or ""
    if module.startswith(("torch.nn.functional", "torch._C._nn")) or name in (
            "scaled_dot_product_attention", "layer_norm", "gelu", "embedding"):
        return f"F.{name}"
    if module.startswith("torch") or name in ("matmul", "add", "softmax"):
        return f"torch.{name}"
    return f"{module}.{name}" if module else name


def lambda_body(fn: Callable, limit: int = 60) -> str:
    """The expression of a lambda, from its source: 'lambda x: torch.softmax(x, dim=-1),' -> its body."""
    import inspect

    try:
        source = inspect.getsource(fn)
    except (OSError, TypeError):
        return ""
    start = source.find("lambda")
    if start < 0:
        return ""
    depth, colon = 0, -1
    for i in range(start, len(source)):  # the colon that ends the parameters (defaults may hold brackets)
        ch = source[i]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == ":" and depth == 0:
            colon = i
            break
    if colon < 0:
        return ""
    depth, end = 0, len(source)
    for i in range(colon + 1, len(source)):
        ch = source[i]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0:
                end = i
                break
            depth -= 1
        elif ch in ",\n" and depth == 0:
            end = i
            break
    body = " ".join(source[colon + 1:end].split())
    body = body.replace("torch.nn.functional.", "F.").replace("( ", "(").replace(" )", ")")
    return body if len(body) <= limit else body[: limit - 3] + "..."


# ------------------------------------------------------------------------------------------------- checking


def _float64(x):
    import torch

    if isinstance(x, torch.Tensor) and x.is_floating_point():
        return x.to(torch.float64)
    return x


def element_size(dtype: str) -> int:
    return {"fp32": 4, "fp16": 2, "bf16": 2}[dtype]


def check_shape(spec: KernelSpec, shape: tuple[int, ...], limit: int = CHECK_BYTES) -> tuple[tuple[int, ...], str]:
    """The shape to run the float64 reference check on: `shape` itself if its float64 working set fits
    under `limit`, else `shape` with its largest dimension halved until it does."""
    if spec.bytes is None:
        return shape, ""
    small = list(shape)
    while spec.bytes(tuple(small), 8) > limit:
        i = max(range(len(small)), key=lambda j: small[j])
        if small[i] <= 16:
            break
        small[i] = (small[i] + 1) // 2
    small_t = tuple(small)
    if small_t == tuple(shape):
        return small_t, ""
    return small_t, (f"reference checked at {'x'.join(map(str, small_t))} (a float64 reference at full size "
                     f"is too large); the full-size output was checked for unwritten elements")


def check_correctness(spec: KernelSpec, shape: tuple[int, ...], dtype: str, variant: str, seed: int) -> Check:
    """Launch on poisoned outputs and compare with the float64 reference, as `tdebug check` does."""
    import torch

    from ..catalogue.compare import TOLERANCES, compare_outputs
    from ..catalogue.poison import poisoned_empty

    cshape, note = check_shape(spec, shape)
    case = Case(cshape, dtype, "contiguous", seed, "cuda", None, variant)
    inputs = spec.make_inputs(case)
    spec.launch(*inputs)  # let an autotuner choose first: its trial runs would write the poisoned output
    with poisoned_empty():
        out = spec.launch(*inputs)
    torch.cuda.synchronize()
    ref = spec.reference(*[_float64(x) for x in inputs])
    tol = spec.tolerances.get(dtype) or TOLERANCES.get(dtype)
    comps = compare_outputs(out, ref, tol)
    ok = all(c.ok for c in comps)
    summary = "; ".join(c.summary() for c in comps)
    if not ok:
        details = [d for c in comps for d in c.details()][:3]
        if details:
            summary += " (" + "; ".join(details) + ")"
    return Check(ok=ok, shape=cshape, summary=summary, note=note)


def count_unwritten(out) -> int:
    import torch

    from ..catalogue.poison import poison_mask

    outs = out if isinstance(out, (tuple, list)) else (out,)
    return sum(int(poison_mask(o).sum()) for o in outs if isinstance(o, torch.Tensor))


# ------------------------------------------------------------------------------------------------ autotuning


def autotuners(module) -> list:
    """The @triton.autotune objects defined in a target's module (possibly under @heuristics)."""
    found = []
    for value in vars(module).values():
        obj, depth = value, 0
        while obj is not None and depth < 5:
            if obj.__class__.__name__ == "Autotuner":
                if obj not in found:
                    found.append(obj)
                break
            obj = getattr(obj, "fn", None)
            depth += 1
    return found


def chosen_configs(tuners: Sequence) -> str:
    from ..interpreter.patches import config_text

    parts = []
    for tuner in tuners:
        config = getattr(tuner, "best_config", None)
        if config is not None:
            name = getattr(getattr(tuner, "base_fn", None), "__name__", "kernel")
            parts.append(f"{name}: {config_text(config)}" if len(tuners) > 1 else config_text(config))
    return "; ".join(parts)


# ------------------------------------------------------------------------------------------------ one kernel


@dataclass
class Options:
    dtype: str = "fp16"
    seed: int = 0
    warmup_ms: float = 100.0
    rep_ms: float = 400.0
    check: bool = True
    log: Callable[[str], None] = field(default=lambda s: None)


def bench_case(spec: KernelSpec, module, target: str, shape: tuple[int, ...], variant: str, timer: Timer,
               peaks: Peaks | None, opts: Options) -> Row:
    import torch

    row = Row(kernel=spec.name, target=target, shape=tuple(shape), dtype=opts.dtype, variant=variant,
              baseline_name=baseline_name(spec.baseline))
    size = element_size(opts.dtype)
    row.flops = spec.flops(tuple(shape)) if spec.flops else None
    row.bytes = spec.bytes(tuple(shape), size) if spec.bytes else None
    try:
        if opts.check:
            row.check = check_correctness(spec, tuple(shape), opts.dtype, variant, opts.seed)
            torch.cuda.empty_cache()
        _time_full_size(spec, module, row, timer, opts)
    except Exception as exc:  # noqa: BLE001 - reported in the row, the run goes on
        row.error = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    finally:
        torch.cuda.empty_cache()
    row.derive(peaks)
    return row


def _time_full_size(spec: KernelSpec, module, row: Row, timer: Timer, opts: Options) -> None:
    """Warm up (compile, autotune) at the full shape, look for unwritten outputs if the reference check
    ran on a smaller shape, then time ours and the baseline on the same inputs."""
    import torch

    from ..catalogue.poison import poisoned_empty

    inputs = spec.make_inputs(Case(row.shape, opts.dtype, "contiguous", opts.seed, "cuda", None, row.variant))
    tuners = autotuners(module)
    for tuner in tuners:
        tuner.best_config = None
    started = time.perf_counter()
    spec.launch(*inputs)  # warm-up: compilation and autotuning for this shape
    torch.cuda.synchronize()
    opts.log(f"  {spec.name} {row.label()}: warm-up (compile/autotune) {time.perf_counter() - started:.1f} s")
    row.config = chosen_configs(tuners)
    if row.check is not None and row.check.note:
        with poisoned_empty():
            out = spec.launch(*inputs)
        torch.cuda.synchronize()
        row.check.unwritten_full = count_unwritten(out)
        if row.check.unwritten_full:
            row.check.ok = False
            row.check.summary += f"; full size: {row.check.unwritten_full} elements never written"
        out = None
    fns = [lambda: spec.launch(*inputs)]
    if spec.baseline is not None:
        fns.append(lambda: spec.baseline(*inputs))
    stats = timer.time_many(fns)  # interleaved: ours and the baseline see the same clocks
    row.ours = stats[0]
    row.baseline = stats[1] if len(stats) > 1 else None


def row_dict(row: Row) -> dict:
    d = asdict(row)
    d["shape"] = list(row.shape)
    if row.check is not None:
        d["check"]["shape"] = list(row.check.shape)
    return d


def peaks_dict(peaks: Peaks) -> dict:
    d = asdict(peaks)
    d["matmul_shape"] = list(peaks.matmul_shape)
    return d
