"""The whole catalogue of correct kernels: clean under the reference check and the interpreter sanitizer.

The quick case matrix runs here (CI); the full matrix is `tdebug check --all` / `tdebug sanitize --full`
(scripts/bench_check.py measures both).
"""

from pathlib import Path

import pytest

from tdebug.catalogue.files import kernel_files
from tdebug.check.against_reference import check_file
from tdebug.sanitize import sanitize_file

ROOT = Path(__file__).resolve().parents[2]
KERNELS = kernel_files(ROOT)


def test_the_catalogue_has_the_kernels_the_issue_asks_for():
    names = {p.stem for p in KERNELS}
    assert {"add", "gelu", "softmax", "layernorm", "matmul", "matmul_bias_relu", "attention", "embedding"} <= names


@pytest.mark.parametrize("path", KERNELS, ids=[p.stem for p in KERNELS])
def test_kernel_passes_check_and_is_clean_under_the_sanitizer(path):
    checked = check_file(path, quick=True)
    assert not checked.fatal, checked.fatal
    assert not checked.lint, [f.message for f in checked.lint]
    failed = [(c.label, c.status, c.error, [f.message for f in c.findings]) for c in checked.cases if not c.ok]
    assert checked.cases and not failed, failed
    sanitized = sanitize_file(path, quick=True)
    findings = [(c.label, f.check, f.message) for c in sanitized.cases for f in c.findings]
    assert not findings, findings[:5]
    assert all(c.status == "pass" for c in sanitized.cases)
