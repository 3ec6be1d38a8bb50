"""Smoothing as TensorBoard does it, checked against values worked out by hand; the outlier range."""

from __future__ import annotations

import math

import numpy as np
import pytest

from core.monitor.smoothing import clamp_weight, smooth, y_range

NAN = float("nan")

# Hand computation with weight w: last = last*w + (1-w)*v; shown = last / (1 - w**k), k = finite values so far.
HAND_CASES = [
    ("w0.5 three points", [1.0, 2.0, 3.0], 0.5, [1.0, 1.25 / 0.75, 2.125 / 0.875]),
    ("w0 is the raw series", [3.0, -1.0, 4.0], 0.0, [3.0, -1.0, 4.0]),
    ("nan passes through and does not advance", [1.0, NAN, 3.0], 0.5, [1.0, NAN, 1.75 / 0.75]),
    ("inf passes through", [2.0, math.inf, 2.0, 4.0], 0.6, [2.0, math.inf, 1.28 / 0.64, 2.368 / 0.784]),
    ("constant series unchanged", [5.0, 5.0, 5.0], 0.9, [5.0, 5.0, 5.0]),
    ("w0.6 default, first point debiased to itself", [10.0, 0.0], 0.6, [10.0, 2.4 / 0.64]),
]


@pytest.mark.parametrize(("name", "values", "weight", "expected"), HAND_CASES, ids=[c[0] for c in HAND_CASES])
def test_smoothing_matches_hand_computed_values(name, values, weight, expected):
    got = smooth(np.array(values), weight)
    np.testing.assert_allclose(got, np.array(expected), rtol=1e-12, equal_nan=True)


@pytest.mark.parametrize(("weight", "expected"), [(-1.0, 0.0), (2.0, 0.999), (NAN, 0.0), (0.6, 0.6)], ids=str)
def test_weight_is_clamped_to_tensorboards_range(weight, expected):
    assert clamp_weight(weight) == expected


def test_empty_series():
    assert smooth(np.array([]), 0.6).size == 0


def test_outlier_range_uses_5th_to_95th_percentile():
    y = np.concatenate([np.linspace(0, 1, 100), [1000.0]])
    lo, hi = y_range(y, ignore_outliers=True)
    assert hi < 10  # the spike no longer sets the range
    lo2, hi2 = y_range(y, ignore_outliers=False)
    assert hi2 > 1000


def test_range_ignores_non_finite_and_handles_flat():
    assert y_range(np.array([NAN, math.inf]), ignore_outliers=False) is None
    lo, hi = y_range(np.array([2.0, 2.0]), ignore_outliers=True)
    assert lo < 2.0 < hi
