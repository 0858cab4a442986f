#!/usr/bin/env bash
# Create .venv and install tdebug with its pinned dependencies. Idempotent: reinstalls only when
# pyproject.toml changed since the last successful install.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
py="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$py" -m venv .venv
fi
stamp=.venv/.tdebug-installed
want="$(sha256sum pyproject.toml | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    .venv/bin/python -m pip install -q --upgrade pip
    # torch first, pinned to the CPU build that resolves offline; then the project.
    .venv/bin/python -m pip install -q "torch==2.13.0" || .venv/bin/python -m pip install -q "torch>=2.10,<=2.13.0"
    .venv/bin/python -m pip install -q -e ".[dev]"
    echo "$want" > "$stamp"
fi
