"""What's done: every workflow with its status and its output, re-openable and downloadable."""

from datetime import datetime

import streamlit as st

from core.memory.workflows import status_rows
from ui.common import ensure_app_frame, get_store, plain, require_profile

ensure_app_frame()

st.title("What's done")
profile = require_profile()
rows = status_rows(get_store().records(profile.name))
done = sum(r.status == "done" for r in rows)
st.write(f"Profile {plain(profile.name)}: {done} of {len(rows)} workflows done.")

st.dataframe(
    [{"Workflow": r.workflow.title, "Status": r.status,
      "When": datetime.fromtimestamp(r.record.updated_at).strftime("%Y-%m-%d %H:%M") if r.record else "",
      "Done means": r.workflow.what_done_means} for r in rows],
    hide_index=True, use_container_width=True,
)

for r in rows:
    label = {"done": ":material/check_circle:", "started": ":material/pending:"}.get(r.status,
                                                                                    ":material/radio_button_unchecked:")
    with st.expander(f"{r.workflow.title}: {r.status}", icon=label):
        st.page_link(r.workflow.page, label=f"Open {r.workflow.title}")
        if r.record is None:
            st.write("Not started.")
            continue
        if r.record.summary:
            st.text(r.record.summary)
        if r.record.done_items:
            st.write("Done:")
            st.text("\n".join(f"✓ {i}" for i in r.record.done_items))
        if r.record.todo_items:
            st.write("Not done yet:")
            st.text("\n".join(f"✗ {i}" for i in r.record.todo_items))
        if r.record.output:
            st.code(r.record.output, language="bash" if r.record.output_mime == "text/x-shellscript" else None)
            st.download_button("Download", r.record.output, file_name=r.record.output_name or "output.txt",
                               mime=r.record.output_mime, key=f"dl_{r.workflow.id}")
