#!/usr/bin/env bash
# The main job on a fresh CPU-only clone: set up, then run the matmul kernel under the CPU interpreter
# on a ragged shape against its float64 reference, then sanitize a seeded bug (the sanitizer finds
# its out-of-bounds accesses where the plain interpreter would segfault or read garbage).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/bootstrap.sh"
cd "$root"
tdebug=.venv/bin/tdebug
echo "== tdebug run kernels/matmul.py --mode interpret --shape 129x127x65"
$tdebug run kernels/matmul.py --mode interpret --shape 129x127x65
echo
echo "== tdebug sanitize bugs/04_gelu_missing_masks.py --shape 129x127 (a seeded bug: findings expected)"
if $tdebug sanitize bugs/04_gelu_missing_masks.py --shape 129x127 --device cpu --max-findings 3; then
    echo "demo: the sanitizer missed the seeded bug" >&2
    exit 1
fi
echo
echo "demo: done (the kernel passed; the bug was found)"
