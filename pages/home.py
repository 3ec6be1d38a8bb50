"""Home: the first-visit questions (model, data, GPUs), then a welcome back with the saved answers."""

import streamlit as st

from core.memory import build_profile
from core.model_scripts import match_model
from ui.common import active_profile, ask_box, ensure_app_frame, get_store, plain

ensure_app_frame()

st.title("slime assistant")
st.write("Correct, sourced guidance for RL post-training with slime: checks that catch what slime would "
         "silently ignore, and launch scripts drafted for your review. Nothing here runs a command.")

profile = active_profile()

if profile is None:
    st.subheader("Your model, data and GPUs: asked once")
    with st.form("onboarding"):
        model = st.text_input("Model name", placeholder="e.g. Qwen3-4B", key="onb_model",
                              help="The Hugging Face name or folder of the model you will train.")
        data_path = st.text_input("JSONL data path", placeholder="e.g. /data/dapo-math-17k.jsonl", key="onb_data",
                                  help="Path on the training machine; slime reads .jsonl or .parquet.")
        c1, c2 = st.columns(2)
        gpus = c1.text_input("GPUs in total", placeholder="e.g. 8", key="onb_gpus")
        per_node = c2.text_input("GPUs per node (optional: only for more than one node)", placeholder="e.g. 8",
                                 key="onb_per_node")
        submitted = st.form_submit_button("Save", type="primary")
    if submitted:
        result = build_profile("default", model, data_path, gpus, per_node or None)
        if result.errors:
            for msg in result.errors.values():
                st.error(plain(msg))
        else:
            saved = get_store().create_profile(result.profile)
            st.session_state["just_onboarded"] = saved.name
            st.rerun()
    st.caption("Or look something up first: a flag, a rule code, an error line or plain words.")
    ask_box("home")
    st.stop()

just_saved = st.session_state.pop("just_onboarded", None)
if just_saved:
    st.success("Saved. Every page will start from these answers; change them on the Profile page.")
    if just_saved != profile.name:
        st.info(f"Another window saved answers at the same time; yours are kept as profile {plain(just_saved)}.")

st.subheader(f"Your profile: {plain(profile.name)}")
nodes = f" ({profile.nodes} nodes × {profile.per_node})" if profile.nodes > 1 else ""
st.markdown(f"- Model: {plain(profile.model)}\n- Data: {plain(profile.data_path)}\n"
            f"- GPUs: {profile.gpus_total}{nodes}")

match = match_model(profile.model)
(st.info if match.status != "unknown" else st.warning)(plain(match.message))

c1, c2, c3 = st.columns(3)
c1.page_link("pages/grpo.py", label="Start the GRPO setup guide", icon=":material/rocket_launch:")
c2.page_link("pages/check_data.py", label="Check my data", icon=":material/dataset:")
c3.page_link("pages/progress.py", label="What's done", icon=":material/checklist:")

st.subheader("Look something up")
st.caption("A flag, a rule code, an error line or a whole traceback from a failed run, or plain words.")
ask_box("home")
