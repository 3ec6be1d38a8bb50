"""The plan's figures (plotly, no Streamlit): memory per GPU, one stacked bar per phase or pipeline stage."""

from __future__ import annotations

import plotly.graph_objects as go

from core.plan.models import GIB, Plan

COLORS = {"weights": "#4C78A8", "gradients": "#72B7B2", "optimizer": "#54A24B", "activations": "#F58518",
          "logits": "#E45756", "logprob_workspace": "#FF9DA6", "logprob_pass": "#B279A2", "overhead": "#BAB0AC",
          "sglang_weights": "#9D755D", "kv_pool": "#EECA3B", "training_state": "#79706E"}


def phase_figure(plan: Plan) -> go.Figure:
    """Stacked bars: what one GPU holds in each phase (training; rollout, with what training leaves behind on a
    colocated GPU), against the GPU's memory as a line."""
    fig = go.Figure()
    names = [p.name for p in plan.phases]
    terms = list(dict.fromkeys(k for p in plan.phases for k in p.resident))
    for term in terms:
        fig.add_bar(name=term, x=names, y=[p.resident.get(term, 0) / GIB for p in plan.phases],
                    marker_color=COLORS.get(term))
    fig.add_hline(y=plan.gpu.memory_bytes / GIB, line_dash="dash",
                  annotation_text=f"{plan.gpu.name}: {plan.gpu.memory_bytes / GIB:.1f} GiB")
    fig.update_layout(barmode="stack", yaxis_title="GiB per GPU", height=420, margin={"t": 30, "b": 30},
                      legend={"orientation": "h"})
    return fig


def stage_figure(plan: Plan) -> go.Figure:
    """One bar per pipeline stage: the training peak of a GPU of that stage."""
    stages = plan.training.stages
    fig = go.Figure(go.Bar(x=[f"stage {s.stage} ({s.layers} layers)" for s in stages],
                           y=[s.peak_bytes / GIB for s in stages], marker_color="#4C78A8"))
    fig.add_hline(y=plan.gpu.memory_bytes / GIB, line_dash="dash")
    fig.update_layout(yaxis_title="GiB per GPU (training peak)", height=300, margin={"t": 20, "b": 30})
    return fig
