"""Check my launch script: paste or upload it, see every flag's owner, the batch arithmetic and what slime,
Megatron and SGLang would refuse, before anything reaches the cluster. The script is read as text only."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from core.batch import plan_inputs_from_flags
from core.data import DataKeys, keys_from_launch
from core.findings import Severity, dumps
from core.knowledge import get_card
from core.launch import (
    MAX_SCRIPT_CHARS,
    CheckOptions,
    CheckReport,
    check_launch_script,
    check_script_bytes,
    report_json,
)
from core.memory import MAX_GPUS
from core.pins import SLIME_SHORT
from core.plan import load_gpus, report_with_plan
from ui.common import (
    CHECKOUT_KEY,
    MEGATRON_KEY,
    SGLANG_KEY,
    ensure_app_frame,
    get_store,
    own_source,
    plain,
    profile_caption,
    profile_or_guest,
    remember_launch_keys,
    show_findings,
    versions_caption,
)
from ui.memory import PageMemory

ensure_app_frame()

PASTE, UPLOAD = "Paste", "Upload a file"
AUTO = "from the script"
NO_GPU = "not said (no memory plan)"


def own_versions() -> tuple[Path | None, Path | None, Path | None, bool]:
    """The user's slime checkout and SGLang / Megatron sources, if they named ones the app may read;
    (slime, sglang, megatron, refused?). Remembered in the profile when asked."""
    with st.expander("Check against my own versions (optional)", expanded=bool(profile.slime_checkout)):
        st.caption(f"By default flags are checked against slime {SLIME_SHORT} and the Megatron / SGLang versions "
                   "it pins. Name your own slime checkout (any commit, or a fork that keeps slime's layout) and, if "
                   "you have them, the SGLang and Megatron you run: they are read (never changed or run) only inside "
                   "the roots the app may read. Without the last two, the checkout's docker files say which ones "
                   "it builds with.")
        raw = memory.widget(st.text_input, "slime checkout directory", "checkout", profile.slime_checkout or "",
                            placeholder="/path/to/slime")
        c1, c2 = st.columns(2)
        raw_sglang = memory.widget(c1.text_input, "SGLang (installed sglang package or checkout)", "sglang_source",
                                   profile.sglang_source or "", placeholder="/usr/lib/python3/site-packages/sglang")
        raw_megatron = memory.widget(c2.text_input, "Megatron-LM checkout", "megatron_source",
                                     profile.megatron_source or "", placeholder="/root/Megatron-LM")
        remember = st.button("Remember these in my profile", key="ca_remember_versions")
    for key in (CHECKOUT_KEY, SGLANG_KEY, MEGATRON_KEY):
        st.session_state.pop(key, None)  # set again below only for usable directories
    found: dict[str, Path | None] = {}
    refused = False
    for kind, text in (("slime", raw), ("sglang", raw_sglang), ("megatron", raw_megatron)):
        path, problem = own_source(text, kind)
        if problem:
            st.error(plain(problem))
            refused = True
        found[kind] = path
    if found["slime"] is None and (found["sglang"] or found["megatron"]):
        st.error("An SGLang or Megatron source is used together with your slime checkout: name the checkout too.")
        refused = True
    if refused:
        return None, None, None, True
    for key, kind in ((CHECKOUT_KEY, "slime"), (SGLANG_KEY, "sglang"), (MEGATRON_KEY, "megatron")):
        if found[kind] is not None:
            st.session_state[key] = str(found[kind])
    if remember:
        get_store().update_profile(profile.name, slime_checkout=raw.strip() or None,
                                   sglang_source=raw_sglang.strip() or None,
                                   megatron_source=raw_megatron.strip() or None)
        st.success("Saved in your profile: the other pages follow these versions.")
    return found["slime"], found["sglang"], found["megatron"], False


def read_input() -> tuple[str | None, bytes | None]:
    """The pasted text or the uploaded bytes (one of them), or (None, None)."""
    source = memory.widget(st.radio, "Script", "source", PASTE, options=(PASTE, UPLOAD), horizontal=True,
                           label_visibility="collapsed")
    if source == PASTE:
        text = memory.widget(st.text_area, "Launch script or argument list", "text", "", height=260,
                             placeholder="#!/bin/bash\nsource scripts/models/qwen3-4B.sh\n...\n"
                                         "ray job submit ... -- python3 train.py ${MODEL_ARGS[@]} ...")
        if len(text) > MAX_SCRIPT_CHARS:
            st.error(f"That paste is {len(text):,} characters; the checker reads at most {MAX_SCRIPT_CHARS:,}. "
                     "Paste the launch script alone.")
            return None, None
        return (text, None) if text.strip() else (None, None)
    upload = st.file_uploader("Launch script (.sh, .txt)", key="ca_upload", type=["sh", "bash", "txt"])
    if upload is None:
        return None, None
    if st.session_state.get("ca_checked_upload") != upload.file_id:  # a new upload is the user's own input
        st.session_state["ca_checked_upload"] = upload.file_id
        st.session_state["ca_new_upload"] = True
    if upload.size > MAX_SCRIPT_CHARS:
        st.error(f"{plain(upload.name)} is {upload.size:,} bytes; the checker reads at most {MAX_SCRIPT_CHARS:,}.")
        return None, None
    return None, upload.getvalue()


def categories_table(report: CheckReport) -> None:
    if not report.categories:
        return
    st.subheader("Who reads each flag")
    card = get_card("argument-categories")
    st.caption("slime, Megatron and SGLang each parse the whole command line and ignore what they do not know; "
               "'unknown' means no parser reads the flag." + (f" More: knowledge card '{card.title}'." if card
                                                              else ""))
    frame = pd.DataFrame([{"flag": flag, "owner": owner, "value": shown_value(flag, report.values.get(flag))}
                          for flag, owner in report.categories.items()])
    counts = frame["owner"].value_counts().to_dict()
    st.write(", ".join(f"{k}: {v}" for k, v in sorted(counts.items())))
    st.dataframe(frame, hide_index=True, width="stretch", key="ca_categories")


def shown_value(flag: str, value: str | None) -> str:
    """A flag's value for the table, in words where the script gives none: a switch, or a value only known when
    the script runs (a variable or command the static reader does not resolve)."""
    if value is not None:
        return value
    from core.launch import load_catalog

    spec = load_catalog().lookup(flag)
    if spec is not None and not spec.takes_value:
        return "(switch: on)"
    return "(known only when the script runs)" if spec is not None else "(no value read)"


def training_gpus(layout: dict, gpus: int | None) -> tuple[int | None, bool]:
    """The training GPUs to hand to the calculator, and whether they come from the GPU count the check used (the
    profile's) because the script's own count is known only when it runs (`NUM_GPUS=${NUM_GPUS:-$(nvidia-smi ...)}`):
    colocated, the actor has them all; disaggregated, what the rollout GPUs leave."""
    if layout.get("actor_gpus") is not None:
        return layout["actor_gpus"], False
    if not gpus:
        return None, False
    if layout.get("mode") == "colocated":
        return gpus, True
    rollout = layout.get("rollout_gpus")
    if layout.get("mode") == "disaggregated" and rollout is not None and 0 < rollout < gpus:
        return gpus - rollout, True
    return None, False


def open_in_calculator(report: CheckReport | None, gpus: int | None) -> None:
    """A button to the batch-size calculator that sets every one of its fields from this script: what the
    script sets is carried over, what it does not set is cleared there (never kept from an earlier visit); the
    training GPUs the check used when the script's own count is known only at run time."""
    batch = report.summary.batch if report is not None else None
    if not batch:
        st.page_link("pages/batch_calculator.py", label="Open the batch-size calculator", icon=":material/calculate:")
        return
    actor, assumed = training_gpus(report.summary.gpu_layout or {}, gpus)
    planned = plan_inputs_from_flags(report.values, training_gpus=actor)
    handed = {"rbs": planned.rollout_batch_size, "n": planned.n_samples_per_prompt,
              "gbs": planned.global_batch_size, "steps": planned.num_steps_per_rollout,
              "gpus": planned.training_gpus, "tp": planned.tensor_parallel, "pp": planned.pipeline_parallel,
              "cp": planned.context_parallel, "mbs": planned.micro_batch_size, "num_rollout": planned.num_rollout,
              "dynamic": planned.dynamic_batching}

    def hand_over() -> None:
        st.session_state["bc_prefill"] = handed
        st.session_state["bc_prefill_from"] = "your launch script on the checker" + (
            f" (Training GPUs: the {actor} GPUs the check used, as the script's own count is known only when it "
            "runs)" if assumed else "")

    if st.button("Open this script's batch sizes in the calculator", icon=":material/calculate:",
                 key="ca_to_calculator", on_click=hand_over):
        st.switch_page("pages/batch_calculator.py")


def open_in_plan(report: CheckReport | None, text: str | None, data: bytes | None, gpu: str | None,
                 gpus: int | None) -> None:
    """A button to "Will it fit?" that plans this script there, on the GPU type chosen here (or the plan page's
    own choice when none is), with the GPUs the check used."""
    if report is None:
        st.page_link("pages/plan.py", label="Plan memory on the Will it fit? page", icon=":material/memory:")
        return
    script = text if text is not None else (data or b"").decode("utf-8", errors="replace")
    handed = {"script": script, "gpu": gpu, "gpus": gpus}

    def hand_over() -> None:
        st.session_state["plan_prefill"] = handed

    if st.button("Plan this script's memory", icon=":material/memory:", key="ca_to_plan", on_click=hand_over):
        st.switch_page("pages/plan.py")


def launch_keys_of(report: CheckReport) -> DataKeys | None:
    """The data keys a checked launch script sets, when it names its data and every key value is resolved."""
    if "--prompt-data" not in report.values:
        return None
    flags = ("--input-key", "--label-key", "--tool-key", "--metadata-key", "--multimodal-keys")
    given = {f: report.values[f] for f in flags if f in report.values}
    if any(v is None for v in given.values()):
        return None
    try:
        return keys_from_launch({**given, "--apply-chat-template": "--apply-chat-template" in report.values})
    except ValueError:
        return None


def record(report: CheckReport) -> None:
    """A check that ran on the user's own input (typed, pasted, uploaded or re-checked with other options) is
    kept in the history on What's done; showing the remembered script again records nothing."""
    fresh_upload = st.session_state.pop("ca_new_upload", False)
    if not (memory.user_changed or fresh_upload):
        return
    errors = [f for f in report.findings if f.severity == Severity.ERROR]
    keys = launch_keys_of(report)
    if keys is not None:
        remember_launch_keys(profile, "check_args", keys)
    s = report.summary
    memory.accept("ran the check", f"{s.error} error(s), {s.warning} warning(s), "
                                   f"{s.info} note(s) in {s.flags} flag(s) of a "
                                   f"{report.entry or 'launch'} command",
                  done=[f"Checked {s.flags} flag(s) of a {report.entry or 'launch'} command"],
                  todo=[f"{f.code}: {f.message}" + (f" (line {f.line})" if f.line else "") for f in errors[:10]],
                  output_name="check-args.json", output=dumps(report_json(report)), output_mime="application/json")


st.title("Check my launch script")
profile = profile_or_guest()  # works before the first-visit questions; invites them
profile_caption(profile)
memory = PageMemory("check_args", "ca", profile)
st.markdown(
    "slime hands the command line to Megatron's and SGLang's parsers, which **silently ignore flags they do not "
    "know**: a typo such as `--n-sample-per-prompt 8` is dropped and the default 1 is used. Most of slime's own "
    "checks only run after `ray job submit`, on the cluster. This page runs them here, on the text of your "
    "script: nothing in it is executed.")

memory.done_caption()
text, data = read_input()
c1, c2, c3 = st.columns(3)
gpus = memory.widget(c1.number_input, "GPUs you have (from your profile)", "gpus", profile.gpus_total, min_value=1,
                     max_value=MAX_GPUS, step=1)
gpus_per_node = memory.widget(c2.number_input, "GPUs per node (from your profile; 0: not said)", "gpus_per_node",
                              profile.gpus_per_node or 0, min_value=0, max_value=MAX_GPUS, step=1,
                              help="Checks --num-gpus-per-node against the GPUs your nodes have (GPU004).")
entry_choice = memory.widget(c3.selectbox, "Entry for a bare argument list", "entry", AUTO,
                             options=(AUTO, "train.py", "train_async.py"),
                             help="A script names its own entry (python3 train.py ...); a pasted flag list does not.")
gpu_names = [NO_GPU] + [g.name for g in load_gpus()]
gpu_choice = memory.widget(st.selectbox, "GPU type, to judge memory too (from your profile)", "gpu",
                           profile.gpu_model if profile.gpu_model in gpu_names else NO_GPU, options=gpu_names,
                           help="Adds the memory plan's verdicts (PLAN001-PLAN003 and PLAN005, as check-args --gpu) to the report.")
gpu = None if gpu_choice == NO_GPU else gpu_choice
checkout, sglang_source, megatron_source, refused = own_versions()

report: CheckReport | None = None
if (text is not None or data is not None) and not refused:
    options = CheckOptions(gpus=int(gpus), gpus_per_node=int(gpus_per_node) or None, entry=None if entry_choice == AUTO else entry_choice,
                           catalog_path=checkout, sglang_source=sglang_source, megatron_source=megatron_source)
    with st.spinner("Checking"):
        report = check_launch_script(text, options) if text is not None else check_script_bytes(data, options)
        if gpu is not None:
            report = report_with_plan(report, gpu, int(gpus), int(gpus_per_node) or None)

if report is not None:
    s = report.summary
    m1, m2, m3, m4 = st.columns(4)
    m1.metric("Errors", s.error)
    m2.metric("Warnings", s.warning)
    m3.metric("Flags", s.flags)
    m4.metric("Entry", report.entry or "unknown")
    if report.ok:
        st.success("No errors: slime would accept these flags as far as a static check can tell.",
                   icon=":material/check_circle:")
    else:
        st.error("slime would stop, or silently do something else, because of the errors below.",
                 icon=":material/error:")
    versions_caption(s.versions)
    if s.pieces:
        with st.expander("How your checkout's parser was read"):
            for piece in s.pieces:
                effect = f" ({piece['effect']})" if piece.get("effect") else ""
                st.write(plain(f"{piece['name']}: {piece['status']}. {piece['detail']}{effect}"))
    show_findings(report.findings, key_prefix="ca_findings")
    categories_table(report)
    st.download_button("Download the report (JSON)", dumps(report_json(report)), file_name="check-args.json",
                       mime="application/json", key="ca_download")
    record(report)
memory.progress(summary="no script checked yet" if report is None else "checked")
if report is None:
    st.info("Paste a launch script or upload one to check it.")

open_in_calculator(report, int(gpus) if gpus else None)
open_in_plan(report, text, data, gpu, int(gpus) if gpus else None)
