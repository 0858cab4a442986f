"""One PNG per tensor argument of a launch: loads, stores, which program, and what is wrong.

Each panel is an RGB image built here (not by a colour map lookup in matplotlib) so that the
warning colours of palette.CATEGORY_RGB appear exactly, and only where there is a problem: a test can
look for them in the pixels. The tensor's outline is drawn in black; outside it is the margin.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..runtime.files import atomic_file
from . import palette
from .model import LaunchMap, TensorMap, mosaic, mosaic_shape

PANELS = ("problems", "programs", "loads", "stores")  # reading order: what is wrong first
DPI = 100


@dataclass
class Drawn:
    path: Path
    boxes: dict[str, tuple[int, int, int, int]]  # panel -> (left, top, right, bottom) in image pixels
    tensor: TensorMap


def count_rgb(counts: np.ndarray, background: np.ndarray, cmap: str, vmax: int) -> np.ndarray:
    """Cells with a count get the colour map's colour (light for 1, dark for vmax); others the background."""
    table = palette.lut(cmap)
    lo = 64  # skip the near-white start of sequential maps so a count of 1 is visible
    scale = np.clip((counts.astype(np.float64) - 1) / max(1, vmax - 1), 0, 1) if vmax > 1 else np.zeros(counts.shape)
    rgb = table[(lo + scale * (255 - lo)).astype(int)]
    return np.where((counts > 0)[..., None], rgb, background)


def background(t: TensorMap) -> np.ndarray:
    inside = t.arrays["inside"].astype(bool)
    bg = np.empty(inside.shape + (3,), dtype=np.uint8)
    bg[:] = palette.MARGIN_RGB
    bg[inside] = palette.CATEGORY_RGB[palette.UNTOUCHED]
    return bg


def program_rgb(t: TensorMap, n_programs: int, bg: np.ndarray) -> np.ndarray:
    a = t.arrays
    colors = palette.pid_colors(n_programs)
    pid = np.where(a["stores"] > 0, a["store_pid"], np.where(a["loads"] > 0, a["load_pid"], -1))
    rgb = colors[np.clip(pid, 0, len(colors) - 1)]
    return np.where((pid >= 0)[..., None], rgb, bg)


def problems_rgb(t: TensorMap) -> np.ndarray:
    table = np.array([palette.CATEGORY_RGB[k] for k in sorted(palette.CATEGORY_RGB)], dtype=np.uint8)
    return table[t.categories()]


def panel_images(t: TensorMap, n_programs: int) -> dict[str, np.ndarray]:
    """The four panels as (slices, height, width, 3) uint8 images."""
    a = t.arrays
    bg = background(t)
    vmax_load = int(a["loads"].max()) if a["loads"].size else 0
    vmax_store = int(a["stores"].max()) if a["stores"].size else 0
    return {
        "loads": count_rgb(a["loads"], bg, palette.LOAD_CMAP, vmax_load),
        "stores": count_rgb(a["stores"], bg, palette.STORE_CMAP, vmax_store),
        "programs": program_rgb(t, n_programs, bg),
        "problems": problems_rgb(t),
    }


def title_lines(launch: LaunchMap, t: TensorMap) -> tuple[str, str, str]:
    shape = "x".join(map(str, t.shape)) or "scalar"
    head = f"{launch.kernel} · {t.name}: {shape} {t.dtype}"
    bits = [f"launch {launch.index}", launch.grid_text]
    if launch.config:
        bits.append(launch.config)
    if launch.pid is not None:
        bits.append(f"program {launch.pid_text(launch.pid_linear)} only")
    bits.append(f"strides {tuple(t.strides)}")
    if t.geometry.kind == "1d":
        bits.append(f"1-D, wrapped into rows of {t.geometry.cols}")
    shown = t.arrays["loads"].shape[0] if "loads" in t.arrays else 0
    if t.geometry.n_slices > shown:
        bits.append(f"the first {shown} of {t.geometry.n_slices} slices")
    problems = t.problems()
    if launch.error:
        problems.insert(0, f"the launch raised {launch.error[:80]}")
    status = "; ".join(problems) if problems else "no out-of-bounds access, no unwritten or doubly written element"
    return head, " · ".join(bits), status


