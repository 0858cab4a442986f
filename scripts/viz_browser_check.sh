#!/usr/bin/env bash
# Open tdebug viz's HTML page in a real headless browser and check a screenshot of it.
# Installs Debian's chromium first when it is missing (apt-get; needs root or sudo).
# Usage: scripts/viz_browser_check.sh [--keep DIR]   (DIR keeps the pages and screenshots)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then
    echo "viz_browser_check: installing chromium (Debian package)" >&2
    if [ "$(id -u)" = 0 ]; then sudo=""; elif command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
        echo "viz_browser_check: chromium is missing and neither root nor sudo is available" >&2; exit 2
    fi
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core
fi
python="$root/.venv/bin/python"
[ -x "$python" ] || python="python3"
cd "$root"
exec "$python" "$root/scripts/viz_browser_check.py" "$@"
