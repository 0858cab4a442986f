"""Start-up: the CLI's parent process runs a whole `tdebug sanitize` without importing torch, numpy or Triton
(only the child that runs the script pays for them)."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(__file__).parent / "data" / "one_launch.py"

PARENT = """
import json, sys
from click.testing import CliRunner
from tdebug.cli import cli
result = CliRunner().invoke(cli, ["sanitize", "--device", "cpu", "--seed", "1", sys.argv[1]])
heavy = sorted(m for m in ("torch", "numpy", "triton") if m in sys.modules)
print(json.dumps({"exit": result.exit_code, "output": result.output, "heavy": heavy}))
"""


def test_sanitize_parent_imports_no_torch_numpy_or_triton():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("TRITON_INTERPRET", None)
    proc = subprocess.run([sys.executable, "-c", PARENT, str(SCRIPT)], capture_output=True, text=True, cwd=ROOT,
                          env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["exit"] == 0 and "clean" in report["output"], report["output"]
    assert report["heavy"] == [], f"the CLI's parent imported {report['heavy']}"