def _layout(height: int, width: int) -> tuple[float, float, float, float]:
    """(panel width, panel height, figure width, figure height) in inches."""
    aspect = height / max(1, width)
    panel_w, panel_h = 4.6, 4.6 * aspect
    if panel_h > 6.5:
        panel_w, panel_h = max(1.6, 6.5 / aspect), 6.5
    panel_h = max(panel_h, 1.0)
    return panel_w, panel_h, LEFT + 2 * (panel_w + SIDE) + 0.2, TOP + 2 * (panel_h + ROW_GAP) + 0.1


LEFT, SIDE, TOP, ROW_GAP = 0.75, 2.7, 1.35, 0.85  # inches: left margin, legend column, header, per-row extra


def draw_tensor(launch: LaunchMap, t: TensorMap, path: Path) -> Drawn:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    g = t.geometry
    n = t.arrays["loads"].shape[0]
    _, _, height, width = mosaic_shape(g, n)
    images = {k: mosaic(v, g, 255) for k, v in panel_images(t, launch.n_programs).items()}
    panel_w, panel_h, fig_w, fig_h = _layout(height, width)
    fig = plt.figure(figsize=(fig_w, fig_h), dpi=DPI)
    head, info, status = title_lines(launch, t)
    fig.text(0.25 / fig_w, 1 - 0.2 / fig_h, head, fontsize=15, weight="bold", va="top")
    fig.text(0.25 / fig_w, 1 - 0.55 / fig_h, info, fontsize=9.5, color="#333333", va="top")
    bad = bool(t.problems() or launch.error)
    fig.text(0.25 / fig_w, 1 - 0.8 / fig_h, ("PROBLEM: " if bad else "OK: ") + status, fontsize=10,
             color="#960000" if bad else "#1b5e20", va="top", weight="bold", wrap=True)
    titles = {"loads": "loads per element", "stores": "stores per element",
              "programs": "program that touched it (stores first)", "problems": "what is wrong"}
    extent = _extent(t, n)
    axes = {}
    for i, key in enumerate(PANELS):
        row, col = divmod(i, 2)
        x = LEFT + col * (panel_w + SIDE)
        y = fig_h - TOP - (row + 1) * panel_h - row * ROW_GAP
        ax = fig.add_axes((x / fig_w, y / fig_h, panel_w / fig_w, panel_h / fig_h))
        ax.imshow(images[key], interpolation="nearest", extent=extent, aspect="auto")
        ax.set_title(titles[key], fontsize=11, pad=14 if n > 1 else 6)
        _outline(ax, t, n)
        _ticks(ax, t, n)
        axes[key] = ax
    side = lambda key: (axes[key].get_position().x1 + 0.12 / fig_w, axes[key].get_position().y0,
                        0.16 / fig_w, axes[key].get_position().height)
    _count_key(fig, axes["loads"], side("loads"), t.arrays["loads"], palette.LOAD_CMAP, "loads")
    _count_key(fig, axes["stores"], side("stores"), t.arrays["stores"], palette.STORE_CMAP, "stores")
    _program_legend(fig, axes["programs"], side("programs"), launch, t)
    _problem_legend(axes["problems"], t)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_file(path) as f:  # a run cut short leaves no torn PNG
        fig.savefig(f, dpi=DPI, format="png")
    h = fig.canvas.get_width_height()[1]
    boxes = {}
    for key, ax in axes.items():
        x0, y0, x1, y1 = ax.get_window_extent().extents
        boxes[key] = (int(round(x0)), int(round(h - y1)), int(round(x1)), int(round(h - y0)))
    plt.close(fig)
    return Drawn(path, boxes, t)


