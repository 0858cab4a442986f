"""One self-contained HTML page for all launches and tensors: no network needed to open it.

Each panel is the same RGB image the PNGs show (palette colours, built by draw.panel_images), embedded
as a PNG data URI and scaled up with pixelated rendering; the per-element maps are embedded as base64
typed arrays in a JSON block, and a little inline JavaScript shows, under the mouse, the element's
index, its load and store counts, the programs that touched it and what is wrong with it.
"""

from __future__ import annotations

import base64
import html
import io
import json
import zlib
from pathlib import Path

import numpy as np

from ..runtime.files import write_atomic
from . import palette
from .draw import PANELS, panel_images, title_lines
from .errors import ErrorMap
from .model import LaunchMap, TensorMap, mosaic, mosaic_shape

HOVER_ARRAYS = ("loads", "stores", "masked", "load_npids", "load_pid", "store_npids", "store_pid", "store_pid_max")
PANEL_TITLES = {"loads": "loads per element", "stores": "stores per element",
                "programs": "program that touched it (stores first)", "problems": "what is wrong"}


def png_data_uri(rgb: np.ndarray) -> str:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(rgb, dtype=np.uint8), "RGB").save(buf, format="PNG", optimize=False)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def _b64(arr: np.ndarray, dtype: str) -> str:
    """Little-endian array bytes, zlib-compressed (the page inflates them with DecompressionStream), base64."""
    raw = np.ascontiguousarray(arr, dtype=dtype).tobytes()
    return base64.b64encode(zlib.compress(raw, 6)).decode()


def tensor_data(launch: LaunchMap, t: TensorMap) -> dict:
    g = t.geometry
    n = t.arrays["loads"].shape[0]
    grid_rows, grid_cols, height, width = mosaic_shape(g, n)
    data = {
        "name": t.name, "shape": list(t.shape), "dtype": t.dtype, "kind": g.kind, "rows": g.rows, "cols": g.cols,
        "lead": list(g.lead), "numel": g.numel, "mt": g.mt, "mb": g.mb, "ml": g.ml, "mr": g.mr,
        "slices": n, "gridCols": grid_cols, "height": height, "width": width,
        "arrays": {k: _b64(mosaic(t.arrays[k], g, 0), "<i4") for k in HOVER_ARRAYS},
        "category": _b64(mosaic(t.categories(), g, 255), "u1"),
    }
    return data


def _outline_svg(t: TensorMap) -> str:
    """The tensor's outline over a panel, in cell coordinates of the mosaic."""
    g = t.geometry
    n = t.arrays["loads"].shape[0]
    _, grid_cols, height, width = mosaic_shape(g, n)
    shapes = []
    if g.kind == "1d":
        full, rest = divmod(g.numel, g.cols)
        top = g.mt
        pts = [(0, top), (g.cols, top), (g.cols, top + full)]
        pts += [(rest, top + full), (rest, top + full + 1), (0, top + full + 1)] if rest else [(0, top + full)]
        points = " ".join(f"{x},{y}" for x, y in pts)
        shapes.append(f'<polygon points="{points}"/>')
    else:
        for s in range(n):
            r, c = divmod(s, grid_cols)
            x, y = c * (g.width + 1) + g.ml, r * (g.height + 1) + g.mt
            shapes.append(f'<rect x="{x}" y="{y}" width="{g.cols}" height="{g.rows}"/>')
    return (f'<svg class="outline" viewBox="0 0 {width} {height}" preserveAspectRatio="none">'
            + "".join(shapes) + "</svg>")


def _count_key(counts: np.ndarray, cmap: str, what: str) -> str:
    vmax = int(counts.max()) if counts.size else 0
    if vmax == 0:
        return f'<span class="muted">no {what}</span>'
    table = palette.lut(cmap)
    lo, hi = palette.hex_rgb(tuple(table[64])), palette.hex_rgb(tuple(table[255]))
    if vmax == 1:
        return f'<span class="sw" style="background:{lo}"></span>1 {what[:-1]} per element'
    return (f'<span class="sw" style="background:{lo}"></span>1 &rarr; '
            f'<span class="sw" style="background:{hi}"></span>{vmax} {what} per element')


