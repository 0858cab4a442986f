"""A script that runs `tdebug run loop_forever.py` itself (tdebug inside tdebug), passing its output through."""

import subprocess
import sys
from pathlib import Path

loop = Path(__file__).with_name("loop_forever.py")
subprocess.run([sys.executable, "-m", "tdebug", "run", str(loop), "--timeout", "600"])