def _extent(t: TensorMap, n: int) -> tuple[float, float, float, float]:
    g = t.geometry
    if n == 1:  # logical coordinates: ticks read as rows and columns, negative in the margin
        return (-g.ml - 0.5, g.cols + g.mr - 0.5, g.rows + g.mb - 0.5, -g.mt - 0.5)
    _, _, height, width = mosaic_shape(g, n)
    return (-0.5, width - 0.5, height - 0.5, -0.5)


def _outline(ax, t: TensorMap, n: int) -> None:
    from matplotlib.patches import Polygon, Rectangle

    g = t.geometry
    style = {"fill": False, "edgecolor": np.array(palette.BORDER_RGB) / 255, "linewidth": 1.2}
    if g.kind == "1d":
        full, rest = divmod(g.numel, g.cols)
        pts = [(-0.5, -0.5), (g.cols - 0.5, -0.5), (g.cols - 0.5, full - 0.5)]
        if rest:
            pts += [(rest - 0.5, full - 0.5), (rest - 0.5, full + 0.5), (-0.5, full + 0.5)]
        else:
            pts += [(-0.5, full - 0.5)]
        ax.add_patch(Polygon(pts, closed=True, **style))
        return
    if n == 1:
        ax.add_patch(Rectangle((-0.5, -0.5), g.cols, g.rows, **style))
        return
    grid_rows, grid_cols, _, _ = mosaic_shape(g, n)
    for s in range(n):
        r, c = divmod(s, grid_cols)
        x = c * (g.width + 1) + g.ml - 0.5
        y = r * (g.height + 1) + g.mt - 0.5
        ax.add_patch(Rectangle((x, y), g.cols, g.rows, **style))
        ax.text(x, y - 0.6, str(list(g.slice_index(s))), fontsize=7, va="bottom")


def _ticks(ax, t: TensorMap, n: int) -> None:
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    g = t.geometry
    if n > 1:
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_xlabel(f"slices over the leading dimensions {tuple(g.lead)}: rows x columns of each", fontsize=8)
        return
    ax.xaxis.set_major_locator(MaxNLocator(8, integer=True))
    ax.yaxis.set_major_locator(MaxNLocator(8, integer=True))
    ax.tick_params(labelsize=8)
    if g.kind == "1d":
        ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{int(round(y)) * g.cols}"))
        ax.set_ylabel("element (row start)", fontsize=8)
        ax.set_xlabel("+ offset", fontsize=8)
    else:
        ax.set_ylabel("row", fontsize=8)
        ax.set_xlabel("column", fontsize=8)


def _count_key(fig, ax, box, counts: np.ndarray, cmap: str, what: str) -> None:
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import BoundaryNorm, ListedColormap
    from matplotlib.patches import Patch
    from matplotlib.ticker import MaxNLocator

    vmax = int(counts.max()) if counts.size else 0
    if vmax == 0:
        ax.text(1.04, 0.98, f"no {what}", transform=ax.transAxes, va="top", fontsize=9, color="#555555")
        return
    if vmax == 1:
        rgb = palette.lut(cmap)[64] / 255
        ax.legend(handles=[Patch(facecolor=rgb, edgecolor="#888888", linewidth=0.5, label=f"1 {what[:-1]}")],
                  loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=8, frameon=False,
                  title=f"{what} per element", title_fontsize=8)
        return
    table = palette.lut(cmap)[64:] / 255
    bounds = np.arange(0.5, vmax + 1.5) if vmax <= 16 else np.linspace(0.5, vmax + 0.5, 193)
    mappable = ScalarMappable(BoundaryNorm(bounds, len(table)), ListedColormap(table))
    bar = fig.colorbar(mappable, cax=fig.add_axes(box))
    bar.locator = MaxNLocator(8, integer=True)
    bar.update_ticks()
    bar.set_label(f"{what} per element (none: white)", fontsize=8)
    bar.ax.tick_params(labelsize=8)