def _program_key(launch: LaunchMap, t: TensorMap) -> str:
    n = launch.n_programs
    colors = palette.pid_colors(n)
    if n > palette.CATEGORICAL_PIDS:
        stops = ", ".join(palette.hex_rgb(tuple(c)) for c in palette.lut(palette.PID_CMAP_MANY)[::32])
        return (f'program 0 <span class="ramp" style="background:linear-gradient(to right, {stops})"></span> '
                f'program {n - 1}')
    a = t.arrays
    seen = set(np.unique(a["store_pid"][a["stores"] > 0]).tolist()) | set(
        np.unique(a["load_pid"][a["loads"] > 0]).tolist())
    return " ".join(f'<span class="sw" style="background:{palette.hex_rgb(tuple(colors[p]))}"></span>'
                    f'program {html.escape(launch.pid_text(p))}' for p in range(n) if p in seen)


def _problem_key(t: TensorMap) -> str:
    counts = np.bincount(t.categories().reshape(-1), minlength=len(palette.CATEGORY_RGB))
    items = []
    for k in sorted(palette.CATEGORY_RGB):
        if counts[k]:
            items.append(f'<span class="sw" style="background:{palette.hex_rgb(palette.CATEGORY_RGB[k])}"></span>'
                         f'{html.escape(palette.CATEGORY_NAMES[k])} ({counts[k]:,})')
    return "<br>".join(items)


def tensor_section(launch: LaunchMap, t: TensorMap, key: str) -> str:
    images = {k: png_data_uri(mosaic(v, t.geometry, 255)) for k, v in panel_images(t, launch.n_programs).items()}
    head, info, status = title_lines(launch, t)
    bad = bool(t.problems() or launch.error)
    keys = {"loads": _count_key(t.arrays["loads"], palette.LOAD_CMAP, "loads"),
            "stores": _count_key(t.arrays["stores"], palette.STORE_CMAP, "stores"),
            "programs": _program_key(launch, t), "problems": _problem_key(t)}
    outline = _outline_svg(t)
    _, _, height, width = mosaic_shape(t.geometry, t.arrays["loads"].shape[0])
    scale = max(1.0, min(6.0, 300 / max(width, 1), 400 / max(height, 1)))
    style = f"width:{width * scale:.0f}px;height:{height * scale:.0f}px"
    panels = "".join(
        f'<figure><figcaption>{PANEL_TITLES[p]}</figcaption>'
        f'<div class="plot" data-key="{key}" style="{style}"><img alt="{p}" src="{images[p]}">{outline}</div>'
        f'<div class="key">{keys[p]}</div></figure>' for p in PANELS)
    return (f'<section class="tensor" id="{key}"><h3>{html.escape(head)}</h3>'
            f'<p class="info">{html.escape(info)}</p>'
            f'<p class="status {"bad" if bad else "ok"}">{"PROBLEM: " if bad else "OK: "}{html.escape(status)}</p>'
            f'<div class="panels">{panels}</div></section>')


def error_section(m: ErrorMap, png: Path) -> str:
    """A wrong output: its error picture (the PNG drawn by viz/errors.py, embedded) and where it went wrong."""
    uri = "data:image/png;base64," + base64.b64encode(png.read_bytes()).decode()
    text = "\n".join(m.lines + ([m.command] if m.command else []))
    return (f'<section class="error"><h2>wrong values: {html.escape(m.kernel)} · {html.escape(m.name)}</h2>'
            f'<p class="status bad">{html.escape(m.summary())}</p><pre>{html.escape(text)}</pre>'
            f'<img class="error" alt="|got - expected| in tolerance units" src="{uri}"></section>')


