"""How every workflow page shows a drafted script: checks beside it, downloads only when ready."""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from core.drafts.launch import Draft
from ui.common import flag_link, plain, show_findings
from ui.memory import AcceptControl


@dataclass(frozen=True)
class ExtraFile:
    """A file drafted alongside the script (e.g. a YAML config), offered with it."""

    label: str
    data: str
    filename: str
    mime: str
    language: str
    caption: str


def show_draft(draft: Draft, *, key_prefix: str, extra_files: tuple[ExtraFile, ...] = (),
               summary_expanded: bool = True, accept: AcceptControl | None = None) -> None:
    """The draft with its checker findings beside it; a draft with an error is shown for reference only.

    With `accept`, a ready draft gets an "Accept this draft" button, and downloading its script accepts it too.
    """
    left, right = st.columns([3, 2])
    with right:
        st.markdown("**Checks**")
        show_findings(draft.findings, key_prefix=key_prefix,
                      empty_message="No findings: the checker passed this draft.")
    with left:
        if draft.ready:
            st.success("Ready for your review. Read every line marked YOUR CHOICE, then run it yourself.",
                       icon=":material/check_circle:")
            cols = st.columns(2 + len(extra_files))
            cols[0].download_button("Download the script (.sh)", draft.script, file_name=draft.filename,
                                    mime="text/x-shellscript", key=f"{key_prefix}_download_sh",
                                    on_click=accept.on_download if accept else "rerun")
            cols[1].download_button("Download the summary (.md)", draft.summary_markdown,
                                    file_name=draft.filename.removesuffix(".sh") + ".md", mime="text/markdown",
                                    key=f"{key_prefix}_download_md")
            for col, extra in zip(cols[2:], extra_files, strict=True):
                col.download_button(extra.label, extra.data, file_name=extra.filename, mime=extra.mime,
                                    key=f"{key_prefix}_download_{extra.filename}")
            if accept:
                accept.render()
        else:
            st.error("Not ready: fix the errors beside this draft first. It is shown for reference only.",
                     icon=":material/error:")
        if draft.script:
            st.code(draft.script, language="bash")
        flags_in_draft(draft.script)
        for extra in extra_files:
            st.caption(f"{plain(extra.caption)}:")
            st.code(extra.data, language=extra.language)
    if draft.summary_markdown:
        with st.expander("Configuration summary", expanded=summary_expanded):
            st.markdown(draft.summary_markdown)


def flags_in_draft(script: str) -> None:
    """Every catalog flag the draft names (command and comments), each linked to the flag reference."""
    import re

    from core.launch import load_catalog

    if not script:
        return
    catalog = load_catalog()
    named = [f for f in dict.fromkeys(re.findall(r"--[a-z0-9][a-z0-9\-]*", script)) if catalog.lookup(f)]
    if named:
        with st.expander(f"Flag reference for the {len(named)} flag(s) in this draft"):
            st.markdown(" · ".join(flag_link(f) for f in named))
