"""Model script and checkpoint: pick the model script, compare config.json with it as slime does at
start-up, and draft the HF -> torch_dist conversion command."""

import pandas as pd
import streamlit as st

from core.drafts import (
    HF_LOADER_MODEL_TYPES,
    VALIDATE_SOURCE,
    ConfigError,
    ConversionRequest,
    ckpt_args_example,
    compare_config,
    conversion_findings,
    draft_conversion_command,
    parse_hf_config,
)
from core.drafts import MODEL_CONFIG_CARD as CARD
from core.findings import Severity, sort_and_dedupe
from core.knowledge import get_card
from core.model_scripts import load_model_scripts, match_model
from core.paths import PathRefused, read_regular, resolve_allowed
from core.pins import SLIME_SHORT, slime_source
from ui.common import (
    ensure_app_frame,
    own_model_scripts,
    own_sources,
    plain,
    profile_caption,
    require_profile,
    show_findings,
    show_table,
)
from ui.memory import LAUNCH_PAGES, AcceptControl, PageMemory, hand_over_inputs

ensure_app_frame()

st.title("Model script and checkpoint")
profile = require_profile()
profile_caption(profile)
memory = PageMemory("model_checkpoint", "mc", profile)
memory.done_caption()

own_scripts = own_model_scripts()
own_slime, _, _ = own_sources()
scripts = own_scripts or load_model_scripts()
by_name = {s.name: s for s in scripts}
where = "in your checkout" if own_scripts else f"at {SLIME_SHORT}"

# -- 1. the model script ---------------------------------------------------------------------------------
st.subheader("1. The model script")
st.write(f"slime ships one script per supported model in `scripts/models/` ({len(scripts)} {where}). "
         "Each one only fills the bash array `MODEL_ARGS`: the architecture Megatron cannot read from a "
         "checkpoint. Where the weights live is set separately, below.")
if own_scripts:
    st.caption(f"The model scripts are read from your own slime checkout {plain(str(own_slime))} (remembered in "
               "your profile or named on the launch-script checker), not from the commit we pin.")
elif own_slime is not None:
    st.caption(f"Your slime checkout {plain(str(own_slime))} has no readable scripts/models/*.sh: showing the "
               f"model scripts slime ships at {SLIME_SHORT}.")
match = match_model(profile.model, own_scripts)
if match.status == "exact":
    st.success(plain(match.message), icon=":material/check_circle:")
elif match.status == "family":
    st.warning(plain(match.message), icon=":material/warning:")
else:
    outside = ("your checkout ships no script for this model" if own_scripts
               else "this model is outside what slime ships support for at the pinned commit")
    st.error(plain(f"{match.message} In plain words: {outside}."), icon=":material/error:")

names = [s.name for s in scripts]
default_name = match.scripts[0].name if match.status == "exact" else None
options = ["(choose)", *names]
picked = memory.widget(st.selectbox, "Model script to source", "script", default_name or "(choose)", options=options)
script = by_name.get(picked)

with st.expander(f"All {len(scripts)} model scripts {where}"):
    st.dataframe(pd.DataFrame([{
        "script": s.path, "layers": s.values.get("num-layers", ""), "hidden": s.values.get("hidden-size", ""),
        "heads": s.values.get("num-attention-heads", ""), "experts": s.values.get("num-experts", ""),
    } for s in scripts]), hide_index=True, key="mc_scripts_table")

if script is None:
    st.info("Choose the model script that matches your checkpoint to continue.")
    memory.progress(todo=["choose the model script"], summary="No model script chosen yet")
    st.stop()

st.code(f"source {script.path}", language="bash")
st.caption(f"Source: {plain(script.source)}. Values in it can be overridden after sourcing, e.g. "
           "`MODEL_ARGS+=(--rotary-base 5000000)`: Megatron keeps the last value given "
           f"({plain(slime_source('docs/en/get_started/quick_start.md', 132))}).")

