"""Charts and tables for a data-check report: pure functions returning figures and frames."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from core.data.report import DataSummary, PromptLengths
from core.data.tokens import TokenBin


def prompt_length_figure(lengths: PromptLengths) -> go.Figure:
    """Bar chart of prompt lengths in characters, one bar per power-of-two bin."""
    labels = [f"{b.low:,}" if b.low == b.high else f"{b.low:,}-{b.high:,}" for b in lengths.histogram]
    fig = go.Figure(go.Bar(x=labels, y=[b.rows for b in lengths.histogram],
                           hovertemplate="%{x} characters: %{y} rows<extra></extra>"))
    fig.update_layout(xaxis_title="prompt length (characters)", yaxis_title="rows", height=300,
                      margin={"l": 10, "r": 10, "t": 10, "b": 10}, xaxis={"type": "category"})
    return fig


def keys_frame(summary: DataSummary) -> pd.DataFrame:
    """One row per key seen in the rows: how many rows have it and what slime does with it."""
    settings = summary.settings
    roles: dict[str, str] = {}
    for role, key in (("prompt", settings.input_key), ("label", settings.label_key), ("tools", settings.tool_key),
                      ("metadata", settings.metadata_key)):
        if key:
            roles.setdefault(key, role)
    total = summary.object_rows or 1
    return pd.DataFrame({
        "key": list(summary.keys),
        "rows": list(summary.keys.values()),
        "share": [f"{n / total:.0%}" for n in summary.keys.values()],
        "slime reads it as": [roles.get(k, "") for k in summary.keys],
    })


def counts_frame(counts: dict[str, int], name: str) -> pd.DataFrame:
    return pd.DataFrame({name: list(counts), "rows": list(counts.values())})


def token_length_figure(bins: list[TokenBin], limit: int | None) -> go.Figure:
    """Histogram of prompt tokens (rows per bin), with slime's prompt-length limit drawn as a line."""
    fig = go.Figure(go.Bar(x=[(b.low + b.high) / 2 for b in bins], y=[b.rows for b in bins],
                           width=[b.high - b.low + 1 for b in bins],
                           customdata=[[b.low, b.high] for b in bins],
                           hovertemplate="%{customdata[0]}-%{customdata[1]} tokens: %{y} rows<extra></extra>"))
    if limit is not None:
        fig.add_vline(x=limit + 0.5, line_dash="dash", line_color="red",
                      annotation_text=f"--rollout-max-prompt-len {limit:,}", annotation_position="top left")
    fig.update_layout(xaxis_title="prompt tokens", yaxis_title="rows", height=320, bargap=0.05,
                      margin={"l": 10, "r": 10, "t": 30, "b": 10})
    return fig
