"""tdebug bench on a CUDA GPU: the timer against a known duration, and the command end to end."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]


def test_timer_measures_gpu_time_not_launch_overhead():
    from tdebug.bench.timing import Timer

    timer = Timer(warmup_ms=5, rep_ms=50)
    cycles = int(100 * timer._cycles_per_us)  # a 100 us spin
    stats = timer.time(lambda: torch.cuda._sleep(cycles))
    assert stats.median == pytest.approx(0.1, rel=0.15)
    assert stats.p20 <= stats.median <= stats.p80
    assert stats.n >= 25 and stats.host_us is not None

    def slow_host():  # 300 us of host work before a tiny launch: must not show up in the GPU time
        import time

        t = time.perf_counter()
        while time.perf_counter() - t < 300e-6:
            pass
        torch.cuda._sleep(cycles)

    slow = timer.time(slow_host)
    assert slow.median == pytest.approx(0.1, rel=0.2)
    assert slow.host_us >= 300


def test_peaks_are_plausible():
    from tdebug.bench.timing import Timer, measure_peaks

    peaks = measure_peaks(Timer(warmup_ms=5, rep_ms=30))
    assert 100 < peaks.copy_gbps < 20000
    assert 10 < peaks.matmul_tflops < 5000


def test_bench_command_writes_json(tmp_path):
    from click.testing import CliRunner

    from tdebug.cli import cli

    out = tmp_path / "bench.json"
    result = CliRunner().invoke(cli, ["bench", "add", "matmul", "--shape", "1048576", "--shape", "512x512x512",
                                      "--rep-ms", "20", "--warmup-ms", "5", "--json", str(out)])
    # add takes one dimension, matmul three: a --shape that fits one kernel only is a usage error
    assert result.exit_code == 2
    result = CliRunner().invoke(cli, ["bench", "matmul", "--shape", "512x512x512", "--shape", "1000x700x300",
                                      "--rep-ms", "20", "--warmup-ms", "5", "--json", str(out)])
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert report["environment"]["device"]
    assert report["peaks"]["copy_gbps"] > 0
    rows = report["results"]
    assert [r["shape"] for r in rows] == [[512, 512, 512], [1000, 700, 300]]
    for r in rows:
        assert r["check"]["ok"], r["check"]["summary"]
        assert r["ours"]["median"] > 0 and r["baseline"]["median"] > 0
        assert r["ratio"] > 0 and r["tflops"] > 0
        assert r["config"]
    assert "matmul" in result.output and "base/ours" in result.output