# -- 2. checkpoints --------------------------------------------------------------------------------------
st.subheader("2. Checkpoints are separate flags")
st.markdown(
    "- `--hf-checkpoint`: the Hugging Face folder. SGLang starts from it and the tokenizer comes from it; slime "
    "pushes Megatron's weights to SGLang before training, so it need not hold the newest weights "
    f"({plain(slime_source('slime/utils/arguments.py', 307))}). slime also compares its config.json with "
    f"MODEL\\_ARGS at start-up ({plain(VALIDATE_SOURCE)}).\n"
    "- `--ref-load`: the Megatron (torch\\_dist) copy the reference model loads; it is also where training "
    f"starts while `--load` holds no checkpoint yet ({plain(slime_source('slime/utils/arguments.py', 842))}). "
    f"With the KL loss or a KL coefficient it must exist ({plain(slime_source('slime/utils/arguments.py', 1775))}).\n"
    "- `--load`: the run's own checkpoints, to resume from. Without a Megatron checkpoint there, slime loads "
    "`--ref-load` instead, or the folder itself if it is a Hugging Face checkpoint of a supported type "
    f"({plain(slime_source('slime/utils/arguments.py', 1817))}).\n"
    "- `--save` and `--save-interval`: where and how often the run saves; `--save-interval` needs `--save` "
    f"({plain(slime_source('slime/utils/arguments.py', 1843))}).")

# -- 3. config.json comparison ---------------------------------------------------------------------------
st.subheader("3. Compare your checkpoint's config.json")
st.write("Upload the checkpoint's `config.json` (or give its path on this machine). It is compared with the "
         "script's values the way slime compares them at start-up: hidden size, layers, attention heads, FFN "
         "sizes, tied embeddings, norm epsilon and rope base. The conversion tool does not make this check "
         f"({plain(slime_source('tools/convert_hf_to_torch_dist.py', 38))}), so a wrong script converts "
         "silently.")
upload = st.file_uploader("config.json", type=["json"], key="mc_config_upload")
if upload is not None and st.session_state.get("mc_seen_upload") != upload.file_id:  # the user's own input
    st.session_state["mc_seen_upload"] = upload.file_id
    memory.remember("config_uploaded", upload.name)
server_path = memory.widget(st.text_input, "or a config.json path on this machine (inside the configured folders)",
                            "config_path", "")

raw: bytes | None = None
if upload is not None:
    raw = upload.getvalue()
elif server_path.strip():
    try:
        allowed = resolve_allowed(server_path, want="file")
        raw = read_regular(allowed.path, 2_000_001)  # regular files only, opened without blocking
    except PathRefused as exc:
        st.error(plain(str(exc)))
    except OSError as exc:
        st.error(plain(f"That file cannot be read: {exc.strerror or exc}."))

comparison = None
config_error = None
overrides: dict[str, str | None] = {}
if raw is not None:
    try:
        cfg = parse_hf_config(raw)
    except ConfigError as exc:
        config_error = str(exc)
        st.error(plain(config_error))
    else:
        comparison = compare_config(cfg, script)
        if comparison.suggested_overrides and memory.widget(
                st.checkbox, "Add the overrides that make the script match this config.json (MODEL_ARGS+=... "
                "after sourcing); do this only when the script is otherwise right for this checkpoint",
                "apply_overrides", False):
            overrides = comparison.suggested_overrides
            comparison = compare_config(cfg, script, overrides)
        show_table(pd.DataFrame([r.model_dump() for r in comparison.rows]))
        if comparison.mismatches:
            st.error(f"{len(comparison.mismatches)} field(s) differ: slime would stop at start-up.",
                     icon=":material/error:")
        elif comparison.rows:
            st.success("Every field slime compares matches, or is noted below.", icon=":material/check_circle:")
        show_findings(comparison.findings, key_prefix="mc_cmp", empty_message="No findings.")

# -- 4. conversion command -------------------------------------------------------------------------------
st.subheader("4. Convert the Hugging Face checkpoint (draft)")
st.write("Megatron trains from a torch\\_dist checkpoint, made once with `tools/convert_hf_to_torch_dist.py` "
         "from the model script's `MODEL_ARGS`. The tool reads Hugging Face weights only for the model types "
         f"in slime's loader table ({', '.join(sorted(HF_LOADER_MODEL_TYPES))}; "
         f"{plain(slime_source('slime/backends/megatron_utils/hf_to_megatron/__init__.py', 12))}).")
