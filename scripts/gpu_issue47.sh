#!/usr/bin/env bash
# Issue 47 on the GPU machine, in one command: the GPU tests it added (pytest --tdebug on a GPU suite, the interpreter
# pass's host code, jit helpers, fp16 overflow, Liger's 2025 layer norm backward), then Liger-Kernel's own test files
# under plain pytest and under pytest --tdebug (both -n 8), wall times of each.
#   scripts/gpu_issue47.sh OUT LIGER_ROOT [TDEBUG_SECONDS]     (LIGER_ROOT holds Liger's test/ folder)
# Knobs: STEPS (default "gpu_tests plain tdebug"), TDEBUG_FILES (a subset of the files, by stem), TDEBUG_TIMEOUT
# (--tdebug-timeout, default 300: the runs of 2026-11-28 used 120), WORKERS (-n of
# the --tdebug run, default 8), TAG (suffix of its output files: several groups into one OUT), PLAIN_SECONDS.
# A run that reaches its time budget gets SIGINT first, so pytest still prints its summary with each failure's text.
set -uo pipefail
out="$1"; liger="$2"; budget="${3:-300}"; steps="${STEPS:-gpu_tests plain tdebug}"; tag="${TAG:-}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
files=(rms_norm layer_norm cross_entropy swiglu geglu rope softmax group_norm kl_div jsd dyt tvd embedding sparsemax
       fused_add_rms_norm poly_norm)
tests=(); for f in "${files[@]}"; do [ -f "$liger/test/transformers/test_$f.py" ] && tests+=("test/transformers/test_$f.py"); done
{
  date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c 'import sys, torch, triton, numpy; print("python", sys.version.split()[0], "torch", torch.__version__, "triton", triton.__version__, "numpy", numpy.__version__)'
  python3 -c 'import liger_kernel, importlib.metadata as m; print("liger-kernel", m.version("liger-kernel"))'
  echo "liger files: ${tests[*]}"
} > "$out/environment.txt" 2>&1
cd "$root"
[[ " $steps " == *" gpu_tests "* ]] && timeout -s INT -k 20 180 python3 -m pytest -p no:cacheprovider -v -rs tests/gpu/test_gpu_pytest_plugin.py \
  tests/gpu/test_gpu_interpreter_pass.py -k "gpu_suite or host_code or jit_helpers or fp16 or liger_2025" \
  > "$out/gpu_tests.txt" 2>&1
cd "$liger"
[ -f pytest.ini ] || printf '[pytest]\n' > pytest.ini  # Liger's own rootdir, not tdebug's pyproject
plugin=(); python3 -c 'from importlib.metadata import entry_points as e; import sys; sys.exit(not any(x.value.startswith("tdebug") for x in e(group="pytest11")))' || plugin=(-p tdebug.pytest_plugin.plugin)
if [[ " $steps " == *" plain "* ]]; then
  s=$(date +%s.%N)
  timeout -s INT -k 20 "${PLAIN_SECONDS:-200}" python3 -m pytest -p no:cacheprovider -n 8 -v -rfE "${tests[@]}" \
    > "$out/liger_plain.txt" 2>&1
  echo "exit $? wall $(python3 -c "print(round($(date +%s.%N)-$s,1))") s" >> "$out/liger_plain.txt"
fi
[[ " $steps " == *" tdebug "* ]] || exit 0
tfiles=("${tests[@]}")
if [ -n "${TDEBUG_FILES:-}" ]; then tfiles=(); for f in $TDEBUG_FILES; do tfiles+=("test/transformers/test_$f.py"); done; fi
s=$(date +%s.%N)
timeout -s INT -k 20 "$budget" python3 -m pytest -p no:cacheprovider "${plugin[@]}" -n "${WORKERS:-8}" -v -rfE \
  --tdebug --tdebug-timeout "${TDEBUG_TIMEOUT:-300}" --tdebug-json "$out/liger_tdebug$tag.json" "${tfiles[@]}" > "$out/liger_tdebug$tag.txt" 2>&1
echo "exit $? wall $(python3 -c "print(round($(date +%s.%N)-$s,1))") s" >> "$out/liger_tdebug$tag.txt"
