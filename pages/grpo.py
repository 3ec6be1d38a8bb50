"""GRPO setup: prerequisites, the few answers the draft still needs, and a checked launch-script draft."""

import pandas as pd
import streamlit as st

from core.data import DataKeys
from core.drafts import DraftRequest, draft_launch_script, hyperparameter_sources, record_for
from core.model_scripts import load_model_scripts, match_model
from core.pins import slime_source
from ui.common import (
    ensure_app_frame,
    plain,
    profile_caption,
    remember_launch_keys,
    require_profile,
    saved_launch_keys,
    show_table,
)
from ui.drafts import checkpoint_fields, own_checkout, own_checkout_caption, show_draft
from ui.memory import AcceptControl, PageMemory

ensure_app_frame()

st.title("GRPO setup")
profile = require_profile()
profile_caption(profile)
memory = PageMemory("grpo", "grpo", profile)
memory.done_caption()

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
prerequisites_met = {label: memory.widget(st.checkbox, label, key.removeprefix("grpo_"), False)
                     for key, label in PREREQUISITES.items()}
c1, c2 = st.columns(2)
c1.page_link("pages/check_data.py", label="Check my data file", icon=":material/dataset:")
c2.page_link("pages/model_checkpoint.py", label="Model script and checkpoint conversion", icon=":material/memory:")

st.subheader("2. What the draft still needs")
own = own_checkout()
match = match_model(profile.model, own.scripts)
model_script_name = None
if match.status != "exact":
    (st.warning if match.status == "family" else st.error)(plain(match.message))
    names = [s.name for s in (match.scripts or own.scripts or load_model_scripts())]
    picked = memory.widget(st.selectbox, "Model script to source (scripts/models)", "model_script", "(choose)",
                           options=["(choose)", *names])
    model_script_name = None if picked == "(choose)" else picked
else:
    st.caption(plain(match.message))

saved_keys = saved_launch_keys(profile)
k1, k2 = st.columns(2)
input_key = memory.widget(k1.text_input, "Prompt column (--input-key)", "input_key",
                          saved_keys.keys.input_key if saved_keys else "prompt",
                          help="slime's own default is 'input', so a 'prompt' column needs --input-key prompt.")
label_key = memory.widget(k2.text_input, "Label column (--label-key), empty for none", "label_key",
                          (saved_keys.keys.label_key or "") if saved_keys else "label")
st.caption(f"slime reads the prompt from the key named by --input-key, whose default is `input` "
           f"({plain(slime_source('slime/utils/arguments.py', 659))}).")

checkpoints = checkpoint_fields(memory, profile.model)

layouts = ["Colocated (share every GPU)", "Disaggregated (separate actor and rollout GPUs)"]
layout_choice = memory.widget(st.radio, "GPU layout", "layout", layouts[0], options=layouts, horizontal=True,
                              disabled=profile.gpus_total < 2)
colocate = profile.gpus_total < 2 or layout_choice == layouts[0]
st.caption("Colocated: training and generation take turns on the same GPUs and slime offloads one while the "
           "other runs; the usual choice, and the only one on a single GPU. Disaggregated: each side keeps its "
           "own GPUs loaded; it pays off when both sides are busy enough, and it is what async training needs "
           f"({plain(slime_source('docs/en/get_started/quick_start.md', 307))}).")
actor_gpus = None
if not colocate:
    default_actor = (profile.nodes // 2) * profile.per_node if profile.nodes > 1 else max(1, profile.per_node // 2)
    actor_gpus = int(memory.widget(st.number_input, "Actor (training) GPUs", "actor_gpus",
                                   min(default_actor, max(1, profile.gpus_total - 1)), min_value=1,
                                   max_value=max(1, profile.gpus_total - 1), step=1))

with st.expander("Hyperparameters (defaults from slime's Qwen3-4B example)"):
    h1, h2, h3 = st.columns(3)
    rollout_batch_size = int(memory.widget(h1.number_input, "Prompts per rollout (--rollout-batch-size)", "rbs", 32,
                                           min_value=1, max_value=100_000))
    n_samples = int(memory.widget(h2.number_input, "Samples per prompt (--n-samples-per-prompt)", "n", 8,
                                  min_value=1, max_value=1024))
    num_rollout = int(memory.widget(h3.number_input, "Rollouts (--num-rollout)", "num_rollout", 3000,
                                    min_value=1, max_value=10_000_000))
    h4, h5, h6 = st.columns(3)
    gbs = int(memory.widget(h4.number_input, "Global batch, 0 = one step per rollout (--global-batch-size)", "gbs",
                            0, min_value=0, max_value=64_000_000))
    max_len = int(memory.widget(h5.number_input, "Max response tokens", "max_len", 8192, min_value=1,
                                max_value=1_048_576))
    rm_type = memory.widget(h6.text_input, "Reward (--rm-type)", "rm_type", "deepscaler")
    h7, h8 = st.columns(2)
    use_kl = memory.widget(h7.checkbox, "KL loss to the reference (--use-kl-loss)", "use_kl", True)
    kl_coef = float(memory.widget(h8.number_input, "KL loss coefficient (--kl-loss-coef)", "kl_coef", 0.0,
                                  min_value=0.0, max_value=100.0, step=0.001, format="%.4f"))
    show_table(pd.DataFrame([d.model_dump() for d in hyperparameter_sources()]))

try:
    request = DraftRequest.from_profile(
        profile, "grpo", colocate=colocate, actor_gpus=actor_gpus, model_script=model_script_name,
        input_key=input_key, label_key=label_key or None, rollout_batch_size=rollout_batch_size,
        n_samples_per_prompt=n_samples, num_rollout=num_rollout, global_batch_size=gbs or None,
        rollout_max_response_len=max_len, rm_type=rm_type or None, use_kl_loss=use_kl, kl_loss_coef=kl_coef,
        hf_checkpoint=checkpoints.hf_checkpoint, ref_load=checkpoints.ref_load, save_dir=checkpoints.save_dir)
except ValueError as exc:  # pydantic's ValidationError is a ValueError
    st.error(plain(f"These answers cannot make a draft: {exc}"))
    st.stop()

st.subheader("3. Draft for your review")
draft = draft_launch_script(request, checker=own.checker, scripts=own.scripts)
own_checkout_caption(own)
record = record_for(draft)
done = [*record.done, *(f"prerequisite: {label}" for label, ok in prerequisites_met.items() if ok)]
todo = [*(f"prerequisite: {label}" for label, ok in prerequisites_met.items() if not ok), *record.todo]
launch_keys = DataKeys(input_key=request.input_key, label_key=request.label_key,
                       apply_chat_template=request.apply_chat_template)


layout_text = (f"{draft.layout.mode}, actor {draft.layout.actor_gpus} GPU(s), rollout {draft.layout.rollout_gpus}"
               if draft.layout else "")
show_draft(draft, key_prefix="grpo", still_open=tuple(f"tick '{label}'" for label, ok in prerequisites_met.items()
                                                     if not ok), accept=AcceptControl(
    memory, "Accept this draft", "accepted the draft",
    f"{draft.filename}: {layout_text}; {draft.batch.samples_per_rollout} samples and "
    f"{draft.batch.steps_per_rollout} step(s) per rollout", draft.script, draft.filename, "text/x-shellscript",
    done=done, todo=[t for t in todo if not t.startswith("review every line")],
    # An accepted draft's data keys are the ones the data checker starts from.
    then=lambda: remember_launch_keys(profile, "grpo", launch_keys)))
memory.progress(done=done, todo=todo, summary=record.summary)
