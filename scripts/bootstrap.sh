#!/usr/bin/env bash
# Create a virtualenv and install tdebug in it beside one Triton release. Idempotent: reinstalls only
# when pyproject.toml changed since the last successful install.
#   scripts/bootstrap.sh                    .venv, Triton 3.6.0 (the oldest supported; the H100's)
#   scripts/bootstrap.sh --triton 3.9.0     .venv-3.9.0, Triton 3.9.0 (any of 3.6.0 to 3.9.0)
# Each: the CPU build of torch 2.13.0, the newest numpy, tdebug with its dev, debug (pdb++) and viz (matplotlib)
# extras, and triton-viz (the `triton-viz` extra) where it imports (Triton 3.6 and 3.7).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
default_triton=3.6.0
triton="$default_triton"
venv=.venv
while [ $# -gt 0 ]; do
    case "$1" in
        --triton) triton="${2:?--triton needs a version, e.g. 3.9.0}"; venv=".venv-$triton"; shift 2 ;;
        --triton=*) triton="${1#--triton=}"; venv=".venv-$triton"; shift ;;
        *) echo "bootstrap.sh: unknown argument $1 (usage: scripts/bootstrap.sh [--triton VERSION])" >&2; exit 2 ;;
    esac
done
case "$triton" in
    3.6.*|3.7.*) extras="dev,debug,viz,triton-viz" ;;
    3.8.*|3.9.*) extras="dev,debug,viz" ;;
    *) echo "bootstrap.sh: tdebug supports Triton 3.6.0 to 3.9.0, not $triton" >&2; exit 2 ;;
esac
py="${PYTHON:-python3}"
if [ ! -x "$venv/bin/python" ]; then
    "$py" -m venv "$venv"
fi
stamp="$venv/.tdebug-installed"
want="$(cat pyproject.toml scripts/bootstrap.sh | sha256sum | cut -d' ' -f1) triton $triton"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    echo "bootstrap: $venv with Triton $triton (first time: a few minutes)" >&2
    "$venv/bin/python" -m pip install -q --upgrade pip
    # torch and Triton first, pinned (torch: the CPU build that resolves offline); then the project,
    # whose ranges they satisfy, so pip leaves them in place.
    "$venv/bin/python" -m pip install -q "torch==2.13.0" "triton==$triton"
    "$venv/bin/python" -m pip install -q -e ".[$extras]"
    got="$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("triton"))')"
    if [ "$got" != "$triton" ]; then
        echo "bootstrap.sh: installing tdebug moved Triton from $triton to $got" >&2
        exit 1
    fi
    echo "$want" > "$stamp"
fi
