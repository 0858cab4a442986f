"""The error picture of a failing case: |got - expected| in tolerance units over each output, with the
program tiles (from the recorded stores) outlined and the store line written in each tile.

The traced child (trace_child.py) computes one ErrorMap per wrong output of a catalogue case, next to the
launch maps; the parent draws it as a PNG and as the first section of viz.html.
"""

from __future__ import annotations

import json
import textwrap
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from . import palette

ARRAYS = ("error", "writer", "site")
MAX_LABELS = 64  # tiles labelled with their store line (more: the legend lists the lines)
UNWRITTEN_RGB = palette.CATEGORY_RGB[palette.UNWRITTEN]


@dataclass
class ErrorMap:
    """One output against its reference, as rows x columns (leading dimensions folded into the rows)."""

    name: str  # the kernel parameter it was passed as, e.g. c_ptr
    kernel: str
    shape: tuple[int, ...]
    grid: tuple[int, int, int]
    rtol: float
    atol: float
    sites: list[dict] = field(default_factory=list)  # per site index: file, line
    lines: list[str] = field(default_factory=list)  # the localisation, as check prints it
    command: str = ""
    arrays: dict[str, np.ndarray] = field(default_factory=dict)  # error (NaN: unwritten), writer, site; 2-D

    @property
    def wrong(self) -> int:
        return int(np.sum(self.arrays["error"] > 1.0))

    @property
    def unwritten(self) -> int:
        return int(np.sum(np.isnan(self.arrays["error"])))

    def summary(self) -> str:
        error = self.arrays["error"]
        finite = error[np.isfinite(error)]
        worst = f", worst {finite.max():.3g} tolerances" if finite.size else ""
        return (f"{self.name}: {self.wrong:,} of {error.size:,} elements outside tolerance{worst}"
                + (f", {self.unwritten:,} never written" if self.unwritten else ""))


def error_maps(outs, refs, tol: tuple[float, float], command=None) -> list[ErrorMap]:
    """An ErrorMap per output that differs from its reference (call right after the launch, in the child).
    tol: (rtol, atol factor) as tdebug's tolerance table; command(file, line, pid) -> a rerun command."""
    import torch

    from ..catalogue.compare import outside_tolerance, scaled_atol
    from ..runtime.describe import as_2d
    from ..runtime.localise import localise
    from ..runtime.store_maps import writer_maps

    outs = outs if isinstance(outs, (tuple, list)) else (outs,)
    refs = refs if isinstance(refs, (tuple, list)) else (refs,)
    found = []
    for out, ref in zip(outs, refs):
        if not isinstance(out, torch.Tensor) or tuple(out.shape) != tuple(ref.shape):
            continue
        maps = writer_maps(out)
        if maps is None:
            continue
        got, want = out.detach().cpu().to(torch.float64), ref.detach().cpu().to(torch.float64)
        rtol, atol = tol[0], scaled_atol(want, tol[1])
        unwritten = torch.from_numpy(maps.writer < 0)
        wrong = outside_tolerance(got, want, rtol, atol) & ~unwritten
        if not bool(wrong.any() or unwritten.any()):
            continue
        error = ((got - want).abs() / (atol + rtol * want.abs())).numpy().astype(np.float32)
        error[wrong.numpy() & ~np.isfinite(error)] = np.inf
        error[~np.isfinite(error) & ~wrong.numpy()] = 0.0  # matching infinities or NaNs
        error[unwritten.numpy()] = np.nan
        loc = localise(out, got.numpy(), want.numpy(), wrong.numpy(), unwritten.numpy(), command=command)
        launch = maps.launch
        found.append(ErrorMap(
            maps.arg, launch.kernel, tuple(out.shape), launch.grid, rtol, atol,
            [{"file": f, "line": ln} for f, ln, _ in maps.sites], loc.lines if loc else [],
            loc.command if loc else "",
            {"error": as_2d(error), "writer": as_2d(maps.writer).astype(np.int32),
             "site": as_2d(maps.site).astype(np.int32)}))
    return found


def save_error_maps(maps: list[ErrorMap], directory: Path) -> None:
    if not maps:
        return
    directory.mkdir(parents=True, exist_ok=True)
    np.savez(directory / "errors.npz", **{f"e{i}_{k}": v for i, m in enumerate(maps) for k, v in m.arrays.items()})
    meta = [{k: v for k, v in asdict(m).items() if k != "arrays"} for m in maps]
    (directory / "errors.json").write_text(json.dumps(meta))


def load_error_maps(directory: Path) -> list[ErrorMap]:
    path = directory / "errors.json"
    if not path.is_file():
        return []
    data = np.load(directory / "errors.npz")
    return [ErrorMap(**{**meta, "shape": tuple(meta["shape"]), "grid": tuple(meta["grid"]),
                        "arrays": {k: data[f"e{i}_{k}"] for k in ARRAYS}})
            for i, meta in enumerate(json.loads(path.read_text()))]


# --- drawing --------------------------------------------------------------------------------------------

