"""Per-GPU charts over wall time, with slime's phases as a band above them (no Streamlit here).

Top row: when the run generated, trained and updated weights (from its perf/ curves, or its job log);
below: one line per GPU (utilization in %, or memory in GiB), so a GPU that sits idle while the others
work shows as a flat line under a shaded phase. Long series are averaged into at most `MAX_POINTS` time
bins, so a days-long log stays light in the browser.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from core.monitor.gpu.models import SOURCE_LABELS, GpuSeries
from core.monitor.gpu.phases import Phases
from core.monitor.plots import PALETTE, plot_text

MAX_POINTS = 1500
MAX_LINES = 64
PHASE_ROWS = (("rollout", "generating", "#ff7f0e"), ("train", "training", "#1f77b4"),
              ("update", "weight update", "#2ca02c"))
ROLE_DASH = {"training": "solid", "rollout": "dot", "colocated": "solid", "unknown": "dashdot"}
METRICS = {"utilization": ("GPU utilization (%)", 1.0), "memory_used": ("GPU memory used (GiB)", 1 / 1024)}


def binned(times: np.ndarray, values: np.ndarray, max_points: int = MAX_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """Mean of the finite values in at most `max_points` equal time bins (the points themselves when fewer)."""
    ok = np.isfinite(values) & np.isfinite(times)
    t, v = times[ok], values[ok]
    if len(t) <= max_points:
        return t, v
    edges = np.linspace(t[0], t[-1], max_points + 1)
    idx = np.clip(np.searchsorted(edges, t, side="right") - 1, 0, max_points - 1)
    counts = np.bincount(idx, minlength=max_points)
    sums = np.bincount(idx, weights=v, minlength=max_points)
    mids = (edges[:-1] + edges[1:]) / 2
    keep = counts > 0
    return mids[keep], sums[keep] / counts[keep]


def _stamp(t) -> pd.DatetimeIndex:
    """Seconds since the epoch as UTC times, to the millisecond (NaN becomes a gap)."""
    ms = np.round(np.asarray(t, dtype=np.float64) * 1000.0)
    return pd.to_datetime(ms, unit="ms", utc=True)


def _phase_band(fig: go.Figure, phases: Phases, lo: float, hi: float) -> None:
    for row, (name, label, color) in enumerate(PHASE_ROWS):
        windows = [(a, b) for a, b in getattr(phases, name) if b >= lo and a <= hi]
        if not windows:
            continue
        xs: list = []
        ys: list = []
        for a, b in windows:
            xs += [a, a, b, b, None]
            ys += [row, row + 0.8, row + 0.8, row, None]
        stamps = _stamp([np.nan if x is None else x for x in xs])
        fig.add_trace(go.Scatter(x=stamps, y=ys, fill="toself", mode="lines", line={"width": 0, "color": color},
                                 fillcolor=color, name=label, legendgroup="phases", hoverinfo="skip",
                                 showlegend=True), row=1, col=1)


def gpu_figure(series: list[GpuSeries], phases: Phases, metric: str = "utilization", height: int = 480,
               title: str = "") -> go.Figure:
    """Every GPU's `metric` ("utilization" or "memory_used") over wall time, phases above."""
    label, scale = METRICS[metric]
    shown = [s for s in series if np.isfinite(getattr(s, metric)).any()][:MAX_LINES]
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.14, 0.86], vertical_spacing=0.03)
    lo = min((float(s.times[0]) for s in shown), default=0.0)
    hi = max((float(s.times[-1]) for s in shown), default=0.0)
    _phase_band(fig, phases, lo, hi)
    for i, s in enumerate(shown):
        t, v = binned(s.times, getattr(s, metric))
        name = plot_text(f"{s.label} ({s.role})" if s.role != "unknown" else s.label)
        fig.add_trace(go.Scattergl(
            x=_stamp(t), y=v * scale, mode="lines", name=name, legendgroup=name,
            line={"color": PALETTE[i % len(PALETTE)], "width": 1.5, "dash": ROLE_DASH.get(s.role, "solid")},
            hovertemplate=f"{name}<br>%{{x}}<br>%{{y:.1f}}<extra>{plot_text(SOURCE_LABELS[s.source])}</extra>"),
            row=2, col=1)
    fig.update_yaxes(showticklabels=False, showgrid=False, range=[-0.1, len(PHASE_ROWS)], row=1, col=1,
                     fixedrange=True)
    fig.update_yaxes(title_text=label, row=2, col=1, rangemode="tozero",
                     range=[0, 102] if metric == "utilization" else None)
    fig.update_xaxes(title_text="Wall time (UTC)", row=2, col=1)
    fig.update_layout(title={"text": title or label, "font": {"size": 14}}, height=height,  # our own words
                      margin={"l": 50, "r": 10, "t": 40, "b": 40}, legend={"orientation": "h", "y": -0.3},
                      hovermode="closest")
    return fig