base = profile.model.strip().rstrip("/").split("/")[-1] or "model"
default_hf = profile.model if profile.model.startswith("/") else f"/root/{base}"
c1, c2 = st.columns(2)
hf_dir = memory.widget(c1.text_input, "Hugging Face checkpoint folder (--hf-checkpoint)", "hf", default_hf)
save_dir = memory.widget(c2.text_input, "Save the torch_dist copy in (--save); empty: the HF folder + _torch_dist",
                         "save", "") or f"{hf_dir.strip().rstrip('/') or default_hf}_torch_dist"
c3, c4 = st.columns(2)
megatron = memory.widget(c3.text_input, "Megatron-LM folder (PYTHONPATH)", "megatron", "/root/Megatron-LM",
                         help="slime's Docker image keeps it at /root/Megatron-LM.")
nproc = int(memory.widget(c4.number_input, "Processes (GPUs) for the conversion", "nproc", 1, min_value=1,
                          max_value=1024,
                          help="More than one runs it under torchrun; the tool then picks a pipeline size."))

try:
    request = ConversionRequest(script_name=script.name, hf_checkpoint=hf_dir, save_dir=save_dir,
                                megatron_path=megatron, nproc_per_node=nproc, overrides=overrides)
except ValueError as exc:
    st.error(plain(f"These answers cannot make a command: {exc}"))
    st.stop()

command = draft_conversion_command(request)
findings = list(conversion_findings(request, script))
if comparison is not None:
    findings += [f for f in comparison.findings if f.severity != Severity.INFO]
findings = sort_and_dedupe(findings)
errors = [f for f in findings if f.severity == Severity.ERROR]
ready = not errors
accept = AcceptControl(memory, "Accept this command", "accepted the conversion command",
                       f"convert-{script.name}.sh: {script.path}, {nproc} process(es), saves to {save_dir.strip()}"
                       + (f", {len(overrides)} override(s)" if overrides else ""),
                       command, f"convert-{script.name}.sh", "text/x-shellscript",
                       # the accepted command's paths are the ones the launch drafts start from (editable there)
                       then=lambda: hand_over_inputs(profile, LAUNCH_PAGES, {"ckpt_hf": hf_dir.strip(),
                                                                             "ckpt_ref": save_dir.strip()}))
left, right = st.columns([3, 2])
with right:
    st.markdown("**Checks**")
    show_findings(findings, key_prefix="mc_conv", empty_message="No findings for this command.")
with left:
    if ready:
        st.success("Ready for your review; nothing was run.", icon=":material/check_circle:")
        st.download_button("Download the conversion script (.sh)", command,
                           file_name=f"convert-{script.name}.sh", mime="text/x-shellscript", key="mc_download",
                           on_click=accept.on_download)
        accept.render()
    else:
        st.error("Not ready: fix the errors beside it first. Shown for reference only.", icon=":material/error:")
    # one argument a line with its continuation; not soft-wrapped (a wrapped line reads as a broken command),
    # a very long path scrolls in its block instead
    st.code(command, language="bash")

st.markdown("**The matching CKPT\\_ARGS of your launch script**")
st.code(ckpt_args_example(hf_dir.strip(), save_dir.strip()), language="bash", wrap_lines=True)
card = get_card(CARD)
if card:
    st.page_link("pages/knowledge.py", label=f"Read more: {card.title}", icon=":material/menu_book:",
                 query_params={"card": card.id})

# -- record ----------------------------------------------------------------------------------------------
done = [f"model script chosen: {script.path}"]
todo: list[str] = []
if comparison is not None:
    if comparison.mismatches:
        todo.append(f"fix {len(comparison.mismatches)} config.json mismatch(es): "
                    + ", ".join(r.hf_key for r in comparison.mismatches))
    else:
        done.append("config.json compared with MODEL_ARGS: no mismatch")
else:
    todo.append("compare the checkpoint's config.json with the model script (optional, recommended)"
                if config_error is None else f"upload a readable config.json ({config_error})")
if hf_dir.strip() == default_hf:
    todo.append(f"confirm the Hugging Face folder ({default_hf} is a guess from the model name)")
if ready:
    done.append(f"conversion command drafted: convert-{script.name}.sh (for your review; nothing was run)")
else:
    todo += [f"fix {f.code}: {f.message}" for f in errors]
accept.done, accept.todo = done, todo
memory.progress(done=done, todo=todo, summary=f"{script.path}: conversion command {'ready' if ready else 'not ready'}")
