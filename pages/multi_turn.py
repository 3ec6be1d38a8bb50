"""Multi-turn agent training: the custom generate function's checklist, a static check of the user's file
(parsed, never imported or run), and a checked launch-script draft once function and data are confirmed."""

import pandas as pd
import streamlit as st

from core.drafts import AGENT_CHECK_CARD as CARD
from core.drafts import (
    CHECKLIST,
    CUSTOM_CONFIG_SOURCE,
    DEFAULT_FUNCTION,
    EXAMPLE_SOURCE,
    LOAD_FUNCTION_SOURCE,
    TURN_LIMIT_NOTE,
    TURN_LIMIT_SOURCES,
    AgentCheckError,
    DraftRequest,
    ExtraArg,
    check_function_path,
    check_generate_source,
    check_upload_name,
    draft_launch_script,
    record_for,
    suggested_path,
)
from core.findings import Finding, Severity, sort_and_dedupe
from core.knowledge import get_card
from core.model_scripts import load_model_scripts, match_model
from core.pins import slime_source
from ui.common import ensure_app_frame, plain, profile_caption, require_profile, show_findings, show_table
from ui.drafts import ExtraFile, checkpoint_fields, own_checkout, own_checkout_caption, show_draft
from ui.memory import AcceptControl, PageMemory

ensure_app_frame()

st.title("Multi-turn agent training")
profile = require_profile()
profile_caption(profile)
memory = PageMemory("multi_turn", "mt", profile)
memory.done_caption()

st.markdown(
    "For tool use and multi-turn agents, slime keeps its own rollout loop and lets you replace only the "
    "step that turns one prompt into one finished sample: the **custom generate function**, named with "
    "`--custom-generate-function-path`. slime awaits it once per sample as "
    "`generate(args, sample, sampling_params)` and trains on the Sample it returns "
    f"({plain(slime_source('slime/rollout/sglang_rollout.py', 251))}). The reward is then computed by "
    "`--custom-rm-path` unless your function already set it. The example to model yours on is "
    f"`examples/search-r1/` ({plain(EXAMPLE_SOURCE)}; launch script "
    f"{plain(slime_source('examples/search-r1/run_qwen2.5_3B.sh', 115))}).")

# -- 1. checklist ----------------------------------------------------------------------------------------
st.subheader("1. What the function must do")
st.markdown("\n".join(f"{i}. **{c.title}**: {c.why} ({plain(c.source)})" for i, c in enumerate(CHECKLIST, 1)))
st.info(plain(TURN_LIMIT_NOTE) + f" ({plain(' · '.join(TURN_LIMIT_SOURCES))})", icon=":material/info:")

# -- 2. the user's file ----------------------------------------------------------------------------------
st.subheader("2. Check your function file (optional, recommended)")
st.caption("The file is parsed with Python's ast module only: it is never imported or run, so nothing in it "
           "executes here. 'Not visible' means the file does not show it (it may happen in a helper "
           "elsewhere), not that it is wrong.")
c1, c2 = st.columns([3, 1])
upload = c1.file_uploader("Your generate-function module (.py)", type=["py"], key="mt_upload")
function_name = memory.widget(c2.text_input, "Function name", "function", DEFAULT_FUNCTION).strip() or DEFAULT_FUNCTION

report = None
upload_findings: list[Finding] = []
if upload is not None:
    name_finding = check_upload_name(upload.name)
    if name_finding:
        upload_findings.append(name_finding)
    try:
        report = check_generate_source(upload.getvalue(), function_name)
    except AgentCheckError as exc:
        st.error(plain(str(exc)))
        if upload_findings:
            show_findings(upload_findings, key_prefix="mt_fn")
    if report is not None:
        if report.found:
            st.write(f"Found `async def` {plain(function_name)}: {report.seen_count} of {len(CHECKLIST)} "
                     "checklist items are visible in the file."
                     if report.is_async else f"Found {plain(function_name)}, but it is not async.")
            rows = []
            for r in report.checklist:
                if r.item.id == "sets_reward" and not r.seen:
                    mark = "left to --custom-rm-path"
                else:
                    mark = "visible" if r.seen else "not visible"
                rows.append({"Checklist item": r.item.title, "In your file": mark, "Evidence": r.evidence})
            show_table(pd.DataFrame(rows))  # all 12 rows, each cell whole
        show_findings(sort_and_dedupe([*upload_findings, *report.findings]), key_prefix="mt_fn",
                      empty_message="The function's contract looks right.")

# -- 3. flags --------------------------------------------------------------------------------------------
st.subheader("3. The flags")
suggested = suggested_path(upload.name if upload is not None else None, function_name)
memory.seed("generate_path", "")
if suggested and st.session_state.get("mt_suggested_for") != suggested:
    # A new upload fills the flag once; the user's later edits are kept.
    st.session_state["mt_suggested_for"] = suggested
    if not st.session_state.get("mt_generate_path"):
        st.session_state["mt_generate_path"] = suggested
        memory.remember("generate_path", suggested)
