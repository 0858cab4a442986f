"""tdebug's overflow check reports signed overflow only: unsigned arithmetic wraps by definition (a packed-key
scan as in Liger-Kernel's MoE kernel), tests/cpu/data/unsigned_wrap.py."""

from __future__ import annotations

from pathlib import Path

from tdebug.sanitize import sanitize_file

SCRIPT = Path(__file__).parent / "data" / "unsigned_wrap.py"


def test_unsigned_wraparound_is_clean_and_computes_the_modular_result():
    result = sanitize_file(SCRIPT, kind="script", argv=["unsigned"], timeout=300)
    (case,) = result.cases
    assert case.status == "pass", [f.message for f in case.findings] + [case.error]


def test_signed_overflow_is_still_found():
    result = sanitize_file(SCRIPT, kind="script", argv=["signed"], timeout=300)
    (case,) = result.cases
    (finding,) = [f for f in case.findings if f.check == "overflow"]
    assert "overflow detected for operation add" in finding.message
    assert "x + x" in SCRIPT.read_text().splitlines()[finding.line - 1]
