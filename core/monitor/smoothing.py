"""Curve smoothing and y-range rules, as TensorBoard's scalar dashboard does them.

Smoothing is TensorBoard's debiased exponential moving average
(tensorboard/webapp/widgets/line_chart_v2/data_transformer.ts@412c86e5, `classicSmoothing`): the
average starts at 0, each finite value moves it by (1 - weight), and dividing by 1 - weight**k (k finite
values so far) removes the pull towards the starting 0. Non-finite values are shown as they are and do
not move the average; a constant series is left as it is.
"""

from __future__ import annotations

import math

import numpy as np

DEFAULT_WEIGHT = 0.6
MAX_WEIGHT = 0.999
OUTLIER_QUANTILES = (0.05, 0.95)


def clamp_weight(weight: float) -> float:
    """Weights outside 0..0.999 (or not a number) are brought back into range; NaN means no smoothing."""
    if weight is None or not math.isfinite(weight):
        return 0.0
    return min(max(float(weight), 0.0), MAX_WEIGHT)


def smooth(values: np.ndarray, weight: float = DEFAULT_WEIGHT) -> np.ndarray:
    """TensorBoard's debiased EMA of `values` (see the module docstring)."""
    y = np.asarray(values, dtype=np.float64)
    if len(y) == 0:
        return y.copy()
    w = clamp_weight(weight)
    if bool(np.all(y == y[0])):  # a constant series stays as it is (NaN never equals anything)
        return y.copy()
    out = y.copy()
    finite = np.isfinite(y)
    last = 0.0
    count = 0
    fin_idx = np.flatnonzero(finite)
    vals = y[fin_idx]
    smoothed = np.empty(len(vals))
    one_minus = 1.0 - w
    for i, v in enumerate(vals.tolist()):
        last = last * w + one_minus * v
        count += 1
        smoothed[i] = last / (1.0 - w ** count)
    out[fin_idx] = smoothed
    return out


def y_range(values: np.ndarray, *, ignore_outliers: bool) -> tuple[float, float] | None:
    """The y extent of the finite values; with ignore_outliers, their 5th to 95th percentile."""
    y = np.asarray(values, dtype=np.float64)
    y = y[np.isfinite(y)]
    if not len(y):
        return None
    if ignore_outliers:
        lo, hi = np.quantile(y, OUTLIER_QUANTILES)
    else:
        lo, hi = float(y.min()), float(y.max())
    lo, hi = float(lo), float(hi)
    if hi == lo:
        pad = abs(lo) * 0.1 + 0.1
    else:
        pad = (hi - lo) * 0.05
    return lo - pad, hi + pad