def render_page(launches: list[LaunchMap], title: str, subtitle: str = "",
                errors: list[tuple[ErrorMap, Path]] = ()) -> str:
    data: dict = {}
    sections = [error_section(m, png) for m, png in errors]
    for launch in launches:
        parts = []
        for i, t in enumerate(launch.tensors):
            key = f"l{launch.index}t{i}"
            data[key] = {**tensor_data(launch, t), "grid": list(launch.grid), "kernel": launch.kernel}
            parts.append(tensor_section(launch, t, key))
        extra = f" · {html.escape(launch.config)}" if launch.config else ""
        error = f'<p class="status bad">the launch raised {html.escape(launch.error)}</p>' if launch.error else ""
        sections.append(f'<section class="launch"><h2>launch {launch.index}: {html.escape(launch.kernel)} · '
                        f'{launch.grid_text}{extra}</h2>{error}{"".join(parts)}</section>')
    payload = json.dumps({"tensors": data, "categories": {str(k): v for k, v in palette.CATEGORY_NAMES.items()}})
    payload = payload.replace("</", "<\\/")
    return TEMPLATE.format(title=html.escape(title), subtitle=html.escape(subtitle), css=CSS, body="".join(sections),
                           data=payload, js=JS)


def write_page(launches: list[LaunchMap], path: Path, title: str, subtitle: str = "",
               errors: list[tuple[ErrorMap, Path]] = ()) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, render_page(launches, title, subtitle, errors))
    return path


TEMPLATE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>{css}</style></head>
<body><header><h1>{title}</h1><p class="info">{subtitle}</p>
<p class="info">Hover over a panel: element index, loads, stores, programs. Outside the black outline is the margin,
where accesses that fall outside the tensor are drawn.</p></header>
{body}
<div id="tip" hidden></div>
<script type="application/json" id="viz-data">{data}</script>
<script>{js}</script>
</body></html>
"""

CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; margin: 16px 24px;
       color: #111; background: #fff; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 18px; margin: 22px 0 6px; border-bottom: 1px solid #ccc; padding-bottom: 4px; }
h3 { font-size: 16px; margin: 14px 0 2px; }
.info { margin: 2px 0; color: #444; font-size: 13px; }
.status { margin: 4px 0 8px; font-weight: bold; font-size: 14px; }
.status.ok { color: #1b5e20; } .status.bad { color: #960000; }
.panels { display: flex; flex-wrap: wrap; gap: 18px; align-items: flex-start; }
figure { margin: 0; }
figcaption { font-size: 13px; margin-bottom: 4px; color: #222; }
.plot { position: relative; border: 1px solid #bbb; cursor: crosshair; }
.plot img { width: 100%; height: 100%; image-rendering: pixelated; image-rendering: crisp-edges; display: block; }
.outline { position: absolute; left: 0; top: 0; width: 100%; height: 100%; pointer-events: none; }
.outline * { fill: none; stroke: #141414; stroke-width: 1.5px; vector-effect: non-scaling-stroke; }
.key { font-size: 12px; margin-top: 4px; max-width: 460px; line-height: 1.6; }
.sw { display: inline-block; width: 12px; height: 12px; border: 1px solid #888; vertical-align: -2px;
      margin: 0 4px 0 8px; }
.ramp { display: inline-block; width: 120px; height: 12px; vertical-align: -2px; border: 1px solid #888; }
.muted { color: #777; }
pre { font-size: 12px; background: #f6f6f6; padding: 6px 8px; overflow-x: auto; }
img.error { max-width: 100%; }
#tip { position: fixed; pointer-events: none; background: #fffff0; border: 1px solid #666; padding: 6px 8px;
       font-size: 12px; line-height: 1.45; box-shadow: 2px 2px 6px rgba(0,0,0,.25); white-space: nowrap; z-index: 9; }
"""

