#!/usr/bin/env bash
# Issues 27 and 28.2 on a GPU machine: the interpreter pass's GPU tests (tests/gpu/test_gpu_interpreter_pass.py)
# and the Liger-Kernel bf16 comparison (scripts/gpu_liger_bf16.py), at once; everything written into OUTDIR.
# Usage (from the project root, liger-kernel 0.8.5 importable): scripts/gpu_issue27.sh OUTDIR [PYTEST ARGS]
set -u
out=${1:?usage: scripts/gpu_issue27.sh OUTDIR [PYTEST ARGS]}
shift
mkdir -p "$out"
export PYTHONUNBUFFERED=1
{ nvidia-smi -L; python3 -c "import torch, triton, numpy; print('torch', torch.__version__, 'triton', triton.__version__, 'numpy', numpy.__version__)"; command -v compute-sanitizer; } > "$out/environment.txt" 2>&1
python3 scripts/gpu_liger_bf16.py --out "$out" > "$out/liger-bf16.log" 2>&1 &
bf16=$!
python3 -m pytest -p no:cacheprovider -q -rA -n 6 "${@:-tests/gpu/test_gpu_interpreter_pass.py}" > "$out/pytest-interpreter-pass.txt" 2>&1
echo "pytest exit $?" >> "$out/pytest-interpreter-pass.txt"
wait $bf16
echo "gpu_liger_bf16 exit $?" >> "$out/liger-bf16.log"
