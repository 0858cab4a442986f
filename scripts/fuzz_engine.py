"""The long run of the engine fuzzer (tests/cpu/data/kernel_fuzz.py): random valid Triton kernels under the serial
and the batched engine for N minutes; every class of disagreement shrunk to a minimal kernel and written out.

    python scripts/fuzz_engine.py --minutes N [--seed S] [--out DIR] [--without KIND,...] [--json FILE]

Each round asks hypothesis's `find` for a kernel whose disagreement is of a class not seen yet (a class: what
differs; for outputs which kind of tensor, for findings which checks, for errors which exceptions), then shrinks
it while it stays in that class. Prints kernels tried, kernels per minute, the grammar's coverage and one line per
class with the file of its minimal kernel (DIR, a fresh temporary folder by default). `--without` leaves statement
kinds out of the grammar (atomic, dot, if, loop, return, store, reduce, scan, rows, ...), to look past a class
that is known. Exit 0 when the engines agreed on every kernel, 1 when they did not, 2 on a usage error.

The sanitizer's dense-row paths for runs of programs (an early return's runs, an element-wise kernel's short last
row) take only accesses of thousands of lanes, which the fuzzer's small kernels never reach: run it with
TDEBUG_DENSE_RUN_LANES=1 to send every access that fits down them.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "cpu" / "data"))
sys.path.insert(0, str(ROOT))
os.environ["TRITON_INTERPRET"] = "1"

import kernel_fuzz  # noqa: E402
from hypothesis import HealthCheck, Phase, find, settings  # noqa: E402
from hypothesis.errors import Flaky, NoSuchExample  # noqa: E402


class OutOfTime(BaseException):
    """The run's minutes are spent (a BaseException: hypothesis lets it through rather than shrink it)."""


