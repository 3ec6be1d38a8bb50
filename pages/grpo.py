"""GRPO setup: prerequisites, the few answers the draft still needs, and a checked launch-script draft."""

import pandas as pd
import streamlit as st

from core.data.rules import DataKeys
from core.drafts.launch import DraftRequest, draft_launch_script, hyperparameter_sources, record_for
from core.model_scripts import load_model_scripts, match_model
from core.pins import slime_source
from ui.common import (
    ensure_app_frame,
    plain,
    profile_caption,
    remember_launch_keys,
    require_profile,
    save_record,
    saved_launch_keys,
)
from ui.drafts import show_draft

ensure_app_frame()

st.title("GRPO setup")
profile = require_profile()
profile_caption(profile)

st.write(
    "GRPO samples several answers per prompt, scores them with your reward, and pushes the policy toward the "
    "answers that beat their group's average, so it needs no critic model. In slime that is "
    f"`--advantage-estimator grpo` (the default, {plain(slime_source('slime/utils/arguments.py', 941))}). "
    "This page drafts a launch script in the shape of slime's own examples for your review: it is never run "
    "and never written into your files."
)

st.subheader("1. Prerequisites")
PREREQUISITES = {
    "grpo_pre_env": "slime's Docker image (or slime, Megatron-LM and SGLang installed as its Dockerfile pins them)",
    "grpo_pre_hf": "the Hugging Face checkpoint on the training machine",
    "grpo_pre_torch_dist": "its torch_dist copy made once with tools/convert_hf_to_torch_dist.py (the KL "
                           "reference loads it through --ref-load)",
    "grpo_pre_data": "a JSONL file whose rows hold the prompt and label keys you name below",
}
prerequisites_met = {label: st.checkbox(label, key=key) for key, label in PREREQUISITES.items()}
c1, c2 = st.columns(2)
c1.page_link("pages/check_data.py", label="Check my data file", icon=":material/dataset:")
c2.page_link("pages/model_checkpoint.py", label="Model script and checkpoint conversion", icon=":material/memory:")

st.subheader("2. What the draft still needs")
match = match_model(profile.model)
model_script_name = None
if match.status != "exact":
    (st.warning if match.status == "family" else st.error)(plain(match.message))
    names = [s.name for s in (match.scripts or load_model_scripts())]
    picked = st.selectbox("Model script to source (scripts/models)", ["(choose)", *names], key="grpo_model_script")
    model_script_name = None if picked == "(choose)" else picked
else:
    st.caption(plain(match.message))

saved_keys = saved_launch_keys(profile)
k1, k2 = st.columns(2)
input_key = k1.text_input("Prompt column (--input-key)", value=saved_keys.keys.input_key if saved_keys else "prompt",
                          key="grpo_input_key",
                          help="slime's own default is 'input', so a 'prompt' column needs --input-key prompt.")
label_key = k2.text_input("Label column (--label-key), empty for none",
                          value=(saved_keys.keys.label_key or "") if saved_keys else "label", key="grpo_label_key")
st.caption(f"slime reads the prompt from the key named by --input-key, whose default is `input` "
           f"({plain(slime_source('slime/utils/arguments.py', 659))}).")

layouts = ["Colocated (share every GPU)", "Disaggregated (separate actor and rollout GPUs)"]
layout_choice = st.radio("GPU layout", layouts, key="grpo_layout", horizontal=True,
                         disabled=profile.gpus_total < 2)
colocate = profile.gpus_total < 2 or layout_choice == layouts[0]
st.caption("Colocated: training and generation take turns on the same GPUs and slime offloads one while the "
           "other runs; the usual choice, and the only one on a single GPU. Disaggregated: each side keeps its "
           "own GPUs loaded; it pays off when both sides are busy enough, and it is what async training needs "
           f"({plain(slime_source('docs/en/get_started/quick_start.md', 307))}).")
actor_gpus = None
if not colocate:
    default_actor = (profile.nodes // 2) * profile.per_node if profile.nodes > 1 else max(1, profile.per_node // 2)
    actor_gpus = int(st.number_input("Actor (training) GPUs", min_value=1, max_value=max(1, profile.gpus_total - 1),
                                     value=min(default_actor, max(1, profile.gpus_total - 1)), step=1,
                                     key="grpo_actor_gpus"))

with st.expander("Hyperparameters (defaults from slime's Qwen3-4B example)"):
    h1, h2, h3 = st.columns(3)
    rollout_batch_size = int(h1.number_input("Prompts per rollout (--rollout-batch-size)", 1, 100_000, 32,
                                             key="grpo_rbs"))
    n_samples = int(h2.number_input("Samples per prompt (--n-samples-per-prompt)", 1, 1024, 8, key="grpo_n"))
    num_rollout = int(h3.number_input("Rollouts (--num-rollout)", 1, 10_000_000, 3000, key="grpo_num_rollout"))
    h4, h5, h6 = st.columns(3)
    gbs = int(h4.number_input("Global batch, 0 = one step per rollout (--global-batch-size)", 0, 64_000_000, 0,
                              key="grpo_gbs"))
    max_len = int(h5.number_input("Max response tokens", 1, 1_048_576, 8192, key="grpo_max_len"))
    rm_type = h6.text_input("Reward (--rm-type)", value="deepscaler", key="grpo_rm_type")
    h7, h8 = st.columns(2)
    use_kl = h7.checkbox("KL loss to the reference (--use-kl-loss)", value=True, key="grpo_use_kl")
    kl_coef = float(h8.number_input("KL loss coefficient (--kl-loss-coef)", 0.0, 100.0, 0.0, step=0.001,
                                    format="%.4f", key="grpo_kl_coef"))
    st.dataframe(pd.DataFrame([d.model_dump() for d in hyperparameter_sources()]), hide_index=True,
                 key="grpo_sources")

try:
    request = DraftRequest.from_profile(
        profile, "grpo", colocate=colocate, actor_gpus=actor_gpus, model_script=model_script_name,
        input_key=input_key, label_key=label_key or None, rollout_batch_size=rollout_batch_size,
        n_samples_per_prompt=n_samples, num_rollout=num_rollout, global_batch_size=gbs or None,
        rollout_max_response_len=max_len, rm_type=rm_type or None, use_kl_loss=use_kl, kl_loss_coef=kl_coef)
except ValueError as exc:  # pydantic's ValidationError is a ValueError
    st.error(plain(f"These answers cannot make a draft: {exc}"))
    st.stop()

st.subheader("3. Draft for your review")
draft = draft_launch_script(request)
show_draft(draft, key_prefix="grpo")

if draft.ready:
    remember_launch_keys(profile, "grpo", DataKeys(input_key=request.input_key, label_key=request.label_key,
                                                   apply_chat_template=request.apply_chat_template))
record = record_for(draft)
done = [*record.done, *(f"prerequisite: {label}" for label, ok in prerequisites_met.items() if ok)]
todo = [*(f"prerequisite: {label}" for label, ok in prerequisites_met.items() if not ok), *record.todo]
record_key = (record.status, tuple(done), draft.script)
if st.session_state.get("grpo_recorded") != record_key:
    save_record(profile, "grpo", record.status, done=done, todo=todo, summary=record.summary,
                output_name=draft.filename if draft.script else None, output=draft.script or None,
                output_mime="text/x-shellscript")
    st.session_state["grpo_recorded"] = record_key
