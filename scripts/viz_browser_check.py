#!/usr/bin/env python3
"""Render tdebug viz's HTML page in headless Chromium and check the screenshots (run by viz_browser_check.sh).

Two pages of a tiled 2-D copy on 129x127 (tests/cpu/data/viz_copy2d.py): without masks, and fixed.
- the title is drawn (dark text in the top band), and the status line in dark red / dark green;
- the nomask page shows the out-of-bounds red, in a band below the tensor's green "accessed" area;
  the fixed page shows no red at all;
- with #hover=KEY,PANEL,X,Y the page's own mousemove handler runs for one element (a synthetic event,
  since a headless screenshot cannot move a mouse): the tooltip names the element x_ptr[140, 5] as
  outside the tensor, and its pale yellow box is in the screenshot.
Exit status 0 when every check passes.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from PIL import Image

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tdebug.viz import palette  # noqa: E402

WINDOW = (1400, 1000)
RED = palette.CATEGORY_RGB[palette.OOB]
GREEN = palette.CATEGORY_RGB[palette.OK]
STATUS_BAD, STATUS_OK, TIP = (150, 0, 0), (27, 94, 32), (255, 255, 240)


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    raise SystemExit("viz_browser_check: no chromium found (scripts/viz_browser_check.sh installs it)")


def browser(args: list[str], profile: Path) -> subprocess.CompletedProcess:
    cmd = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
           f"--user-data-dir={profile}", f"--window-size={WINDOW[0]},{WINDOW[1]}", "--virtual-time-budget=5000",
           *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def screenshot(url: str, png: Path, work: Path) -> np.ndarray:
    browser([f"--screenshot={png}", url], Path(tempfile.mkdtemp(dir=work)))
    if not png.is_file():
        raise SystemExit(f"viz_browser_check: chromium wrote no screenshot of {url}")
    return np.asarray(Image.open(png).convert("RGB")).astype(int)


def near(img: np.ndarray, rgb, tol: int = 10) -> np.ndarray:
    return (np.abs(img - np.array(rgb)) <= tol).all(axis=-1)


def viz(variant: str, out: Path) -> Path:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-m", "tdebug", "viz", "tests/cpu/data/viz_copy2d.py", "--variant", variant,
                        "--out", str(out)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise SystemExit(f"tdebug viz failed:\n{r.stderr}")
    return out / "viz.html"


class Checks:
    def __init__(self) -> None:
        self.failed = 0

    def __call__(self, ok: bool, what: str) -> None:
        print(f"{'ok  ' if ok else 'FAIL'} {what}")
        self.failed += not ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, default=None, help="keep pages and screenshots in this directory")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="viz-browser-"))
    work.mkdir(parents=True, exist_ok=True)
    check = Checks()
    pages = {v: viz(v, work / v) for v in ("nomask", "fixed")}
    shots = {v: screenshot(p.as_uri(), work / f"{v}.png", work) for v, p in pages.items()}
    for variant, img in shots.items():
        top = img[:60]
        check(int((top.sum(axis=-1) < 150).sum()) > 300, f"{variant}: the title is drawn (dark text in the top band)")
        status = STATUS_BAD if variant == "nomask" else STATUS_OK
        check(int(near(img, status, 40).sum()) > 100, f"{variant}: the status line is drawn in {status}")
        check(int(near(img, GREEN).sum()) > 5000, f"{variant}: the heatmap is drawn (accessed cells, {GREEN})")
    red = near(shots["nomask"], RED)
    check(int(red.sum()) > 2000, f"nomask: out-of-bounds red in the screenshot ({int(red.sum())} pixels)")
    check(int(near(shots["fixed"], RED, 30).sum()) == 0, "fixed: no out-of-bounds red anywhere")
    # Rows where the heatmaps are (wide runs of a colour; legend swatches are 12 px wide).
    green_rows = np.nonzero(near(shots["nomask"], GREEN).sum(axis=1) > 100)[0]
    red_rows = np.nonzero(red.sum(axis=1) > 100)[0]
    breaks = np.nonzero(np.diff(green_rows) > 1)[0]
    first = green_rows[:breaks[0] + 1] if breaks.size else green_rows  # the first tensor's accessed area
    band = red_rows[(red_rows > first.min()) & (red_rows < first.max() + 200)]
    check(band.size > 20 and bool((band >= first.max() - 1).all()),
          "nomask: the red band lies right below the tensor's accessed area (the margin)")
    hover = pages["nomask"].as_uri() + "#hover=l1t0,0,5,140"
    dom = browser(["--dump-dom", hover], Path(tempfile.mkdtemp(dir=work))).stdout
    tip = re.search(r'<div id="tip"[^>]*>(.*?)</div>', dom, re.S)
    text = re.sub(r"<[^>]+>", " ", tip[1]) if tip else ""
    check("x_ptr[140, 5]" in text and "outside" in text and "out-of-bounds access" in text,
          f"hover: the tooltip names the element ({' '.join(text.split())[:100]!r})")
    hovered = screenshot(hover, work / "nomask_hover.png", work)
    check(int(near(hovered, TIP, 3).sum()) > 2000, "hover: the tooltip box is in the screenshot")
    print(f"pages and screenshots in {work}" if args.keep else "")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    print("viz_browser_check: " + ("all checks passed" if not check.failed else f"{check.failed} checks FAILED"))
    return 1 if check.failed else 0


if __name__ == "__main__":
    sys.exit(main())
