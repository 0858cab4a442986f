"""scripts/bench_engine.py runs every workload in every mode (--quick sizes) and writes a JSON and a Markdown
table that name them all; the serial mode's outputs match the float64 references."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import bench_engine  # noqa: E402


def test_quick_bench_has_every_workload_and_every_mode(tmp_path):
    out = tmp_path / "bench"
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "bench_engine.py"), "--quick", "--repeats", "1",
                           "--out", str(out)], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads(Path(f"{out}.json").read_text())
    assert [row["workload"] for row in report["summary"]] == bench_engine.WORKLOADS
    seen = {(r["workload"], r["mode"]) for r in report["records"] if "launch_cpu" in r}
    assert seen == {(w, m) for w in bench_engine.WORKLOADS for m in bench_engine.MODES}
    for row in report["summary"]:
        serial = row["modes"]["serial"]
        assert serial["ok"], f"{row['workload']}: sanitize's output is off its float64 reference"
        assert serial["findings"] == [0], f"{row['workload']}: a correct kernel got findings"
        assert serial["launch_cpu"]["median"] > 0 and serial["cmd_cpu"]["median"] > serial["launch_cpu"]["median"]
        assert row["modes"]["batched"]["same_output_as_serial"]
        floor = row["modes"]["torch"]  # the same computation in torch, one thread: right, timed, under tdebug
        assert floor["ok"], f"{row['workload']}: the torch floor is off its float64 reference"
        assert floor["launch_cpu"]["median"] > 0
        assert row["modes"]["batched"]["over_torch"] == pytest.approx(
            row["modes"]["batched"]["launch_cpu"]["median"] / floor["launch_cpu"]["median"])
    assert {r["threads"] for r in report["records"] if r["mode"] == "torch"} == {1}
    table = Path(f"{out}.md").read_text()
    assert all(f"| {w} |" in table for w in bench_engine.WORKLOADS)
    assert "| torch launch | serial / torch | batched / torch |" in table


def test_unknown_workload_is_a_usage_error(tmp_path):
    assert bench_engine.main(["--workloads", "nope", "--out", str(tmp_path / "x")]) == 2
    assert not (tmp_path / "x.json").exists()
