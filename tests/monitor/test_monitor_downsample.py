"""A chart's points cut to its pixel columns: every column's min and max kept exactly, short series untouched,
gaps (NaN, infinities) kept, and the figure built from it (the CSV download keeps every point)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from core.monitor.downsample import envelope_indices
from core.monitor.plots import scalar_figure
from core.monitor.runs import RunData, Series
from core.monitor.smoothing import smooth
from core.monitor.views import RolloutAlignment, XAxis, shown_table

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

ALIGN = RolloutAlignment(stride=1, steps_per_rollout=1, how="")


def _columns_of(x: np.ndarray, columns: int) -> np.ndarray:
    """The pixel column of each point, computed apart from the module (x range cut in `columns` equal parts)."""
    x = x.astype(np.float64)
    lo, hi = x.min(), x.max()
    if hi == lo:
        return np.zeros(len(x), dtype=np.int64)
    return np.minimum(((x - lo) / (hi - lo) * columns).astype(np.int64), columns - 1)


def _assert_envelope(x: np.ndarray, y: np.ndarray, columns: int, kept: np.ndarray) -> None:
    assert np.all(np.diff(kept) > 0), "indices ascending, each once (the line keeps the data's order)"
    assert kept[0] == 0 and kept[-1] == len(y) - 1, "first and last point kept"
    col = _columns_of(x, columns)
    for c in np.unique(col):
        members = np.flatnonzero(col == c)
        finite = members[np.isfinite(y[members])]
        shown = np.intersect1d(kept, members)
        if len(finite):
            shown_finite = shown[np.isfinite(y[shown])]
            assert y[shown_finite].min() == y[finite].min() and y[shown_finite].max() == y[finite].max()
            # every original point lies within its column's kept min and max
            assert np.all((y[finite] >= y[shown_finite].min()) & (y[finite] <= y[shown_finite].max()))
        if len(finite) < len(members):
            assert not np.all(np.isfinite(y[shown])), f"column {c}: its gap (a non-finite value) is kept"


def test_short_series_are_sent_whole():
    x = np.arange(2000)
    y = np.random.default_rng(0).normal(size=2000)
    assert np.array_equal(envelope_indices(x, y, 1000), np.arange(2000))
    assert np.array_equal(envelope_indices(x[:5], y[:5], 1000), np.arange(5))
    assert len(envelope_indices(np.arange(0), np.zeros(0), 1000)) == 0


def test_long_series_keep_each_columns_min_and_max_and_fit_the_width():
    n, columns = 300_000, 1000
    x = np.arange(n)
    y = np.sin(x / 500.0) + np.random.default_rng(1).normal(scale=0.3, size=n)
    y[123_456] = 40.0  # a spike must survive
    kept = envelope_indices(x, y, columns)
    assert len(kept) <= 2 * columns + 2 and 123_456 in kept
    _assert_envelope(x, y, columns, kept)


def test_gaps_stay_gaps_and_the_count_stays_bounded():
    n, columns = 50_000, 100
    x = np.arange(n, dtype=np.float64)
    y = np.cos(x / 50.0)
    y[600:49_000:7] = np.nan  # NaN in every column but the first and the last
    y[3] = np.inf
    y[-2] = -np.inf
    kept = envelope_indices(x, y, columns)
    assert len(kept) <= 3 * columns + 2
    _assert_envelope(x, y, columns, kept)
    assert 3 in kept and n - 2 in kept  # the first non-finite value of its column


def test_all_nan_and_constant_series():
    x = np.arange(10_000)
    kept = envelope_indices(x, np.full(10_000, np.nan), 100)
    assert kept[0] == 0 and kept[-1] == 9_999 and len(kept) <= 102
    flat = envelope_indices(x, np.ones(10_000), 100)
    assert len(flat) <= 202 and flat[0] == 0 and flat[-1] == 9_999


def test_wall_time_axis_and_irregular_x():
    wall = pd.to_datetime(1_750_000_000 + np.cumsum(np.r_[0, np.full(9_999, 60.0)]), unit="s", utc=True).to_numpy()
    y = np.random.default_rng(2).normal(size=10_000)
    assert wall.dtype == object  # Timestamps, as x_values gives the wall-time axis
    kept = envelope_indices(wall, y, 200)
    _assert_envelope(np.arange(10_000), y, 200, kept)  # evenly spaced: the same columns as the index's
    assert len(kept) <= 2 * 200 + 2
    np_wall = pd.to_datetime(wall, utc=True).tz_localize(None).to_numpy()
    assert np.array_equal(envelope_indices(np_wall, y, 200), kept)
    gappy = np.r_[np.arange(5_000), 1_000_000 + np.arange(5_000)]  # two clumps: columns follow x, not the index
    kept = envelope_indices(gappy, y, 100)
    _assert_envelope(gappy, y, 100, kept)
    assert len(kept) <= 2 * 100 + 2


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True, width=64), min_size=1, max_size=400),
       st.integers(min_value=1, max_value=60), st.booleans())
def test_property_every_point_within_its_columns_kept_extremes(values, columns, irregular):
    y = np.array(values, dtype=np.float64)
    x = np.cumsum(np.r_[0, np.arange(1, len(y)) % 5]) if irregular else np.arange(len(y))
    kept = envelope_indices(x, y, columns)
    if len(y) <= 2 * columns:
        assert np.array_equal(kept, np.arange(len(y)))
        return
    assert len(kept) <= 3 * columns + 2
    _assert_envelope(x, y, columns, kept)
    finite = np.isfinite(y)
    if finite.any():  # the series' own extremes are always drawn
        assert y[kept][np.isfinite(y[kept])].max() == y[finite].max()
        assert y[kept][np.isfinite(y[kept])].min() == y[finite].min()


def _long_run(n: int) -> RunData:
    steps = np.arange(n)
    values = np.sin(steps / 40.0) + np.random.default_rng(3).normal(scale=0.2, size=n)
    run = RunData(name="a", path="/x", start_time=1000.0)
    run.series["train/loss"] = Series(tag="train/loss", steps=steps, values=values, wall_times=1000.0 + steps,
                                      files=np.zeros(n, np.int32))
    return run


def test_figure_smooths_the_full_series_then_sends_each_traces_envelope():
    run = _long_run(30_000)
    s = run.series["train/loss"]
    fig = scalar_figure([run], "train/loss", axis=XAxis.STEP, weight=0.9, ignore_outliers=False,
                        alignments={"a": ALIGN}, columns=500)
    raw, line = fig.data
    assert len(raw.x) <= 1002 and len(line.x) <= 1002
    full = smooth(s.values, 0.9)  # TensorBoard's curve: smoothed over all 30,000 points, then cut
    kept = np.asarray(line.x)
    np.testing.assert_array_equal(np.asarray(line.y), full[kept])
    np.testing.assert_array_equal(np.asarray(raw.y), s.values[np.asarray(raw.x)])
    assert np.asarray(raw.y).max() == s.values.max() and np.asarray(raw.y).min() == s.values.min()
    np.testing.assert_array_equal(line.customdata[:, 0], kept)  # hover: each kept point's own step and value
    np.testing.assert_array_equal(line.customdata[:, 1], s.values[kept])
    lo, hi = fig.layout.yaxis.range  # the y range is the full series'
    assert lo < s.values.min() and hi > s.values.max()
    table = shown_table([run], ["train/loss"], XAxis.STEP, 0.9, {"a": ALIGN})
    assert len(table) == 30_000  # the CSV download: every point


def test_figure_of_a_short_series_is_exact():
    run = _long_run(1_500)
    fig = scalar_figure([run], "train/loss", axis=XAxis.STEP, weight=0.6, ignore_outliers=False,
                        alignments={"a": ALIGN})
    assert len(fig.data[0].x) == 1_500 and len(fig.data[1].x) == 1_500
    np.testing.assert_array_equal(np.asarray(fig.data[1].y), smooth(run.series["train/loss"].values, 0.6))
