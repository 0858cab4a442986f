#!/usr/bin/env bash
# What works on which Triton: for each version (default: 3.6.0 3.7.1 3.8.0 3.9.0), in its own venv
# (.venv for 3.6.0, .venv-VERSION otherwise; scripts/bootstrap.sh), on the CPU:
#   install   pip install -e . beside that Triton leaves it in place (bootstrap checks it)
#   tests     the default test suite (scripts/test.sh's pytest run)
#   sanitize  tdebug bugs matrix --detector sanitize: every seeded bug the matrix expects is found,
#             no kernel of kernels/ is flagged
#   viz       tdebug viz draws a seeded bug's heatmaps (PNG per tensor + viz.html)
#   symbolic  tdebug sanitize --engine symbolic (triton-viz): runs, or says in one line (exit 2) it cannot
# Writes results/versions/VERSION.log (every command's output; not kept in git) and results/versions/summary.md (the table
# the README's "Supported Triton versions" cites). Slow: ~10-15 minutes per version on 2 cores.
#   scripts/versions_report.sh [VERSION...]     (TDEBUG_VERSIONS_OUT=DIR: write there instead;
#                                                TDEBUG_VERSIONS_TESTS=0: every step but the test suite)
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=(3.6.0 3.7.1 3.8.0 3.9.0)
out="${TDEBUG_VERSIONS_OUT:-results/versions}"
mkdir -p "$out"
summary="$out/summary.md"
[ -f "$summary" ] || printf '| Triton | install | tests | sanitize matrix | viz | symbolic / --serve | numpy | date |\n|---|---|---|---|---|---|---|---|\n' > "$summary"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

verdict() {  # exit code -> a word for the table
    case "$1" in 0) echo "pass" ;; *) echo "FAIL (exit $1)" ;; esac
}

for v in "${versions[@]}"; do
    log="$out/$v.log"
    if [ "$v" = 3.6.0 ]; then venv=.venv; pick=(); else venv=".venv-$v"; pick=(--triton "$v"); fi
    echo "== Triton $v ($venv) $(date -u +%FT%TZ)" | tee "$log"
    scripts/bootstrap.sh "${pick[@]}" >> "$log" 2>&1
    install=$?
    if [ "$install" != 0 ]; then
        echo "| $v | FAIL (exit $install) | | | | | | $(date -u +%F) |" >> "$summary"
        continue
    fi
    py="$venv/bin/python"
    numpy="$("$py" -c 'import numpy; print(numpy.__version__)')"
    tests="not run (TDEBUG_VERSIONS_TESTS=0)"
    if [ "${TDEBUG_VERSIONS_TESTS:-1}" != 0 ]; then
        echo "== tests" >> "$log"
        started=$(date +%s)
        "$py" -m pytest -q -p no:cacheprovider >> "$log" 2>&1
        tests_rc=$?
        tests_line="$(grep -E '^[0-9]+ (passed|failed)' "$log" | tail -1)"
        tests="$(verdict $tests_rc): ${tests_line:-no summary} ($(( $(date +%s) - started )) s)"
    fi
    echo "== sanitize matrix" >> "$log"
    "$py" -m tdebug bugs matrix --detector sanitize --no-markdown >> "$log" 2>&1
    sanitize="$(verdict $?)"
    echo "== viz" >> "$log"
    "$py" -m tdebug viz bugs/04_gelu_missing_masks.py --shape 129x127 --out "$work/viz-$v" >> "$log" 2>&1
    viz_rc=$?
    pngs=$(ls "$work/viz-$v"/*.png 2>/dev/null | wc -l)
    if [ "$viz_rc" = 0 ] && [ "$pngs" -gt 0 ] && [ -s "$work/viz-$v/viz.html" ]; then viz="pass ($pngs PNGs + HTML)"; else viz="FAIL (exit $viz_rc)"; fi
    echo "== symbolic" >> "$log"
    "$py" -m tdebug sanitize bugs/04_gelu_missing_masks.py --shape 129x127 --device cpu --engine symbolic \
        >> "$log" 2>&1
    case $? in
        1) symbolic="works (bug found)" ;;
        2) symbolic="unavailable, says so (exit 2)" ;;
        *) symbolic="FAIL" ;;
    esac
    echo "| $v | pass (Triton stays $v) | $tests | $sanitize | $viz | $symbolic | $numpy | $(date -u +%F) |" | tee -a "$summary"
done
