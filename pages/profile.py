"""Profile: edit the saved answers in one place; keep several named profiles."""

import streamlit as st

from core.memory.onboarding import build_profile
from ui.common import ensure_app_frame, get_store, plain, require_profile

ensure_app_frame()

st.title("Profile")
store = get_store()
current = require_profile()

names = store.list_profiles()
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
    saved = st.form_submit_button("Save changes", type="primary")
if saved:
    result = build_profile(current.name, model, data_path, gpus, per_node or None)
    if result.errors:
        for msg in result.errors.values():
            st.error(plain(msg))
    else:
        new = result.profile.model_dump()
        changed = {k: v for k, v in new.items() if v != getattr(current, k)}
        if changed:
            store.update_profile(current.name, **changed)
            st.success(f"Saved: {', '.join(sorted(changed))}.")
        else:
            st.info("Nothing changed.")

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
        saved = store.create_profile(result.profile)
        store.set_active(saved.name)
        st.rerun()

if len(names) > 1:
    with st.expander("Delete this profile"):
        if st.button(f"Delete {plain(current.name)} and its record of work", key="prof_delete"):
            store.delete_profile(current.name)
            st.rerun()