def error_rgb(error: np.ndarray) -> np.ndarray:
    """Within tolerance: white to light grey; beyond it: yellow to dark red over 1 to 1000 tolerances (log);
    never written: the amber of the other pictures."""
    table = palette.lut("YlOrRd")[64:]
    rgb = np.empty(error.shape + (3,), dtype=np.uint8)
    clean = np.nan_to_num(error, nan=0.0, posinf=1e3)
    rgb[...] = (255 - 40 * np.clip(clean, 0, 1)).astype(np.uint8)[..., None]
    beyond = clean > 1.0
    level = np.clip(np.log10(np.where(beyond, clean, 1.0)) / 3.0, 0, 1)
    rgb[beyond] = table[(level[beyond] * (len(table) - 1)).astype(int)]
    rgb[np.isnan(error)] = UNWRITTEN_RGB
    return rgb


def tile_edges(writer: np.ndarray) -> list[tuple[tuple[float, float], tuple[float, float]]]:
    """Segments between neighbouring elements stored by different programs, in image coordinates."""
    segments = []
    r, c = np.nonzero(writer[:, 1:] != writer[:, :-1])
    segments += [((x + 0.5, y - 0.5), (x + 0.5, y + 0.5)) for y, x in zip(r.tolist(), c.tolist())]
    r, c = np.nonzero(writer[1:, :] != writer[:-1, :])
    segments += [((x - 0.5, y + 0.5), (x + 0.5, y + 0.5)) for y, x in zip(r.tolist(), c.tolist())]
    return segments


def tile_labels(m: ErrorMap) -> list[tuple[float, float, str]]:
    """(x, y, 'L84') at the centre of each program's tile: the line that stored most of it."""
    writer, site = m.arrays["writer"], m.arrays["site"]
    programs = np.unique(writer[writer >= 0])
    if programs.size > MAX_LABELS:
        return []
    labels = []
    for p in programs.tolist():
        rows, cols = np.nonzero(writer == p)
        line = m.sites[int(np.bincount(site[rows, cols]).argmax())]["line"]
        labels.append((float(cols.mean()), float(rows.mean()), f"L{line}"))
    return labels


def draw_error(m: ErrorMap, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.collections import LineCollection
    from matplotlib.colors import ListedColormap, LogNorm

    error = m.arrays["error"]
    height, width = error.shape
    aspect = height / max(1, width)
    panel_w = 6.0 if aspect <= 1.2 else max(2.0, 7.0 / aspect)
    panel_h = min(7.0, max(1.0, panel_w * aspect))
    fig_w = panel_w + 2.6
    shape = "x".join(map(str, m.shape))
    head = (f"tolerance: {m.atol:.3g} + {m.rtol:g} x |expected|; blue lines: program tiles (from the recorded "
            "stores); Lnn: the line that stored the tile")
    width_chars = int((fig_w - 0.4) / 0.072)
    body = [wrapped for text in [m.summary(), head] + m.lines + ([m.command] if m.command else [])
            for wrapped in textwrap.wrap(text, width_chars, subsequent_indent="    ")]
    text_h = 0.16 * len(body)
    fig_h = panel_h + text_h + 1.3
    fig = plt.figure(figsize=(fig_w, fig_h), dpi=100)
    ax = fig.add_axes((0.7 / fig_w, 0.5 / fig_h, panel_w / fig_w, panel_h / fig_h))
    ax.imshow(error_rgb(error), interpolation="nearest", aspect="auto",
              extent=(-0.5, width - 0.5, height - 0.5, -0.5))
    ax.add_collection(LineCollection(tile_edges(m.arrays["writer"]), colors="#1f3a93", linewidths=0.8))
    for x, y, text in tile_labels(m):
        ax.text(x, y, text, ha="center", va="center", fontsize=7, color="#1f3a93",
                bbox={"boxstyle": "round,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.7})
    ax.set_xlabel("column", fontsize=8)
    ax.set_ylabel("row" if len(m.shape) <= 2 else f"row (dimensions {m.shape[:-1]} folded)", fontsize=8)
    ax.tick_params(labelsize=8)
    table = palette.lut("YlOrRd")[64:] / 255
    bar = fig.colorbar(plt.cm.ScalarMappable(LogNorm(1, 1000), ListedColormap(table)),
                       cax=fig.add_axes(((0.9 + panel_w) / fig_w, 0.5 / fig_h, 0.18 / fig_w, panel_h / fig_h)))
    bar.set_label("|got - expected| / tolerance (> 1: wrong; within: grey; amber: never written)", fontsize=8)
    bar.ax.tick_params(labelsize=8)
    fig.text(0.2 / fig_w, 1 - 0.25 / fig_h, f"{m.kernel} · {m.name}: {shape} vs its reference", fontsize=13,
             weight="bold", va="top")
    fig.text(0.2 / fig_w, 1 - 0.6 / fig_h, "\n".join(body), fontsize=8, va="top", family="monospace")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def png_name(m: ErrorMap, index: int) -> str:
    safe = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in f"{m.kernel}_{m.name}")
    return f"error{index}_{safe}.png"
