"""The Monitor page's GPU parts: where GPU logs come from, and the per-GPU charts over time with slime's phases.

Logic lives in core.monitor.gpu; this only lays out widgets and keeps the last reads in the session (a rerun
re-reads only when a file changed).
"""

from __future__ import annotations

import os
from pathlib import Path

import streamlit as st

from core.monitor import (
    RECORD_COMMAND,
    SOURCE_LABELS,
    RunData,
    RunGpus,
    discover_gpu_logs,
    gpu_figure,
    read_run_gpus,
    run_wandb_files,
    search_dirs,
    summarize_host,
)
from core.paths import PathRefused, resolve_allowed
from ui.common import plain

CACHE_KEY = "mon_gpu_reads"
CURSORS_KEY = "mon_gpu_cursors"
MAX_KEPT = 8
METRIC_LABELS = {"utilization": "Utilization (%)", "memory_used": "Memory used (GiB)"}
METRIC_TITLES = {"utilization": "GPU utilization", "memory_used": "GPU memory used"}


def named_gpu_logs(memory) -> list[str]:
    """The extra GPU logs the user lists (one path a line, inside the configured roots), remembered per profile."""
    with st.expander("GPU logs kept beside the runs (nvidia-smi CSV logs, job logs)"):
        st.caption("nvidia-smi CSV logs and job logs with slime's Memory-Usage lines inside a run's folder are found "
                   "on their own, as are the system metrics in W&B run files. List other files here, one path a "
                   "line. To record one per node:")
        st.code(RECORD_COMMAND, language="bash")
        typed = memory.widget(st.text_area, "GPU log files (one path a line)", "gpu_logs", "", height=80)
    out = []
    for line in str(typed).splitlines()[:64]:
        if not line.strip():
            continue
        try:
            out.append(str(resolve_allowed(line.strip(), want="file").path))
        except PathRefused as exc:
            st.error(plain(str(exc)), icon=":material/block:")
    return out


def _identity(paths) -> tuple:
    out = []
    for p in paths:
        try:
            st_ = os.stat(p)
            out.append((str(p), st_.st_size, st_.st_mtime_ns))
        except OSError:
            out.append((str(p), -1, 0))
    return tuple(out)


def _allowed_dirs(run: RunData) -> list[Path]:
    """Where to look for a run's GPU logs: its search folders inside the configured roots, else the run's own
    folder (already accepted: inside the roots, or the upload's own folder)."""
    out = []
    for d in search_dirs(run):
        try:
            out.append(resolve_allowed(str(d), want="dir").path)
        except PathRefused:
            out.append(Path(run.path))
    return list(dict.fromkeys(out))


def gpus_for(runs: list[RunData], named: list[str]) -> dict[str, RunGpus]:
    """Each run's GPU data by run name, read again only when one of its files changed."""
    kept: dict = st.session_state.setdefault(CACHE_KEY, {})
    out = {}
    for run in runs:
        dirs = _allowed_dirs(run)
        found = [p for d in dirs if Path(d).is_dir() for p in discover_gpu_logs(d)]
        key = (run.path, run.name, run.scalar_count(), _identity([*named, *found, *run_wandb_files(run)]))
        hit = kept.get(key)
        if hit is None:  # a file changed: the text logs that only grew are read from where they stopped
            cursors = st.session_state.setdefault(CURSORS_KEY, {})
            if run.path not in cursors and len(cursors) >= MAX_KEPT:
                cursors.pop(next(iter(cursors)))
            hit = read_run_gpus(run, named, dirs=dirs, cursors=cursors.setdefault(run.path, {}))
            kept[key] = hit
            while len(kept) > MAX_KEPT:
                kept.pop(next(iter(kept)))
        out[run.name] = hit
    return out


def gpu_section(runs: list[RunData], gpus: dict[str, RunGpus], memory) -> None:
    """Per run: the GPU files read, a table of GPUs, and utilization or memory over time with the phases."""
    with_data = [r for r in runs if gpus.get(r.name) and gpus[r.name].data.series]
    st.subheader("GPUs over time")
    if not with_data:
        st.info("No GPU data for these runs (W&B system metrics, nvidia-smi CSV logs, or slime's Memory-Usage lines "
                "in a job log). The GPU check above says where it looked and how to record some.")
        return
    metric_label = memory.widget(st.radio, "Show", "gpu_metric", METRIC_LABELS["utilization"],
                                 options=list(METRIC_LABELS.values()), horizontal=True)
    metric = next(k for k, v in METRIC_LABELS.items() if v == metric_label)
    for run in with_data:
        g = gpus[run.name]
        st.markdown(f"**{plain(run.name)}**")
        st.caption(plain(" · ".join(f"{Path(f.path).name}: {SOURCE_LABELS.get(f.kind, 'no GPU data')}, "
                                    f"{f.gpus} GPU(s), {f.samples} samples" for f in g.data.files)))
        notes = g.data.notes + [f"{Path(f.path).name}: {n}" for f in g.data.files for n in f.notes]
        if notes:
            with st.expander(f"Notes on the GPU files ({len(notes)})"):
                for note in notes[:50]:
                    st.markdown(f"- {plain(note)}")
        if not g.phases.known:
            st.caption("This run logs no perf/rollout_time and perf/train_time, so no phases are shaded.")
        for source in [s for s in ("nvidia-smi", "wandb", "slime-log") if any(x.source == s for x in g.data.series)]:
            series = [s for s in g.data.series if s.source == source]
            if metric == "utilization" and source == "slime-log":
                continue  # Memory-Usage lines carry memory only
            fig = gpu_figure(series, g.phases, metric, title=f"{METRIC_TITLES[metric]} · {SOURCE_LABELS[source]}")
            st.plotly_chart(fig, key=f"mon_gpu_{run.name}_{source}_{metric}", config={"displaylogo": False})
        rows = [{"GPU": s.label, "source": SOURCE_LABELS[s.source], "role": s.role, "samples": m.samples,
                 "median %": m.utilization_median, "p10 %": m.utilization_p10, "p90 %": m.utilization_p90,
                 "idle share": m.idle_fraction,
                 "memory max GiB": None if m.memory_max_mib is None else round(m.memory_max_mib / 1024, 1),
                 "of GiB": None if m.memory_total_mib is None else round(m.memory_total_mib / 1024, 1),
                 "how the role was told": s.role_how}
                for s, m in zip(g.data.series, g.summaries(), strict=True)]
        with st.expander(f"Every GPU in numbers ({len(rows)})"):
            st.dataframe(rows, hide_index=True, width="stretch")
            hosts = [summarize_host(h) for h in g.data.host]
            if hosts:
                st.caption("Nodes: CPU (median, %) and host memory (highest, % of the node's)")
                st.dataframe(hosts, hide_index=True, width="stretch")
