"""Sets of programs and elements in words: "programs with pid_n = 3 only", "the last column block
(columns 96-99)", "edge columns only: column 99" (used by the localisation of a wrong output)."""

from __future__ import annotations

import numpy as np

MAX_VALUES = 6  # values (or ranges) listed before "..."


def _ranges(values) -> str:
    values = sorted(set(int(v) for v in values))
    parts, i = [], 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[j + 1] == values[j] + 1:
            j += 1
        parts.append(str(values[i]) if i == j else f"{values[i]}-{values[j]}")
        i = j + 1
    return ", ".join(parts[:MAX_VALUES]) + (", ..." if len(parts) > MAX_VALUES else "")


def _values(name: str, values: set[int], every: set[int]) -> str:
    if len(values) == 1:
        return f"{name} = {next(iter(values))}"
    if values == {v for v in every if v >= min(values)}:
        return f"{name} >= {min(values)}"
    if values == {v for v in every if v <= max(values)}:
        return f"{name} <= {max(values)}"
    return f"{name} in {{{_ranges(values)}}}"


def _splitting_variable(bad: set[int], everyone: set[int], scalars: dict[int, dict[str, int]]):
    """The kernel variable whose values tell the programs in `bad` from the others, with the fewest values."""
    names: set[str] | None = None
    for p in everyone:
        keys = set(scalars.get(p, {}))
        names = keys if names is None else names & keys
    best = None
    for name in sorted(names or ()):
        inside = {scalars[p][name] for p in bad}
        outside = {scalars[p][name] for p in everyone - bad}
        if inside & outside:
            continue
        rank = (min(len(inside), len(outside)), "pid" not in name, len(name))
        if best is None or rank < best[0]:
            best = (rank, name, inside, outside)
    return best[1:] if best is not None else None


def program_group(bad: set[int], everyone: set[int], scalars: dict[int, dict[str, int]]) -> str:
    """Which programs, in the kernel's own terms: 'every program', 'programs with pid_n = 3 only'."""
    n, total = len(bad), len(everyone)
    if not bad:
        return "no program"
    if bad >= everyone:
        return f"every program ({total} of {total})" if total > 1 else "the only program"
    split = _splitting_variable(bad, everyone, scalars)
    if split is not None:
        name, inside, outside = split
        if len(inside) <= MAX_VALUES:
            return f"programs with {_values(name, inside, inside | outside)} only ({n} of {total})"
        if len(outside) <= MAX_VALUES:
            return f"every program but those with {_values(name, outside, inside | outside)} ({n} of {total})"
    if total - n <= MAX_VALUES:
        return f"every program but {_ranges(everyone - bad)} ({n} of {total})"
    return f"programs {_ranges(bad)} ({n} of {total})"


def as_2d(a: np.ndarray) -> np.ndarray:
    """Rows x columns: leading dimensions folded into the rows, a vector as one row."""
    if a.ndim == 0:
        return a.reshape(1, 1)
    if a.ndim == 1:
        return a.reshape(1, -1)
    return a.reshape(-1, a.shape[-1])


def _span(idx: np.ndarray, n: int, what: str) -> str:
    lo, hi = int(idx[0]), int(idx[-1])
    if lo == 0 and hi == n - 1:
        return ""
    many = f"{what}s {lo}-{hi}" if hi > lo else f"{what} {lo}"
    if hi == n - 1:
        return f"the last {what} block ({many})"
    if lo == 0:
        return f"the first {what} block ({many})"
    return many


def region(mask: np.ndarray) -> str:
    """Where a set of elements lies: 'the last column block (columns 96-126)', 'rows 32-63, columns 0-31'."""
    m = as_2d(mask)
    rows, cols = np.flatnonzero(m.any(axis=1)), np.flatnonzero(m.any(axis=0))
    if not rows.size:
        return "nowhere"
    if m.shape[0] == 1:
        return _span(cols, m.shape[1], "element") or "every element"
    r, c = _span(rows, m.shape[0], "row"), _span(cols, m.shape[1], "column")
    return ", ".join(p for p in (r, c) if p) or "all rows and columns"


def _share(n: int, total: int) -> str:
    share = n / max(1, total)
    text = f"{share:.0%}" if share >= 0.01 else f"{share:.1%}" if share >= 0.001 else f"{share:.1g}"
    return f"{n:,} of {total:,} elements ({text})"


def pattern(bad: np.ndarray, writer: np.ndarray) -> str:
    """The error pattern over the output: everywhere, one tile, edge rows/columns, a diagonal band, rows."""
    b, w = as_2d(bad), as_2d(writer)
    n = int(b.sum())
    R, C = b.shape
    written = w >= 0
    n_written = int(written.sum())
    if n == 0:
        return "none"
    if n >= n_written:
        return "everywhere: every element"
    progs = np.unique(w[b & written])
    tiles = np.unique(w[written]).size
    if progs.size == 1 and tiles > 1:
        return f"one tile: {region(w == progs[0])}"
    rows, cols = np.flatnonzero(b.any(axis=1)), np.flatnonzero(b.any(axis=0))
    if R > 1 and C > 1:
        if 0 < rows[0] and rows[-1] == R - 1 and rows.size <= R // 2:
            return f"edge rows only: {_span(rows, R, 'row').split('(')[-1].rstrip(')')}"
        if 0 < cols[0] and cols[-1] == C - 1 and cols.size <= C // 2:
            return f"edge columns only: {_span(cols, C, 'column').split('(')[-1].rstrip(')')}"
        r_idx, c_idx = np.nonzero(b)
        band = int(np.abs(r_idx - c_idx).max())
        if band < max(1, min(R, C) // 8) and rows.size > 2:
            return f"a diagonal band: |row - column| <= {band}"
        if np.all(b[rows] | ~written[rows]):
            if rows.size == R - 1 and rows[0] == 1:
                return "whole rows: every row but the first"
            return f"whole rows: {rows.size} of {R} rows ({_ranges(rows)})"
        if np.all(b[:, cols] | ~written[:, cols]):
            return f"whole columns: {cols.size} of {C} columns ({_ranges(cols)})"
    row_tiles = R > 1 and tiles == R and all(np.unique(np.nonzero(w == p)[0]).size == 1 for p in progs[:64])
    unit = "row" if row_tiles else "tile"
    if tiles == 1:
        where = "in the one tile"
    elif progs.size == tiles:
        where = f"in every {unit}"
    else:
        where = f"in {progs.size} of {tiles} {unit}s"
    kind = "everywhere" if 2 * n >= n_written and 10 * progs.size >= 9 * tiles else "scattered"
    return f"{kind}: {_share(n, n_written)}, {where}"
