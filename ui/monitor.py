"""The Monitor page's renderings: a run's checklist (each verdict with its evidence, fix, source and cards) and
the launch arguments of W&B runs checked like a launch script. What is judged comes from core.monitor."""

from __future__ import annotations

import json

import streamlit as st

from core.knowledge import get_card
from core.memory import MISSING_NO_SCALARS
from core.monitor import (
    RolloutAlignment,
    RunData,
    Verdict,
    as_script_lines,
    check_config,
    config_rows,
    evidence_rows,
    steps_per_rollout_note,
)
from ui.common import plain, show_findings

STATUS_UI = {"ok": (st.success, ":material/check_circle:"), "warn": (st.warning, ":material/warning:"),
             "fail": (st.error, ":material/error:"), "unknown": (st.info, ":material/help:")}


def show_verdict(v: Verdict) -> None:
    """One verdict: a line when it is fine or undecided, else a box with its fix, source, cards and evidence."""
    box, icon = STATUS_UI[v.status]
    if v.status in ("ok", "unknown") and not v.commands:
        st.markdown(f"{icon} **{plain(v.code)} · {plain(v.title)}**: {plain(v.message)}")
        return
    lines = [f"{v.code} · {v.title}", v.message]
    if v.fix and v.status in ("warn", "fail"):
        lines.append(f"Adjust: {v.fix}")
    if v.source:
        lines.append(f"Source: {v.source}")
    titles = [c.title for c in (get_card(cid) for cid in v.cards) if c]
    if titles:
        lines.append("Read more: " + ", ".join(f"knowledge card '{t}'" for t in titles))
    box(plain("\n\n".join(lines)), icon=icon)
    if v.evidence:
        st.dataframe(evidence_rows(v.evidence), hide_index=True, width="stretch",
                     column_config={"what": "Evidence", "value": "Value"})
    for command in v.commands:
        st.code(command, language="bash")


def show_checklists(results: list[tuple[RunData, list[Verdict]]], alignments: dict[str, RolloutAlignment]) -> None:
    """Each run's checklist in an expander (open when it is the only run or something failed), with links to
    the knowledge cards its verdicts name."""
    for run, _ in results:
        if not run.scalar_count():
            st.warning(f"{plain(run.name)}: {MISSING_NO_SCALARS}, so its checklist has nothing to judge.",
                       icon=":material/block:")
    for run, verdicts in results:
        counts = {s: sum(v.status == s for v in verdicts) for s in ("fail", "warn", "ok", "unknown")}
        label = (f"{plain(run.name)}: {counts['fail']} fail, {counts['warn']} warn, {counts['ok']} ok, "
                 f"{counts['unknown']} not enough data")
        with st.expander(label, expanded=len(results) == 1 or counts["fail"] > 0):
            st.caption(plain(f"Rollout index: {alignments[run.name].how}."))
            for v in verdicts:
                show_verdict(v)
            cards = sorted({c for v in verdicts for c in v.cards})
            cols = st.columns(max(1, len(cards)))
            for col, cid in zip(cols, cards, strict=False):
                card = get_card(cid)
                if card:
                    col.page_link("pages/knowledge.py", label=card.title, icon=":material/menu_book:",
                                  query_params={"card": cid})


@st.cache_data(max_entries=32, show_spinner=False)
def checked_config(config_json: str, gpus: int):
    """The argument form of a run's config and the launch checker's report on it (kept per config)."""
    return check_config(json.loads(config_json), gpus=gpus)


def wandb_launch_arguments(runs: list[RunData], gpus: int) -> None:
    """For each W&B run: what it is, its logged config, and that config written back as launch arguments and
    checked like a launch script."""
    wandb_runs = [r for r in runs if r.source == "wandb" and r.wandb is not None]
    if wandb_runs:
        st.subheader("4. Launch arguments of the W&B runs")
        st.caption("slime logs its parsed arguments as the run's W&B config; they are written back here as launch "
                   "arguments (values equal to a flag's default left out) and checked like a launch script. Values "
                   "slime computes at start-up count as given.")
    for ri, run in enumerate(wandb_runs):
        info = run.wandb
        with st.container(border=True):
            meta = [f"W&B run {info.run_id or '?'}"]
            meta += [f"project {info.project}"] if info.project else []
            meta += [f"name {info.display_name}"] if info.display_name else []
            meta += ["offline" if info.offline else "online"] if info.offline is not None else []
            meta += [f"host {info.host}"] if info.host else []
            meta += [f"exit code {info.exit_code}"] if info.exit_code is not None else [
                "no exit recorded (running, or stopped abruptly)"]
            st.markdown(f"**{plain(run.name)}**")
            st.caption(plain(" · ".join(meta)))
            if not info.config:
                st.info("This run's files hold no config (slime logs its arguments when it opens the run).")
                continue
            note = steps_per_rollout_note(info.config)
            if note:
                st.caption(plain(note))
            with st.expander(f"All {len(info.config)} config values, as logged"):
                st.dataframe(config_rows(info.config), hide_index=True, width="stretch")
            form, report = checked_config(json.dumps(info.config, sort_keys=True, default=str), gpus)
            if not form.args:
                st.info("The config sets no launch flag away from its default.")
            else:
                st.code(as_script_lines(form.args), language="bash")
            skipped = len(form.not_flags) + len(form.not_representable)
            if skipped:
                st.caption(plain(f"{skipped} config key(s) are not launch flags or cannot be written back as words: "
                                 + ", ".join((form.not_flags + form.not_representable)[:12])
                                 + (" ..." if skipped > 12 else "")))
            if report is not None:
                show_findings(report.findings, key_prefix=f"mon_cfg_{ri}",
                              empty_message="The launch checker finds nothing wrong with these arguments.")
