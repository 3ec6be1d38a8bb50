"""What's done: every workflow's status, where the user left off, and the history of accepted outputs, each
re-openable, downloadable and deletable. Nothing here is written by visiting a page."""

import streamlit as st

from core.memory import ACCEPTED_KEPT, WORKFLOW_BY_ID, WORKFLOWS, input_changes, status_rows
from ui.common import ensure_app_frame, get_store, plain, require_profile, show_store_notices
from ui.memory import reopen_with_inputs, when_text

ensure_app_frame()

STATUS_ICON = {"done": ":material/check_circle:", "started": ":material/pending:",
               "not started": ":material/radio_button_unchecked:"}
SHOWN_INLINE = {"text/x-shellscript": "bash", "text/markdown": "markdown", "text/plain": None, "text/yaml": "yaml"}


def delete_output(profile_name: str, workflow: str, output_id: str) -> None:
    get_store().delete_accepted(profile_name, workflow, output_id)


def reopen(output) -> None:
    reopen_with_inputs(profile, output)
    st.session_state["_prog_switch_to"] = WORKFLOW_BY_ID[output.workflow].page


switch_to = st.session_state.pop("_prog_switch_to", None)
if switch_to:
    st.switch_page(switch_to)

st.title("What's done")
profile = require_profile()
store = get_store()
rows = status_rows(store.records(profile.name), {wf.id: store.accepted(profile.name, wf.id) for wf in WORKFLOWS},
                   store.pages_with_inputs(profile.name))
show_store_notices(new_warnings_only=True)
done = sum(r.status == "done" for r in rows)
st.write(f"Profile {plain(profile.name)}: {done} of {len(rows)} workflows done.")
st.caption("A workflow is **done** once you accepted one of its outputs (what counts is said on each page and "
           "below), and **started** once you changed something on its page. Visiting a page changes nothing "
           f"here. The last {ACCEPTED_KEPT} accepted outputs of each workflow are kept; a later one never "
           "replaces an earlier one.")

st.dataframe(
    [{"Workflow": r.workflow.title, "Status": r.status,
      "Last done": when_text(r.accepted[0].accepted_at) if r.accepted else "",
      "Accepted outputs": len(r.accepted), "Done when": r.workflow.what_done_means} for r in rows],
    hide_index=True, width="stretch",
)

for r in rows:
    wf = r.workflow
    with st.expander(f"{wf.title}: {r.status}", icon=STATUS_ICON[r.status]):
        st.page_link(wf.page, label=f"Open {wf.title}", icon=wf.icon)
        st.caption(f"Done when {plain(wf.what_done_means)}.")
        if r.status == "not started":
            st.write("Not started: nothing was changed on this page yet.")
            continue
        rec = r.record
        if rec is not None and (not r.accepted or rec.updated_at > r.accepted[0].accepted_at):
            st.markdown(f"**Where you left off** ({when_text(rec.updated_at)})")
            if rec.summary:
                st.text(rec.summary)
            if rec.todo_items:
                st.text("\n".join(f"✗ {i}" for i in rec.todo_items))
        elif rec is None and not r.accepted:
            st.write("Started: you changed answers on this page; open it to continue.")
        if not r.accepted:
            continue
        st.markdown(f"**Accepted outputs**, newest first ({len(r.accepted)} of at most {ACCEPTED_KEPT} kept)")
        for a, before in zip(r.accepted, [*r.accepted[1:], None], strict=True):
            with st.container(border=True):
                st.markdown(f"{when_text(a.accepted_at)} · {plain(a.how)} · {plain(a.summary)}")
                if before is not None and (a.inputs_shown or a.inputs) is not None and (before.inputs_shown or before.inputs) is not None:
                    changes = input_changes(a, before)
                    st.caption("Changed since the one before: " + "; ".join(plain(c) for c in changes) if changes
                               else "Same answers as the one before.")
                if a.output:
                    st.caption(f"File: {plain(a.output_name or 'output.txt')}")
                c1, c2, c3, c4 = st.columns([1, 1, 2, 1])
                opened = c1.toggle("Open", key=f"prog_open_{wf.id}_{a.id}")
                if a.output:  # the file's name is said above: a long one would be cut on a button
                    c2.download_button("Download", a.output, icon=":material/download:",
                                       file_name=a.output_name or "output.txt", mime=a.output_mime,
                                       key=f"prog_dl_{wf.id}_{a.id}", on_click="ignore")
                c3.button("Reopen with its answers", key=f"prog_reopen_{wf.id}_{a.id}", on_click=reopen, args=(a,),
                          disabled=a.inputs is None, help=f"Puts the answers that made this output back on the "
                                                      f"{wf.title} page (your current answers there are replaced) "
                                                      "and opens it.")
                with c4.popover("Delete", icon=":material/delete:"):
                    st.write("Delete this accepted output for good? The others are kept.")
                    st.button("Delete it", key=f"prog_del_{wf.id}_{a.id}", on_click=delete_output,
                              args=(profile.name, wf.id, a.id))
                if opened:
                    if a.done_items:
                        st.text("\n".join(f"✓ {i}" for i in a.done_items))
                    if a.todo_items:
                        st.text("\n".join(f"✗ {i}" for i in a.todo_items))
                    if a.output and a.output_mime in SHOWN_INLINE:
                        st.code(a.output, language=SHOWN_INLINE[a.output_mime])
                    elif a.output:
                        st.caption("The full report is the download above.")
