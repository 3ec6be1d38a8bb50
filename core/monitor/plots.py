"""Plot builders: pure functions from runs to plotly figures (no Streamlit here)."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from core.monitor.downsample import PLOT_COLUMNS, envelope_indices
from core.monitor.runs import RunData
from core.monitor.smoothing import smooth, y_range
from core.monitor.views import X_AXIS_LABELS, RolloutAlignment, XAxis, x_values

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
           "#bcbd22", "#17becf")
WEBGL_ABOVE = 5000
MAX_RESTART_MARKS = 20  # per run and tag; every restart is still listed among the read findings


def plot_text(text: str) -> str:
    """Names from files shown in a figure: plotly reads '<...>' as markup and '%{...}' as a template, so
    those characters are swapped for look-alikes."""
    return str(text).replace("<", "\u2039").replace(">", "\u203a").replace("%", "\uff05").replace("{", "(").replace(
        "}", ")")[:200]


def _rgba(hex_color: str, alpha: float) -> str:
    h = hex_color.lstrip("#")
    r, g, b = int(h[0:2], 16), int(h[2:4], 16), int(h[4:6], 16)
    return f"rgba({r},{g},{b},{alpha})"


def scalar_figure(runs: list[RunData], tag: str, *, axis: XAxis, weight: float, ignore_outliers: bool,
                  alignments: dict[str, RolloutAlignment], mark_restarts: bool = True,
                  height: int = 320, columns: int = PLOT_COLUMNS) -> go.Figure:
    """One tag, every run overlaid: raw values faint, TensorBoard-smoothed line on top, restarts marked.

    Smoothing and the y range are computed on the full series; each trace then carries only the points a chart
    `columns` pixels wide can show (`downsample.envelope_indices`: min and max per pixel column, the raw and the
    smoothed line each by its own values), and hover shows each kept point's own step and raw value."""
    fig = go.Figure()
    all_y = []
    for i, run in enumerate(runs):
        s = run.series.get(tag)
        if s is None or not len(s.steps):
            continue
        color = PALETTE[i % len(PALETTE)]
        label = plot_text(run.name)
        x = x_values(s, axis, run, alignments[run.name])
        sm = smooth(s.values, weight)
        all_y.append(s.values)
        if weight > 0:
            raw = envelope_indices(x, s.values, columns)
            scatter = go.Scattergl if len(raw) > WEBGL_ABOVE else go.Scatter
            fig.add_trace(scatter(x=x[raw], y=s.values[raw], mode="lines", name=f"{label} (raw)",
                                  line={"color": _rgba(color, 0.25), "width": 1}, legendgroup=label,
                                  showlegend=False, hoverinfo="skip"))
        kept = envelope_indices(x, sm, columns)
        scatter = go.Scattergl if len(kept) > WEBGL_ABOVE else go.Scatter
        custom = np.column_stack([s.steps[kept], s.values[kept]])
        fig.add_trace(scatter(
            x=x[kept], y=sm[kept], mode="lines", name=label, legendgroup=label, line={"color": color, "width": 2},
            customdata=custom,
            hovertemplate=(f"{label}<br>step %{{customdata[0]}}<br>value %{{customdata[1]}}"
                           "<br>smoothed %{y:.6g}<br>x %{x}<extra></extra>")))
        if mark_restarts and axis in (XAxis.STEP, XAxis.ROLLOUT):
            # each mark is a shape plotly draws one by one: a file with thousands of restarts shows the first few
            for mark in [m for m in run.restarts if m.tag == tag][:MAX_RESTART_MARKS]:
                xs = x_values(type(s)(tag=tag, steps=np.array([mark.step]), values=np.array([0.0]),
                                      wall_times=np.array([mark.wall_time]), files=np.array([0])),
                              axis, run, alignments[run.name])
                fig.add_vline(x=float(xs[0]), line={"color": color, "dash": "dash", "width": 1},
                              annotation_text=f"restart ({mark.replaced} replaced)", annotation_position="top left",
                              annotation_font_size=10)
    rng = y_range(np.concatenate(all_y), ignore_outliers=ignore_outliers) if all_y else None
    fig.update_layout(title={"text": plot_text(tag), "font": {"size": 14}}, height=height, margin={"l": 50, "r": 10, "t": 40,
                                                                                          "b": 40},
                      xaxis_title=X_AXIS_LABELS[axis], hovermode="x unified" if len(runs) > 1 else "closest",
                      legend={"orientation": "h", "y": -0.25})
    if rng is not None:
        fig.update_yaxes(range=list(rng))
    return fig


def placeholder_figure(text: str, height: int = 160) -> go.Figure:
    """An empty chart area holding `text`, shown before any run is loaded. Drawing it makes the browser load
    its chart code (plotly.js, about 4.7 MB, ~1.5 s in a headless Chromium on 2 cores) while the user picks the
    files, instead of after the upload, in front of the first curve."""
    fig = go.Figure()
    fig.add_annotation(text=plot_text(text), showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper",
                       font={"size": 13, "color": "#7f7f7f"})
    fig.update_layout(height=height, margin={"l": 10, "r": 10, "t": 10, "b": 10},
                      xaxis={"visible": False}, yaxis={"visible": False})
    return fig
