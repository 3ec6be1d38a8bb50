"""Profile: edit the saved answers in one place; keep several named profiles."""

import streamlit as st

from core.memory import build_profile
from core.plan import load_gpus
from ui.common import (
    CHECKOUT_KEY,
    MEGATRON_KEY,
    SGLANG_KEY,
    ensure_app_frame,
    get_store,
    own_source,
    plain,
    require_profile,
)

ensure_app_frame()

OWN_VERSIONS = {"slime_checkout", "sglang_source", "megatron_source"}
KEPT = OWN_VERSIONS | {"gpu_model"}  # answers the first-visit questions do not ask, carried to a new profile
GPU_NOT_SAID = "not said"

st.title("Profile")
store = get_store()
current = require_profile()

CREATED_KEY = "prof_created"  # the profile just created: said once, after the rerun that makes it active
created = st.session_state.pop(CREATED_KEY, None)
if created == current.name:
    st.success(f"Created the profile {plain(created)} from the answers of the one before, and made it active: "
               "the pages now use it.")

names = store.list_profiles()
if created == current.name:  # the picker's own state would switch back to the profile before it
    st.session_state["prof_active"] = created
elif st.session_state.get("prof_active") not in names:
    st.session_state.pop("prof_active", None)
choice = st.selectbox("Active profile", names, index=names.index(current.name), key="prof_active")
if choice != current.name:
    store.set_active(choice)
    st.rerun()

st.subheader("Edit")
with st.form("profile_edit"):
    model = st.text_input("Model name", value=current.model, key="prof_model")
    data_path = st.text_input("JSONL data path", value=current.data_path, key="prof_data")
    c1, c2 = st.columns(2)
    gpus = c1.text_input("GPUs in total", value=str(current.gpus_total), key="prof_gpus")
    per_node = c2.text_input("GPUs per node (blank: one node)", value=str(current.gpus_per_node or ""),
                             key="prof_per_node")
    gpu_names = [GPU_NOT_SAID] + [g.name for g in load_gpus()]
    gpu_model = st.selectbox("GPU model (for memory plans and the monitor's MFU)", gpu_names,
                             index=gpu_names.index(current.gpu_model) if current.gpu_model in gpu_names else 0,
                             key="prof_gpu_model")
    saved = st.form_submit_button("Save changes", type="primary")
if saved:
    result = build_profile(current.name, model, data_path, gpus, per_node or None)
    if result.errors:
        for msg in result.errors.values():
            st.error(plain(msg))
    else:
        new = result.profile.model_dump(exclude=KEPT)  # the versions are saved by their own form below
        new["gpu_model"] = None if gpu_model == GPU_NOT_SAID else gpu_model
        changed = {k: v for k, v in new.items() if v != getattr(current, k)}
        if changed:
            store.update_profile(current.name, **changed)
            st.success(f"Saved: {', '.join(sorted(changed))}.")
        else:
            st.info("Nothing changed.")

st.subheader("Your own versions (optional)")
st.caption("Most runs use the slime and SGLang of the image they started from, not the commits this app pins. Name "
           "your slime checkout (and, if you have them, your SGLang and Megatron) once: the launch-script checker, "
           "the flag reference and the error search then judge by that code. Directories are only read, never "
           "changed or run. The command line takes the same paths (--slime-checkout, --sglang-source, "
           "--megatron-source) or the SLIME_ASSISTANT_SLIME_CHECKOUT, SLIME_ASSISTANT_SGLANG_SOURCE and "
           "SLIME_ASSISTANT_MEGATRON_SOURCE environment variables.")
with st.form("profile_versions"):
    own_slime = st.text_input("slime checkout", value=current.slime_checkout or "", key="prof_slime_checkout",
                              placeholder="/path/to/slime")
    v1, v2 = st.columns(2)
    own_sglang = v1.text_input("SGLang (installed sglang package or checkout)", value=current.sglang_source or "",
                               key="prof_sglang_source")
    own_megatron = v2.text_input("Megatron-LM checkout", value=current.megatron_source or "",
                                 key="prof_megatron_source")
    saved_versions = st.form_submit_button("Save my versions")
if saved_versions:
    problems = [problem for raw, kind in ((own_slime, "slime"), (own_sglang, "sglang"), (own_megatron, "megatron"))
                for _, problem in [own_source(raw, kind)] if problem]
    if not own_slime.strip() and (own_sglang.strip() or own_megatron.strip()):
        problems.append("An SGLang or Megatron source is used together with your slime checkout: name the checkout too.")
    for problem in problems:
        st.error(plain(problem))
    if not problems:
        store.update_profile(current.name, slime_checkout=own_slime.strip() or None,
                             sglang_source=own_sglang.strip() or None, megatron_source=own_megatron.strip() or None)
        for key in (CHECKOUT_KEY, SGLANG_KEY, MEGATRON_KEY):
            st.session_state.pop(key, None)
        for key, kind, raw in ((CHECKOUT_KEY, "slime", own_slime), (SGLANG_KEY, "sglang", own_sglang),
                               (MEGATRON_KEY, "megatron", own_megatron)):
            path, _ = own_source(raw, kind)
            if path is not None:
                st.session_state[key] = str(path)
        st.success("Saved: the checker, the flag reference and the error search follow these versions."
                   if own_slime.strip() else "Saved: the pages use the versions this app pins.")

st.subheader("Another profile")
with st.form("profile_new"):
    new_name = st.text_input("Name (one per project or run)", key="prof_new_name", placeholder="qwen3-8b-math")
    copy = st.form_submit_button("Create from the current answers")
if copy:
    result = build_profile(new_name.strip(), current.model, current.data_path, current.gpus_total,
                           current.gpus_per_node)
    if result.errors:
        for msg in result.errors.values():
            st.error(plain(msg))
    elif result.profile.name in names:
        st.error(f"A profile named {plain(result.profile.name)} exists already.")
    else:
        saved = store.create_profile(result.profile.model_copy(
            update={k: getattr(current, k) for k in KEPT}))
        store.set_active(saved.name)
        st.session_state[CREATED_KEY] = saved.name
        st.rerun()

if len(names) > 1:
    with st.expander("Delete this profile"):
        if st.button(f"Delete {plain(current.name)} and its record of work", key="prof_delete"):
            store.delete_profile(current.name)
            st.rerun()