st.write("Each function is named by a dotted path, `module.function`: slime imports everything before the last "
         "dot and reads the last part from it, so the module's folder must be on PYTHONPATH "
         f"({plain(LOAD_FUNCTION_SOURCE)}). A `module:function` form fails, although one of slime's docs shows "
         f"it ({plain(slime_source('docs/zh/get_started/quick_start.md', 550))}).")
f1, f2 = st.columns(2)
generate_path = memory.widget(f1.text_input, "--custom-generate-function-path", "generate_path", "",
                              placeholder="my_agent.generate").strip()
module_dir = memory.widget(f2.text_input, "Folder holding your module, added to PYTHONPATH (empty: already "
                           "importable)", "module_dir", "", placeholder="/root/my_agent").strip()
reward_modes = ["My reward function (--custom-rm-path)", "A built-in reward (--rm-type)",
                "My generate function sets sample.reward"]
default_reward = 2 if report is not None and report.sets_reward else 0
reward_mode = memory.widget(st.radio, "Reward", "reward_mode", reward_modes[default_reward], options=reward_modes,
                            horizontal=True)
rm_path = rm_type = None
r1, r2 = st.columns(2)
if reward_mode == reward_modes[0]:
    rm_path = memory.widget(r1.text_input, "--custom-rm-path (an async function)", "rm_path", "",
                            placeholder="my_agent.reward_func").strip()
elif reward_mode == reward_modes[1]:
    rm_type = memory.widget(r1.text_input, "--rm-type", "rm_type", "deepscaler").strip()
config_path = memory.widget(r2.text_input, "--custom-config-path (optional YAML, e.g. holding max_turns)",
                            "config_path", "", placeholder="/root/my_agent/agent.yaml").strip()
max_turns = int(memory.widget(st.number_input, "max_turns to put in that YAML (0: none)", "max_turns", 0,
                              min_value=0, max_value=1000))
k1, k2 = st.columns(2)
input_key = memory.widget(k1.text_input, "Prompt column (--input-key)", "input_key", "prompt").strip()
label_key = memory.widget(k2.text_input, "Label column (--label-key), empty for none", "label_key", "label").strip()

flag_findings: list[Finding] = []
if generate_path:
    flag_findings += check_function_path(generate_path)
    if report is not None and report.found and generate_path.rpartition(".")[2] != function_name:
        flag_findings.append(Finding(
            code="FP007", severity=Severity.WARNING, flag="--custom-generate-function-path", card=CARD,
            message=f"The flag names '{generate_path.rpartition('.')[2]}' but the checked function is "
                    f"'{function_name}'."))
if rm_path:
    flag_findings += check_function_path(rm_path, "--custom-rm-path")
if reward_mode == reward_modes[2] and report is not None and report.found and not report.sets_reward:
    flag_findings.append(Finding(code="AGT010", severity=Severity.ERROR, flag="--custom-rm-path", card=CARD,
                                 source=slime_source("slime/rollout/rm_hub/__init__.py", 55),
                                 message="The checked file never assigns .reward, so slime would look for "
                                         "--custom-rm-path or --rm-type and stop without one.",
                                 fix="choose a reward function or a built-in --rm-type"))
if max_turns and not config_path:
    flag_findings.append(Finding(code="MT001", severity=Severity.WARNING, source=CUSTOM_CONFIG_SOURCE, card=CARD,
                                 message="max_turns only reaches args through --custom-config-path; give the "
                                         "path the YAML will have on the training machine."))
if flag_findings:
    show_findings(sort_and_dedupe(flag_findings), key_prefix="mt_flags")

# -- 4. confirm, then draft ------------------------------------------------------------------------------
st.subheader("4. Confirm, then the draft")
confirm_fn = memory.widget(st.checkbox, "My function does every checklist item above (I checked the ones not "
                           "visible in the file myself)", "confirm_function", False)
confirm_data = memory.widget(st.checkbox, f"My data file ({plain(profile.data_path)}) has the prompt and label keys "
                             "named above, in the shape my function reads", "confirm_data", False)
st.page_link("pages/check_data.py", label="Check my data file", icon=":material/dataset:")

missing: list[str] = []
if not generate_path:
    missing.append("give --custom-generate-function-path")
if reward_mode == reward_modes[0] and not rm_path:
    missing.append("give --custom-rm-path")
if reward_mode == reward_modes[1] and not rm_type:
    missing.append("give --rm-type")
if not confirm_fn:
    missing.append("confirm the function follows the checklist")
if not confirm_data:
    missing.append("confirm the data file is ready")
blocking = [f for f in [*flag_findings, *upload_findings, *(report.findings if report else [])]
            if f.severity == Severity.ERROR]
