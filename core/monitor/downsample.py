"""A curve's points cut down to the pixels its chart has: min/max per pixel column.

A chart `columns` pixels wide cannot show more than the lowest and the highest value in each pixel column, so a
series with more points than ~2 per column is sent as: its first and last point, and in each column (equal
slices of the x range, in x's own units) the point of least and the point of greatest value, in their original
order. The drawn line then touches every column's extremes, exactly as the full series would at this width.
A series of at most `2 * columns` points is sent whole, and any series at most ~3 points a column (plus the
first and last).

Non-finite values are kept as the full plot shows them: a NaN or an infinity breaks the line (plotly draws a gap),
so the first non-finite point of each column stays (one is enough for the gap). Points whose x is not finite
cannot be placed in a column: the first `columns` of them are kept (each breaks the line too).

The figure is all that is cut: the CSV download (`views.shown_table`) and every verdict read the full series.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

PLOT_COLUMNS = 1000  # pixel columns of a chart's plot area (a wide page on a 1,400 to 1,900 px window)


def _as_float(x: np.ndarray) -> np.ndarray:
    """x as float64: datetimes (numpy's, or pandas Timestamps as the wall-time axis gives them) as nanoseconds,
    numbers as they are; anything else by its position."""
    arr = np.asarray(x)
    if arr.dtype.kind in "Mm":
        out = arr.astype(arr.dtype.str[:3] + "[ns]").astype(np.int64).astype(np.float64)
        out[np.isnat(arr)] = np.nan
        return out
    if arr.dtype.kind == "O":
        try:
            stamps = pd.DatetimeIndex(pd.to_datetime(arr, utc=True))
        except (TypeError, ValueError):
            return np.arange(len(arr), dtype=np.float64)
        out = stamps.asi8.astype(np.float64)
        out[stamps.isna()] = np.nan
        return out
    try:
        return arr.astype(np.float64)
    except (TypeError, ValueError):
        return np.arange(len(arr), dtype=np.float64)


def envelope_indices(x: np.ndarray, y: np.ndarray, columns: int = PLOT_COLUMNS) -> np.ndarray:
    """The indices (ascending) of the points of (x, y) that a chart `columns` pixels wide needs; see the module
    docstring. Every index when there are at most 2 x `columns` points."""
    y = np.asarray(y, dtype=np.float64)
    n = len(y)
    columns = max(1, int(columns))
    if n <= 2 * columns:
        return np.arange(n)
    xf = _as_float(x)
    x_ok = np.isfinite(xf)
    keep = np.zeros(n, dtype=bool)
    keep[0] = keep[-1] = True
    keep[np.flatnonzero(~x_ok)[:columns]] = True
    placed = np.flatnonzero(x_ok)
    if len(placed):
        lo, hi = xf[placed].min(), xf[placed].max()
        span = hi - lo
        col = (np.zeros(len(placed), dtype=np.int64) if span <= 0 else
               np.minimum(((xf[placed] - lo) / span * columns).astype(np.int64), columns - 1))
        # the points column by column (a stable sort: in each column, in their original order; x is nearly
        # always sorted already, which this sort finds in linear time), then per column the first point of its
        # least and of its greatest finite value, and its first non-finite one
        order = np.argsort(col, kind="stable")
        cs, ys = col[order], y[placed][order]
        starts = np.flatnonzero(np.r_[True, np.diff(cs) != 0])
        seg = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, len(cs)]))
        finite = np.isfinite(ys)
        low = np.where(finite, ys, np.inf)
        high = np.where(finite, ys, -np.inf)
        least = np.minimum.reduceat(low, starts)[seg]
        most = np.maximum.reduceat(high, starts)[seg]
        for hit in (finite & (low == least), finite & (high == most), ~finite):
            at = np.flatnonzero(hit)
            if len(at):
                first = at[np.r_[True, np.diff(seg[at]) != 0]]
                keep[placed[order[first]]] = True
    return np.flatnonzero(keep)
