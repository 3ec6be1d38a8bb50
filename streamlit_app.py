"""Entry point: declares every page, draws the shared frame, runs the chosen page."""

from __future__ import annotations

import streamlit as st

from core.memory import WORKFLOWS
from core.pins import SLIME_DATE, SLIME_SHORT
from ui.common import (
    active_profile,
    ask_box,
    mark_app_frame,
    plain,
    show_store_notices,
    warm_up_in_background,
)

# The browser-tab icon is an emoji: Streamlit draws it as an inline SVG. A ":material/...:" icon there (the
# page's own icon, or page_icon) is fetched from fonts.gstatic.com: the app makes no request off this machine.
TAB_ICON = "🧪"
st.set_page_config(page_title="slime assistant", page_icon=TAB_ICON, layout="wide")

_workflow_pages = {wf.id: st.Page(wf.page, title=wf.title, icon=wf.icon) for wf in WORKFLOWS}

pages = {
    "Start": [
        st.Page("pages/home.py", title="Home", icon=":material/home:", default=True),
        st.Page("pages/profile.py", title="Profile", icon=":material/person:"),
        st.Page("pages/progress.py", title="What's done", icon=":material/checklist:"),
    ],
    "Set up a run": [_workflow_pages[k] for k in ("grpo", "async", "multi_turn", "model_checkpoint",
                                                   "alternatives")],
    "Check before launch": [_workflow_pages[k] for k in ("check_args", "check_data")]
    + [st.Page("pages/batch_calculator.py", title="Batch-size calculator", icon=":material/calculate:"),
       st.Page("pages/plan.py", title="Will it fit?", icon=":material/memory:")],
    "During training": [_workflow_pages["monitor"]],
    "Learn": [
        st.Page("pages/ask.py", title="Ask", icon=":material/search:"),
        st.Page("pages/flags.py", title="Flag reference", icon=":material/flag:"),
        st.Page("pages/knowledge.py", title="Knowledge cards", icon=":material/menu_book:"),
    ],
}

page = st.navigation(pages, expanded=True)  # every page listed, none behind "View more"

with st.sidebar:
    ask_box("sidebar")
    profile = active_profile()
    if profile:
        st.caption(f"Profile: **{plain(profile.name)}** · {plain(profile.model)} · {profile.gpus_total} GPU(s)")
    st.caption(f"Facts pinned to slime {SLIME_SHORT} ({SLIME_DATE}). Nothing here runs a command: "
               "every command is a draft for you to review.")

show_store_notices()
mark_app_frame()
try:
    page.run()
finally:  # after the page is drawn (also when it stops early): the other pages' first visits find it loaded
    warm_up_in_background()