# Per class: hypothesis's shrinking of the draws, then as long again deleting lines.
SHRINK_SECONDS = float(os.environ.get("TDEBUG_FUZZ_SHRINK_SECONDS", "45"))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None, help="folder for the minimal kernels (made if missing)")
    parser.add_argument("--without", default="", help="statement kinds to leave out, comma-separated")
    parser.add_argument("--json", type=Path, default=None, help="also write the report as JSON here")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    without = [w for w in args.without.split(",") if w]
    unknown = [w for w in without if w not in kernel_fuzz.Writer.STATEMENTS]
    if unknown or args.minutes <= 0:
        print(f"fuzz_engine: unknown statement kind {unknown} (known: {kernel_fuzz.Writer.STATEMENTS})"
              if unknown else "fuzz_engine: --minutes must be positive", file=sys.stderr)
        return 2
    kernel_fuzz.Writer.STATEMENTS = [k for k in kernel_fuzz.Writer.STATEMENTS if k not in without]
    out = args.out or Path(tempfile.mkdtemp(prefix="tdebug-fuzz-found-"))
    if out.exists() and any(out.glob("disagreement_*.py")):
        print(f"fuzz_engine: {out} already holds disagreement_*.py files; give an empty --out", file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)

    runner = kernel_fuzz.Runner()
    deadline = started + args.minutes * 60
    classes: dict[str, kernel_fuzz.Outcome] = {}
    disagreeing = 0
    flaky: list[Path] = []  # kernels that disagreed once and agreed when run again: nondeterminism, a finding too
    rng = random.Random(args.seed)
    rounds = 0
    while time.perf_counter() < deadline:
        rounds += 1
        target: list[str] = []
        counted: set[str] = set()
        stop = [deadline]
        last_hit: list = [None]

        def condition(kernel: kernel_fuzz.Kernel, target=target, counted=counted, stop=stop,
                      last_hit=last_hit) -> bool:
            nonlocal disagreeing
            key = f"{kernel.seed}\n{kernel.source}"
            if time.perf_counter() > stop[0] and key not in runner.memo:
                if not target:
                    raise OutOfTime  # no class in hand: the round ends
                return False  # out of time: only kernels already run may still count (find's last replay)
            o = runner.outcome(kernel)
            if not o.what:
                return False
            if key not in counted:
                counted.add(key)
                disagreeing += 1
            sig = o.signature()
            last_hit[0] = kernel
            if not target and sig not in classes:
                target.append(sig)
                stop[0] = min(deadline + SHRINK_SECONDS, time.perf_counter() + SHRINK_SECONDS)
            return bool(target) and sig == target[0]

        budget = settings(max_examples=10**9, database=None, deadline=None, suppress_health_check=list(HealthCheck),
                          phases=[Phase.generate, Phase.shrink])
        try:
            kernel = find(kernel_fuzz.kernels(), condition, settings=budget, random=random.Random(rng.getrandbits(64)))
        except (NoSuchExample, OutOfTime):
            break
        except Flaky:  # the disagreement did not come back when hypothesis ran the kernel again
            kernel = last_hit[0]
            if kernel is not None:
                path = out / f"flaky_{len(flaky) + 1}.py"
                path.write_text(kernel_fuzz.module_source(kernel) + "\n\nSEED = " + str(kernel.seed) + "\n\n# the "
                                "engines disagreed on this kernel once and agreed when it ran again\n")
                flaky.append(path)
                print(f"[{(time.perf_counter() - started) / 60:.1f} min] a disagreement that did not come back: {path}",
                      flush=True)
            continue
        sig = runner.outcome(kernel).signature()
        if sig in classes:
            continue
        kernel = kernel_fuzz.shrink_lines(kernel, lambda k, sig=sig: runner.outcome(k).signature() == sig,
                                          time.perf_counter() + SHRINK_SECONDS)
        o = runner.outcome(kernel)
        classes[sig] = o
        path = out / f"disagreement_{len(classes)}.py"
        path.write_text(kernel_fuzz.module_source(kernel) + "\n\nSEED = " + str(kernel.seed) + "\n\n"
                        + "".join(f"# {line}\n" for line in o.summary().splitlines()))
        print(f"[{(time.perf_counter() - started) / 60:.1f} min] {sig}: {path} ({kernel.statements} statements)",
              flush=True)

    minutes = (time.perf_counter() - started) / 60
    report = {
        "kernels": runner.tried, "minutes": round(minutes, 2), "kernels_per_minute": round(runner.tried / minutes, 1),
        "disagreeing_kernels": disagreeing, "invalid_kernels": len(runner.invalid),
        "flaky": [str(p) for p in flaky],
        "invalid": [{"error": e, "source": src} for e, src in runner.invalid[:20]],
        "classes": [{"signature": sig, "file": str(out / f"disagreement_{i + 1}.py"),
                     "statements": o.kernel.statements, "summary": o.summary()}
                    for i, (sig, o) in enumerate(classes.items())],
        "coverage": dict(sorted(runner.coverage.items())),
    }
    print(f"{runner.tried} kernels in {minutes:.1f} min ({report['kernels_per_minute']}/min), "
          f"{disagreeing} disagreeing, {len(runner.invalid)} invalid (the generator's fault)")
    groups: dict[str, list[str]] = {}
    for key, count in sorted(runner.coverage.items()):
        kind, _, what = key.partition(":")
        groups.setdefault(kind, []).append(f"{what} {count}")
    print("coverage:")
    for kind, items in groups.items():
        print(f"  {kind}: " + ", ".join(items))
    for error, source in runner.invalid[:3]:
        print(f"invalid kernel: {error}\n{source}")
    print(f"{len(classes)} classes of disagreement" + (f", minimal kernels in {out}" if classes else "")
          + (f"; {len(flaky)} disagreement(s) that did not come back ({', '.join(map(str, flaky))})" if flaky else ""))
    for i, o in enumerate(classes.values()):
        print(f"  disagreement_{i + 1}.py: {o.summary().splitlines()[0]}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=1, default=str))
    return 1 if classes or disagreeing or flaky else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
