#!/usr/bin/env bash
# The test suite on the CPU (GPU tests skip cleanly without CUDA). Sets everything up first.
#   scripts/test.sh [--triton VERSION] [PYTEST ARGS...]
# Without --triton: .venv with Triton 3.6.0; with it: .venv-VERSION with that Triton (3.6.0 to 3.9.0).
# The tests are spread over TDEBUG_TEST_WORKERS pytest-xdist workers (default 2: this project's 2-core machines;
# 0 runs them in one process). The suite takes about 14 minutes on 2 cores, 23 in one process.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv=.venv
pick=()
if [ "${1:-}" = "--triton" ]; then
    venv=".venv-${2:?--triton needs a version, e.g. 3.9.0}"
    pick=(--triton "$2")
    shift 2
fi
"$root/scripts/bootstrap.sh" "${pick[@]}"
cd "$root"
"$venv/bin/python" -c 'import sys, numpy, torch, triton; print(f"tdebug tests: Triton {triton.__version__}, torch {torch.__version__}, numpy {numpy.__version__}, Python {sys.version.split()[0]} ({sys.argv[1]})")' "$venv"
"$venv/bin/ruff" check tdebug kernels bugs tests scripts
"$venv/bin/python" -m pytest -q -p no:cacheprovider -n "${TDEBUG_TEST_WORKERS:-2}" "$@"