JS = r"""
(function () {
  const DATA = JSON.parse(document.getElementById('viz-data').textContent);
  const decoded = {};
  function bytes(b64) {
    const s = atob(b64), out = new Uint8Array(s.length);
    for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
    return out;
  }
  async function inflate(b64) {
    const stream = new Blob([bytes(b64)]).stream().pipeThrough(new DecompressionStream('deflate'));
    return new Uint8Array(await new Response(stream).arrayBuffer());
  }
  async function decode(key) {
    const t = DATA.tensors[key], a = {};
    for (const name in t.arrays) a[name] = new Int32Array((await inflate(t.arrays[name])).buffer);
    a.category = await inflate(t.category);
    decoded[key] = a;
  }
  const ready = Promise.all(Object.keys(DATA.tensors).map(decode));
  function arrays(key) { return decoded[key]; }
  function pidText(t, p) {
    const [gx, gy, gz] = t.grid, x = p % gx, y = Math.floor(p / gx) % gy, z = Math.floor(p / (gx * gy));
    if (gy === 1 && gz === 1) return String(x);
    return gz === 1 ? '(' + x + ',' + y + ')' : '(' + x + ',' + y + ',' + z + ')';
  }
  function where(t, s, r, c) {
    const lead = [];
    let rest = s;
    for (let d = t.lead.length - 1; d >= 0; d--) {
      lead.unshift(rest % t.lead[d]);
      rest = Math.floor(rest / t.lead[d]);
    }
    if (t.kind === '1d') {
      const i = r * t.cols + c;
      const inside = i >= 0 && i < t.numel;
      return t.name + '[' + i + ']' + (inside ? '' : '  (outside: the tensor has ' + t.numel + ' elements)');
    }
    const idx = lead.concat([r, c]);
    const inside = r >= 0 && r < t.rows && c >= 0 && c < t.cols;
    return t.name + '[' + idx.join(', ') + ']' + (inside ? '' : '  (outside: ' + t.rows + ' x ' + t.cols + ')');
  }
  function programs(t, n, lo, hi) {
    if (n <= 0) return '';
    if (n === 1) return ' by program ' + pidText(t, lo);
    return ' by ' + n + ' programs (' + pidText(t, lo) + (hi >= 0 ? ' \u2026 ' + pidText(t, hi) : ' \u2026') + ')';
  }
  const tip = document.getElementById('tip');
  function show(ev) {
    const plot = ev.currentTarget, key = plot.dataset.key, t = DATA.tensors[key], a = arrays(key);
    if (!a) return;
    const box = plot.getBoundingClientRect();
    const x = Math.floor((ev.clientX - box.left) / box.width * t.width);
    const y = Math.floor((ev.clientY - box.top) / box.height * t.height);
    if (x < 0 || y < 0 || x >= t.width || y >= t.height) { tip.hidden = true; return; }
    const w = t.ml + t.cols + t.mr, h = t.mt + t.rows + t.mb;
    const sc = Math.floor(x / (w + 1)), sr = Math.floor(y / (h + 1)), cx = x % (w + 1), cy = y % (h + 1);
    if (cx >= w || cy >= h) { tip.hidden = true; return; }
    const s = sr * t.gridCols + sc, i = y * t.width + x;
    if (s >= t.slices) { tip.hidden = true; return; }
    const lines = ['<b>' + where(t, s, cy - t.mt, cx - t.ml) + '</b>'];
    lines.push('loads: ' + a.loads[i] + programs(t, a.load_npids[i], a.load_pid[i], -1));
    lines.push('stores: ' + a.stores[i] + programs(t, a.store_npids[i], a.store_pid[i], a.store_pid_max[i]));
    if (a.masked[i]) lines.push('masked-off lanes: ' + a.masked[i]);
    lines.push('<i>' + DATA.categories[String(a.category[i])] + '</i>');
    tip.innerHTML = lines.join('<br>');
    tip.hidden = false;
    tip.style.left = Math.min(ev.clientX + 14, window.innerWidth - tip.offsetWidth - 8) + 'px';
    tip.style.top = (ev.clientY + 14) + 'px';
  }
  document.querySelectorAll('.plot').forEach(function (p) {
    p.addEventListener('mousemove', show);
    p.addEventListener('mouseleave', function () { tip.hidden = true; });
  });
  // #hover=KEY,PANEL,X,Y: show the tooltip of mosaic cell (X, Y) of a panel (0..3) of a tensor, as if the
  // mouse were there (a link to one element; used by the browser check, which cannot move a mouse).
  const m = /^#hover=([^,]+),(\d+),(\d+),(\d+)$/.exec(location.hash);
  if (m) ready.then(function () {
    const plot = document.querySelectorAll('.plot[data-key="' + m[1] + '"]')[Number(m[2])];
    if (!plot) return;
    const t = DATA.tensors[m[1]], b = plot.getBoundingClientRect();
    const ev = new MouseEvent('mousemove', {clientX: b.left + (Number(m[3]) + 0.5) * b.width / t.width,
                                            clientY: b.top + (Number(m[4]) + 0.5) * b.height / t.height});
    plot.dispatchEvent(ev);
    document.body.dataset.hovered = m[1];
  });
})();
"""
