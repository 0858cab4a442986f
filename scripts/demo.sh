#!/usr/bin/env bash
# The main job on a fresh CPU-only clone: set up, then run the matmul kernel under the CPU interpreter
# on a ragged shape and check it against its float64 reference, then sanitize a seeded bug.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/bootstrap.sh"
cd "$root"
.venv/bin/tdebug run kernels/matmul.py --mode interpret --shape 129x127x65