if report is not None and not report.found:
    missing.append(f"define {function_name} in the uploaded file, or upload the right one")
missing += [f"fix {f.code}: {f.message}" for f in blocking]

done_items: list[str] = []
if report is not None and report.found:
    done_items.append(f"function file checked: {report.seen_count} of {len(CHECKLIST)} checklist items visible")
if confirm_fn:
    done_items.append("generate-function checklist confirmed")
if confirm_data:
    done_items.append("data confirmed ready")

if missing:
    st.info("Before the command is shown:\n\n" + "\n".join(f"- {plain(m)}" for m in missing))
    memory.progress(done=done_items, todo=missing, summary="Multi-turn: waiting for " + "; ".join(missing[:3]))
    st.stop()

own = own_checkout()
match = match_model(profile.model, own.scripts)
model_script_name = None
if match.status != "exact":
    (st.warning if match.status == "family" else st.error)(plain(match.message))
    names = [s.name for s in (match.scripts or own.scripts or load_model_scripts())]
    picked = memory.widget(st.selectbox, "Model script to source (scripts/models)", "model_script", "(choose)",
                           options=["(choose)", *names])
    model_script_name = None if picked == "(choose)" else picked

layouts = ["Colocated (share every GPU)", "Disaggregated (separate actor and rollout GPUs)"]
layout_choice = memory.widget(st.radio, "GPU layout", "layout", layouts[0], options=layouts, horizontal=True,
                              disabled=profile.gpus_total < 2)
colocate = profile.gpus_total < 2 or layout_choice == layouts[0]
st.caption("Multi-turn rollouts spend much of their time waiting on tools, so generation often dominates; "
           "separate rollout GPUs keep the engines loaded while the actor trains. Colocated is the default and "
           "the only choice on one GPU.")
actor_gpus = None
if not colocate:
    default_actor = (profile.nodes // 2) * profile.per_node if profile.nodes > 1 else max(1, profile.per_node // 2)
    actor_gpus = int(memory.widget(st.number_input, "Actor (training) GPUs", "actor_gpus",
                                   min(default_actor, max(1, profile.gpus_total - 1)), min_value=1,
                                   max_value=max(1, profile.gpus_total - 1), step=1))

checkpoints = checkpoint_fields(memory, profile.model)

extra = [ExtraArg(flag="--custom-generate-function-path", value=generate_path, group="CUSTOM_ARGS",
                  comment=f"your generate function; loaded with load_function ({LOAD_FUNCTION_SOURCE})")]
if config_path:
    extra.append(ExtraArg(flag="--custom-config-path", value=config_path, group="CUSTOM_ARGS",
                          comment=f"YAML whose keys slime copies onto args ({CUSTOM_CONFIG_SOURCE})"))
try:
    request = DraftRequest.from_profile(
        profile, "multi_turn", model_script=model_script_name, colocate=colocate, actor_gpus=actor_gpus,
        input_key=input_key or "prompt",
        label_key=label_key or None, custom_rm_path=rm_path or None, rm_type=rm_type or None,
        reward_set_by_generate=reward_mode == reward_modes[2], extra_args=extra, extra_pythonpath=[module_dir] if module_dir else [],
        hf_checkpoint=checkpoints.hf_checkpoint, ref_load=checkpoints.ref_load, save_dir=checkpoints.save_dir)
except ValueError as exc:  # pydantic's ValidationError is a ValueError
    st.error(plain(f"These answers cannot make a draft: {exc}"))
    memory.progress(done=done_items, todo=[f"fix the answers: {exc}"], summary="Multi-turn: answers cannot make a draft")
    st.stop()

draft = draft_launch_script(request, checker=own.checker, scripts=own.scripts)
own_checkout_caption(own)
yaml_text = f"max_turns: {max_turns}\n" if max_turns and config_path else ""
extra_files = (ExtraFile(label="Download the YAML", data=yaml_text, filename="agent.yaml", mime="text/yaml",
                         language="yaml", caption=f"YAML for {config_path}"),) if yaml_text else ()
record = record_for(draft)
show_draft(draft, key_prefix="mt", extra_files=extra_files, summary_expanded=False, accept=AcceptControl(
    memory, "Accept this draft", "accepted the draft",
    f"{draft.filename}: generate function {generate_path}, reward from "
    + (rm_path or (f"--rm-type {rm_type}" if rm_type else "the generate function")),
    draft.script, draft.filename, "text/x-shellscript", done=[*done_items, *record.done]))

card = get_card(CARD)
if card:
    st.page_link("pages/knowledge.py", label=f"Read more: {card.title}", icon=":material/menu_book:",
                 query_params={"card": card.id})

memory.progress(done=[*done_items, *record.done], todo=record.todo, summary="Multi-turn: " + record.summary)
