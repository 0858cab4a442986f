"""Liger-Kernel's rms_norm forward + backward on small fp32 CUDA tensors (liger_op.py rms_norm), as one script."""

import runpy
import sys
from pathlib import Path

sys.argv = [str(Path(__file__).with_name("liger_op.py")), "rms_norm"]
runpy.run_path(sys.argv[0], run_name="__main__")
