#!/usr/bin/env bash
# The whole benchmark on the H100, in one command: every kernels/*.py with bench_shapes, each checked
# against its float64 reference and then timed next to its PyTorch baseline. Writes
#   results/bench-h100.json  every statistic, the device, versions and date (tdebug bench --json)
#   results/bench-h100.md    the Markdown table for the README (scripts/perf_table.py)
# Extra arguments go to tdebug bench (e.g. --rep-ms 800). Exit code: tdebug bench's (1: a check failed).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
export PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
py="${PYTHON:-python3}"
if [ -z "${PYTHON:-}" ] && [ -x .venv/bin/python ]; then
    py=.venv/bin/python
fi
mkdir -p results
"$py" -m tdebug bench --all --json results/bench-h100.json "$@"
status=$?
if [ -f results/bench-h100.json ]; then
    "$py" scripts/perf_table.py results/bench-h100.json -o results/bench-h100.md || status=$?
    echo "wrote results/bench-h100.json and results/bench-h100.md" >&2
fi
exit "$status"