def _program_legend(fig, ax, box, launch: LaunchMap, t: TensorMap) -> None:
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import ListedColormap, Normalize
    from matplotlib.patches import Patch
    from matplotlib.ticker import MaxNLocator

    n = launch.n_programs
    colors = palette.pid_colors(n) / 255
    if n <= palette.CATEGORICAL_PIDS:
        a = t.arrays
        seen = set(np.unique(a["store_pid"][a["stores"] > 0]).tolist()) | set(
            np.unique(a["load_pid"][a["loads"] > 0]).tolist())
        handles = [Patch(facecolor=colors[p], edgecolor="none", label=f"program {launch.pid_text(p)}")
                   for p in range(n) if p in seen]
        if handles:
            ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=8, frameon=False,
                      title="program id", title_fontsize=8)
        return
    mappable = ScalarMappable(Normalize(0, n - 1), ListedColormap(palette.lut(palette.PID_CMAP_MANY) / 255))
    bar = fig.colorbar(mappable, cax=fig.add_axes(box))
    bar.locator = MaxNLocator(8, integer=True)
    bar.update_ticks()
    bar.set_label("program id (x + y*gx + z*gx*gy)", fontsize=8)
    bar.ax.tick_params(labelsize=8)


def _problem_legend(ax, t: TensorMap) -> None:
    from matplotlib.patches import Patch

    cat = t.categories()
    counts = np.bincount(cat.reshape(-1), minlength=len(palette.CATEGORY_RGB))
    handles = []
    for k in sorted(palette.CATEGORY_RGB):
        if counts[k]:
            rgb = np.array(palette.CATEGORY_RGB[k]) / 255
            handles.append(Patch(facecolor=rgb, edgecolor="#888888", linewidth=0.5,
                                 label=f"{palette.CATEGORY_NAMES[k]} ({counts[k]:,})"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=8, frameon=False,
              title="cells", title_fontsize=8)


def png_name(launch: LaunchMap, t: TensorMap) -> str:
    safe = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in t.name)
    kernel = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in launch.kernel)
    return f"launch{launch.index}_{kernel}_{safe}.png"


def warm_up() -> None:
    """Import matplotlib and load its fonts (done while the child traces, on the other core)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from PIL import Image  # noqa: F401

    fig = plt.figure(figsize=(1, 1), dpi=20)
    fig.text(0.1, 0.5, "warm-up", weight="bold")
    fig.canvas.draw()
    plt.close(fig)


def draw_launch(launch: LaunchMap, directory: Path) -> list[Drawn]:
    return [draw_tensor(launch, t, directory / png_name(launch, t)) for t in launch.tensors]


_JOBS: list[tuple[LaunchMap, TensorMap, Path]] = []  # read by forked drawing processes


def _draw_job(i: int) -> tuple[Path, dict]:
    launch, t, path = _JOBS[i]
    drawn = draw_tensor(launch, t, path)
    return drawn.path, drawn.boxes


def draw_all(launches: list[LaunchMap], directory: Path, processes: int | None = None) -> list[Drawn]:
    """Every tensor of every launch, drawn by up to one process per CPU (forked: Linux only)."""
    import multiprocessing
    import os
    import sys

    jobs = [(launch, t, directory / png_name(launch, t)) for launch in launches for t in launch.tensors]
    processes = min(processes or os.cpu_count() or 1, len(jobs))
    if processes < 2 or not sys.platform.startswith("linux"):
        return [draw_tensor(*job) for job in jobs]
    global _JOBS
    _JOBS = jobs
    try:
        with multiprocessing.get_context("fork").Pool(processes) as pool:
            done = pool.map(_draw_job, range(len(jobs)))
    finally:
        _JOBS = []
    return [Drawn(path, boxes, t) for (path, boxes), (_, t, _) in zip(done, jobs)]
