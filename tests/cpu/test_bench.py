"""tdebug bench on the CPU: the no-GPU path, the statistics, the targets, the table and JSON rendering."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tdebug.bench.report import MATMUL_SHAPES, goal_results, judge, markdown, render_text
from tdebug.bench.timing import (
    Check,
    Peaks,
    Row,
    Stats,
    baseline_name,
    bound_of,
    check_shape,
    geomean,
    quantile,
    row_dict,
    summarize,
)
from tdebug.catalogue.spec import load_target
from tdebug.cli import bench as bench_cli
from tdebug.cli import cli

ROOT = Path(__file__).resolve().parents[2]


def invoke(args, monkeypatch=None, gpu=False):
    if monkeypatch is not None:
        monkeypatch.setattr(bench_cli, "gpu_available", lambda: gpu)
    return CliRunner().invoke(cli, args)


# ------------------------------------------------------------------------------------------------ the CLI


@pytest.mark.parametrize("args", [["bench", "--all"], ["bench", "matmul"], ["bench", "kernels/add.py"],
                                  ["bench", "add", "--shape", "1024", "--json", "out.json"]])
def test_no_gpu_is_one_line_and_exit_3(monkeypatch, args):
    result = invoke(args, monkeypatch, gpu=False)
    assert result.exit_code == 3  # tdebug cannot do the job here (not a usage error)
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1
    assert "needs a CUDA GPU" in lines[0]
    assert "Traceback" not in result.output


def test_no_gpu_on_this_machine_is_exit_3():
    """Without monkeypatching: the CPU CI machine has no GPU (skipped where one is visible)."""
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a GPU is visible")
    result = subprocess.run([sys.executable, "-m", "tdebug", "bench", "--all"], capture_output=True, text=True,
                            cwd=ROOT, timeout=120)
    assert result.returncode == 3
    assert result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1
    assert "needs a CUDA GPU" in result.stderr


@pytest.mark.parametrize("args, message", [
    (["bench"], "use --all"),
    (["bench", "no_such_kernel"], "no such file or kernel"),
    (["bench", "pyproject.toml"], "not a catalogue file"),
    (["bench", "matmul", "--shape", "12xab"], "bad shape"),
    (["bench", "matmul", "--dtype", "fp8"], "fp8"),
    (["bench", "matmul", "--rep-ms", "0"], "--rep-ms"),
])
def test_usage_errors_exit_2(monkeypatch, args, message):
    monkeypatch.chdir(ROOT)
    result = invoke(args, monkeypatch, gpu=True)
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "Traceback" not in result.output


def test_resolve_target_by_name_and_all():
    assert bench_cli.resolve_target("matmul").name == "matmul.py"
    names = {p.stem for p in bench_cli.all_targets()}
    assert {"add", "matmul"} <= names


def test_bench_shapes_override_is_completed_by_the_spec():
    target = load_target(ROOT / "kernels" / "matmul.py")
    assert bench_cli.bench_shapes(target, ((256, 128),)) == [(256, 128, 65)]
    assert (4096, 4096, 4096) in bench_cli.bench_shapes(target, ())


# --------------------------------------------------------------------------------------------- statistics


def test_quantile_interpolates():
    values = [float(v) for v in range(1, 11)]  # 1..10
    assert quantile(values, 0.0) == 1.0
    assert quantile(values, 1.0) == 10.0
    assert quantile(values, 0.5) == pytest.approx(5.5)
    assert quantile(values, 0.2) == pytest.approx(2.8)
    assert quantile(values, 0.8) == pytest.approx(8.2)
    assert quantile([3.0], 0.2) == 3.0
    with pytest.raises(ValueError):
        quantile([], 0.5)


def test_summarize_median_spread_and_cv():
    times = [1.0, 1.0, 1.0, 1.0, 3.0]  # one slow outlier
    s = summarize(times)
    assert s.median == 1.0
    assert s.n == 5
    assert s.mean == pytest.approx(1.4)
    assert s.cv == pytest.approx(0.8 / 1.4)  # population std 0.8
    assert s.p20 == 1.0 and s.p80 == pytest.approx(1.4)
    assert s.min == 1.0 and s.max == 3.0
    assert summarize([2.0]).cv == 0.0
    with pytest.raises(ValueError):
        summarize([])


def test_summarize_is_order_independent():
    import random

    times = [random.Random(1).uniform(0.5, 2.0) for _ in range(101)]
    a, b = summarize(times), summarize(sorted(times))
    assert (a.median, a.p20, a.p80) == (b.median, b.p20, b.p80)


def test_geomean():
    assert geomean([1.0, 4.0]) == pytest.approx(2.0)
    assert geomean([0.9, 1.1, 1.0]) == pytest.approx((0.9 * 1.1) ** (1 / 3))
    assert math.isnan(geomean([]))
    assert math.isnan(geomean([1.0, 0.0]))


def _stats(ms: float) -> Stats:
    return Stats(median=ms, p20=ms * 0.98, p80=ms * 1.02, mean=ms, cv=0.01, n=100)


def _peaks() -> Peaks:
    return Peaks(copy_gbps=3000.0, copy=_stats(0.7), matmul_tflops=700.0, matmul=_stats(1.57), matmul_dtype="fp16")


def test_row_derives_ratio_rates_and_bound():
    flops = 2.0 * 4096**3
    nbytes = 3 * 4096 * 4096 * 2
    row = Row(kernel="matmul", target="kernels/matmul.py", shape=(4096, 4096, 4096), dtype="fp16",
              ours=_stats(0.2), baseline=_stats(0.21), flops=flops, bytes=nbytes)
    row.derive(_peaks())
    assert row.ratio == pytest.approx(1.05)
    assert row.tflops == pytest.approx(flops / 0.2e-3 / 1e12)
    assert row.bound == "compute"
    assert row.peak_fraction == pytest.approx(row.tflops / 700.0)
    add = Row(kernel="add", target="", shape=(2**26,), dtype="fp16", ours=_stats(0.14), baseline=_stats(0.14),
              bytes=3 * 2**26 * 2)
    add.derive(_peaks())
    assert add.bound == "memory"
    assert add.gbps == pytest.approx(3 * 2**27 / 0.14e-3 / 1e9)
    assert add.peak_fraction == pytest.approx(add.gbps / 3000.0)


def test_bound_uses_the_measured_ridge_point():
    peaks = _peaks()  # ridge: 700e12 / 3000e9 = 233 flop/byte
    assert bound_of(1000.0, 10.0, peaks) == "memory"
    assert bound_of(1000.0, 1.0, peaks) == "compute"
    assert bound_of(None, 10.0, peaks) == "memory"
    assert bound_of(5.0, None, peaks) == "compute"


def test_check_shape_shrinks_only_huge_shapes():
    spec = load_target(ROOT / "kernels" / "matmul.py").spec
    assert check_shape(spec, (1024, 1024, 1024)) == ((1024, 1024, 1024), "")
    small, note = check_shape(spec, (8192, 8192, 8192))
    assert small != (8192, 8192, 8192) and spec.bytes(small, 8) <= 512 * 2**20
    assert "reference checked at" in note


def test_baseline_names():
    import torch

    assert baseline_name(torch.matmul) == "torch.matmul"
    assert baseline_name(torch.nn.functional.embedding) == "F.embedding"
    assert baseline_name(lambda x: torch.softmax(x, dim=-1)) == "torch.softmax(x, dim=-1)"
    assert baseline_name(None) == ""


# ------------------------------------------------------------------------------------------ targets, output


def _matmul_rows(ratios, shapes=MATMUL_SHAPES):
    rows = []
    for shape, r in zip(shapes, ratios):
        row = Row(kernel="matmul", target="", shape=shape, dtype="fp16", ours=_stats(1.0),
                  baseline=_stats(r), flops=2.0 * shape[0] * shape[1] * shape[2], bytes=1.0,
                  check=Check(ok=True, shape=(64, 64, 64), summary="ok"))
        row.derive(_peaks())
        rows.append(row)
    return rows


def test_judge_matmul_geomean_and_floor():
    v = judge("matmul", _matmul_rows([1.1, 1.0, 0.95, 1.0, 1.0, 1.0, 1.0]))
    assert v.met is True
    v = judge("matmul", _matmul_rows([1.0, 0.96, 0.95, 1.0, 1.0, 1.0, 1.0]))
    assert v.met is False
    assert any("missed by" in line and "geomean" in line for line in v.lines)
    v = judge("matmul", _matmul_rows([0.85, 1.3, 1.3, 1.0, 1.0, 1.0, 1.0]))
    assert v.met is False
    assert any("< 0.9x" in line for line in v.lines)


def test_judge_matmul_needs_all_its_shapes():
    v = judge("matmul", _matmul_rows([1.2, 1.2]))  # two of the seven target shapes
    assert v.met is False
    assert any(line.startswith("not measured: 4096x4096x4096") for line in v.lines)
    other = _matmul_rows([1.2], shapes=[(512, 512, 512)])
    assert judge("matmul", other).met is None  # no target shape measured: nothing to judge


def test_judge_memory_kernel_counts_only_large_working_sets():
    def row(n, ours_ms, base_ms):
        r = Row(kernel="add", target="", shape=(n,), dtype="fp16", ours=_stats(ours_ms), baseline=_stats(base_ms),
                bytes=3 * n * 2, check=Check(ok=True, shape=(n,), summary="ok"))
        r.derive(_peaks())
        return r

    small = row(2**20, 1.0, 0.5)  # slow, but only 6 MB: not judged
    big = row(2**26, 0.14, 0.14)  # 403 MB at 2876 GB/s: 96% of 3000
    v = judge("add", [small, big], copy_gbps=3000.0)
    assert v.met is True
    slow = row(2**26, 0.2, 0.14)
    v = judge("add", [slow], copy_gbps=3000.0)
    assert v.met is False
    assert any("of copy bandwidth <" in line for line in v.lines)
    assert judge("add", [small], copy_gbps=3000.0).met is None


def test_judge_reports_wrong_results():
    rows = _matmul_rows([1.2] * 7)
    rows[0].check.ok = False
    assert judge("matmul", rows).met is False
    assert judge("no_goal_kernel", rows) is None


def _report(rows):
    peaks = _peaks()
    return {"environment": {"device": "NVIDIA H100 80GB HBM3", "torch": "2.11", "triton": "3.6.0", "cuda": "13.0",
                            "date": "2026-11-22T00:00:00+00:00"},
            "dtype": "fp16", "peaks": {"copy_gbps": peaks.copy_gbps, "matmul_tflops": peaks.matmul_tflops,
                                       "matmul_dtype": "fp16", "matmul_shape": [8192, 8192, 8192]},
            "results": [row_dict(r) for r in rows], "targets": [v.__dict__ for v in goal_results(rows, 3000.0)]}


def test_text_table_and_json_round_trip():
    rows = _matmul_rows([1.1, 0.8])
    rows[1].check.note = "reference checked at 64x64x64"
    rows[0].config = "BLOCK_M=128 BLOCK_N=256 BLOCK_K=64 GROUP_M=8 warps=8 stages=3"
    report = json.loads(json.dumps(_report(rows)))
    text = render_text(report, rows)
    assert "NVIDIA H100" in text and "1.100x" in text and "0.800x" in text
    assert "ok*" in text and "MISSED" in text and "BLOCK_M=128" in text
    r0 = report["results"][0]
    assert r0["shape"] == [1024, 1024, 1024]
    assert set(r0["ours"]) >= {"median", "p20", "p80", "cv", "n"}
    assert r0["ratio"] == pytest.approx(1.1)


def test_markdown_table():
    md = markdown(json.loads(json.dumps(_report(_matmul_rows([1.05, 0.97])))))
    lines = md.splitlines()
    assert any(ln.startswith("| kernel | shape |") for ln in lines)
    assert any("| matmul | 1024x1024x1024 | ok |" in ln for ln in lines)
    assert "1.05x" in md and "0.97x" in md
    assert "NVIDIA H100" in md
    assert "| matmul | geomean" in md


def test_perf_table_script(tmp_path):
    src = tmp_path / "bench.json"
    src.write_text(json.dumps(_report(_matmul_rows([1.0]))))
    out = tmp_path / "table.md"
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "perf_table.py"), str(src), "-o", str(out)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "| matmul |" in out.read_text()
    bad = tmp_path / "bad.json"
    bad.write_text("[]")
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "perf_table.py"), str(bad)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert "not a tdebug bench results file" in result.stderr
