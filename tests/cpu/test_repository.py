"""The repository holds the product, not its diary: results/ keeps one current table per benchmark (under 30
files, none named after a round), README.md is a manual under 300 lines with no round history, and every
results/ file it cites exists."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def _results_files() -> list[str]:
    """results/'s files as git tracks them (what a commit would carry); the folder itself outside a checkout."""
    try:
        out = subprocess.run(["git", "ls-files", "results"], cwd=ROOT, capture_output=True, text=True, timeout=30)
    except OSError:
        out = None
    if out is not None and out.returncode == 0 and out.stdout.strip():
        return out.stdout.split()
    return [str(p.relative_to(ROOT)) for p in (ROOT / "results").rglob("*") if p.is_file()]


def test_results_hold_one_current_table_per_benchmark():
    files = _results_files()
    assert "results/README.md" in files and "results/bench-engine.md" in files, files
    assert len(files) < 30, f"{len(files)} files in results/: keep the newest table of each benchmark"
    by_round = [f for f in files if re.search(r"round|-before|-run\d", f, re.I)]
    assert not by_round, f"a result is named after what it measures, not when: {by_round}"


def test_readme_is_a_manual_under_300_lines():
    lines = README.splitlines()
    assert len(lines) < 300, f"README.md has {len(lines)} lines"
    history = [line for line in lines if re.search(r"\b(this|last|next) round\b|\bround \d+\b|\bwas \d", line, re.I)]
    assert not history, f"round history belongs in CHANGELOG.md: {history}"
    assert (ROOT / "CHANGELOG.md").exists()


def test_every_results_file_the_readme_cites_exists():
    cited = set(re.findall(r"results/[\w./-]+\.\w+", README))
    assert cited, "the README cites no measurement"
    missing = sorted(c for c in cited if not (ROOT / c).exists())
    assert not missing, missing
