#!/usr/bin/env bash
# The GPU tests, on a machine with CUDA and compute-sanitizer (the H100): one command.
#   scripts/gpu_tests.sh [OUT_DIR]          (default tests/gpu/results)
# 1. pytest -m gpu (compute-sanitizer memcheck/initcheck, debug mode, guard bands) -> OUT_DIR/pytest.txt
# 2. the detection matrix over bugs/ and kernels/ with each tool's wall time vs the plain run
#    -> OUT_DIR/matrix.json, OUT_DIR/matrix.md
# 3. with CAPTURE=1: fresh compute-sanitizer / TRITON_DEBUG logs for the parser tests
#    -> tests/fixtures/compute_sanitizer/
# Runs from the checkout (PYTHONPATH), nothing installed. Exit status: pytest's, or the matrix's if that failed.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
out="${1:-tests/gpu/results}"
mkdir -p "$out"
py="${PYTHON:-python3}"
export PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
{
    echo "# $(date -u +%FT%TZ) $(hostname)"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 || true
    "$py" -c 'import sys, torch, triton; print("python", sys.version.split()[0], "torch", torch.__version__, "triton", triton.__version__)'
    "$py" -c 'from tdebug.sanitize.compute_sanitizer import find_compute_sanitizer as f; import subprocess; p = f(); print(p); p and subprocess.run([p, "--version"])'
} 2>&1 | tee "$out/environment.txt"
"$py" -m pytest tests/gpu -m gpu -v -p no:cacheprovider -rs 2>&1 | tee "$out/pytest.txt"
status=${PIPESTATUS[0]}
if [ "${CAPTURE:-0}" = 1 ]; then
    "$py" tests/gpu/capture_fixtures.py tests/fixtures/compute_sanitizer 2>&1 | tee "$out/capture.txt"
fi
if [ "${MATRIX:-1}" = 1 ]; then
    "$py" tests/gpu/matrix.py --out "$out" --jobs "${JOBS:-4}" 2>&1 | tee "$out/matrix.txt"
    m=${PIPESTATUS[0]}
    [ "$status" = 0 ] && status=$m
fi
exit "$status"
