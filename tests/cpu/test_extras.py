"""pdb++ and matplotlib are extras: a CI image that only sanitizes installs neither, `tdebug viz` without
matplotlib says in one line how to install it (exit 3), `--break` without pdb++ stops in Python's pdb, and
the development venv (scripts/bootstrap.sh) still installs both."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _project() -> dict:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _names(requirements: list[str]) -> set[str]:
    return {re.split(r"[<>=!~\[; ]", r, maxsplit=1)[0].lower() for r in requirements}


def test_pdbpp_and_matplotlib_are_extras_that_the_dev_venv_installs():
    project = _project()
    core = _names(project["dependencies"])
    assert {"torch", "triton", "numpy", "click"} <= core
    assert not core & {"pdbpp", "matplotlib"}, core
    extras = project["optional-dependencies"]
    assert "pdbpp" in _names(extras["debug"]) and "matplotlib" in _names(extras["viz"])
    bootstrap = (ROOT / "scripts" / "bootstrap.sh").read_text()
    for line in re.findall(r'extras="([^"]+)"', bootstrap):
        assert {"dev", "debug", "viz"} <= set(line.split(",")), line


EXTRAS = ("pdbpp", "fancycompleter", "matplotlib", "PIL")  # what the debug and viz extras bring


def _tdebug(args: list[str], tmp_path: Path, blocked: tuple[str, ...] = (), extra_env: dict | None = None,
            stdin: str = ""):
    """Run the CLI in a fresh process; `blocked`: modules it and its children cannot import (as if not installed)."""
    paths = [str(ROOT)]
    if blocked:
        site = tmp_path / "site"
        site.mkdir()
        (site / "sitecustomize.py").write_text(f"import sys\nfor m in {blocked!r}:\n    sys.modules[m] = None\n")
        paths.insert(0, str(site))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths), **(extra_env or {})}
    return subprocess.run([sys.executable, "-m", "tdebug", *args], cwd=tmp_path, env=env, input=stdin,
                          capture_output=True, text=True, timeout=300)


def test_viz_without_matplotlib_says_how_to_install_it(tmp_path):
    p = _tdebug(["viz", str(ROOT / "kernels" / "add.py"), "--out", str(tmp_path / "viz")], tmp_path,
                blocked=("matplotlib",))
    assert p.returncode == 3, p.stdout + p.stderr
    lines = p.stderr.strip().splitlines()
    assert lines and "matplotlib" in lines[-1] and "pip install" in lines[-1], p.stderr
    assert "Traceback" not in p.stderr
    assert not (tmp_path / "viz").exists()  # said before any work


def test_break_without_pdbpp_stops_in_pythons_pdb(tmp_path):
    p = _tdebug(["run", str(ROOT / "kernels" / "add.py"), "--mode", "interpret", "--break", "--pid", "1"],
                tmp_path, blocked=EXTRAS, extra_env={"PDBPP_HIJACK_PDB": "0"}, stdin="p pid\nc\n" * 3)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-3000:]
    assert re.search(r"breakpoint at add\.py:\d+", out) and "(Pdb)" in out and "(Pdb++)" not in out, out[-3000:]
    assert "Traceback" not in out


def test_the_demos_sanitize_needs_neither_extra(tmp_path):
    """scripts/demo.sh's second command (its first, `run`, is the test above without --break)."""
    p = _tdebug(["sanitize", str(ROOT / "bugs" / "04_gelu_missing_masks.py"), "--shape", "129x127", "--device", "cpu",
                 "--max-findings", "3"], tmp_path, blocked=EXTRAS, extra_env={"PDBPP_HIJACK_PDB": "0"})
    out = p.stdout + p.stderr
    assert p.returncode == 1 and "bounds" in out and "Traceback" not in out, out[-3000:]
