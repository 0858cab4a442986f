#!/usr/bin/env bash
# The test suite on the CPU (GPU tests skip cleanly without CUDA). Sets everything up first.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/bootstrap.sh"
cd "$root"
.venv/bin/ruff check tdebug kernels bugs tests scripts
.venv/bin/python -m pytest -q -p no:cacheprovider "$@"
