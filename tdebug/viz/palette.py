"""Colours shared by the PNGs and the HTML page, so both read the same way.

The "problems" panel colours each cell by its worst category; the warning colours (out-of-bounds red,
unwritten amber, multi-writer purple) are used nowhere else in either picture, so a test can look for them.
"""

from __future__ import annotations

import numpy as np

# Problem categories, from least to most severe; a cell shows the highest that applies.
OUTSIDE = 0  # margin cell nobody touched
UNTOUCHED = 1  # inside the tensor, never accessed (an input element nobody read)
OK = 2  # inside, accessed, nothing wrong
MASKED = 3  # only masked-off lanes point here
UNWRITTEN = 4  # inside an output tensor, no program stored to it
MULTI = 5  # stored to by more than one program
OOB = 6  # an active (unmasked) lane accessed it, and it lies outside the tensor

CATEGORY_NAMES = {
    OUTSIDE: "margin, not accessed",
    UNTOUCHED: "never accessed",
    OK: "accessed",
    MASKED: "masked-off lanes only",
    UNWRITTEN: "never written (output)",
    MULTI: "written by 2+ programs",
    OOB: "out-of-bounds access",
}

CATEGORY_RGB: dict[int, tuple[int, int, int]] = {
    OUTSIDE: (236, 236, 236),
    UNTOUCHED: (255, 255, 255),
    OK: (199, 226, 199),
    MASKED: (150, 170, 196),
    UNWRITTEN: (255, 176, 0),
    MULTI: (142, 36, 170),
    OOB: (230, 0, 0),
}

MARGIN_RGB = CATEGORY_RGB[OUTSIDE]
BORDER_RGB = (20, 20, 20)

# Up to this many programs get a categorical colour each (with a legend); more get a continuous map.
CATEGORICAL_PIDS = 18


def hex_rgb(rgb: tuple[int, int, int]) -> str:
    r, g, b = (int(v) for v in rgb)
    return f"#{r:02x}{g:02x}{b:02x}"


def lut(name: str, n: int = 256) -> np.ndarray:
    """A matplotlib colour map as an (n, 3) uint8 table."""
    from matplotlib import colormaps

    cmap = colormaps[name].resampled(n)
    return (cmap(np.linspace(0.0, 1.0, n))[:, :3] * 255).round().astype(np.uint8)


# Count maps: light for few accesses, dark for many; zero is drawn white.
LOAD_CMAP = "Blues"
STORE_CMAP = "Greens"
MASKED_CMAP = "Greys"
PID_CMAP_MANY = "viridis"  # continuous; avoids reds so it never looks like a warning
PID_CMAP_FEW = "tab20"


def pid_colors(n_programs: int) -> np.ndarray:
    """(n_programs, 3) uint8 colours for program ids 0..n-1 (linear program index)."""
    n = max(1, n_programs)
    if n <= CATEGORICAL_PIDS:
        table = lut(PID_CMAP_FEW, 20)
        # tab20 without its two reds (indices 6, 7), which would look like the out-of-bounds warning.
        return table[[i for i in range(20) if i not in (6, 7)]][:n]
    table = lut(PID_CMAP_MANY, 256)
    idx = np.round(np.linspace(0, 255, n)).astype(int)
    return table[idx]
