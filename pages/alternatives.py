"""Alternatives: what the user needs, and whether miles, verl or torchforge fits better than slime."""

import streamlit as st

from core.drafts import ALTERNATIVES_CARD as CARD
from core.drafts import NEED_LABELS, NEED_SHORT, Need, recommend, recommendation_markdown
from core.knowledge import get_card
from ui.common import ensure_app_frame, plain, profile_caption, require_profile
from ui.memory import AcceptControl, PageMemory

ensure_app_frame()

st.title("Alternatives")
profile = require_profile()
profile_caption(profile)
memory = PageMemory("alternatives", "alt", profile)
memory.done_caption()

st.write("slime is deliberately narrow: Megatron trains, SGLang generates, and your own functions shape the "
         "data. A few projects cover needs slime does not aim at. Tick what you need; the recommendation names "
         "another project only when your need matches what it was built for.")

NEED_KEYS = {Need.ENTERPRISE: "alt_need_enterprise", Need.SWAP_BACKENDS: "alt_need_backends",
             Need.PYTORCH_NATIVE: "alt_need_pytorch", Need.NONE: "alt_need_none"}
chosen = [need for need, key in NEED_KEYS.items()
          if memory.widget(st.checkbox, NEED_LABELS[need], key.removeprefix("alt_"), False)]

if not chosen:
    st.info("Tick at least one line (the last one if none of the others applies).")
    memory.progress(todo=["tick the needs that apply"], summary="no need ticked")
    st.stop()
if Need.NONE in chosen and len(chosen) > 1:
    st.warning("You ticked 'none of these' together with a need; the recommendation follows the needs you "
               "ticked.")

recommendations = recommend(chosen)
for rec in recommendations:
    st.subheader(f"{NEED_LABELS[rec.need]}: {rec.choice}")
    st.write(rec.reason)
    if rec.alternative:
        alt = rec.alternative
        st.markdown(f"**Scope.** {plain(alt.scope)}\n\n**Maturity.** {plain(alt.maturity)}")
        st.link_button(f"Open {alt.name} on GitHub", alt.url)
    st.caption("Sources: " + " · ".join(plain(s) for s in rec.sources))

card = get_card(CARD)
if card:
    st.page_link("pages/knowledge.py", label=f"Read more: {card.title}", icon=":material/menu_book:",
                 query_params={"card": card.id})

summary_md = recommendation_markdown(recommendations)
choices = ", ".join(f"{r.choice} for {NEED_SHORT[r.need]}" for r in recommendations)
done = [f"needs answered: {', '.join(NEED_SHORT[n] for n in chosen)}", f"recommendation: {choices}"]
accept = AcceptControl(memory, "Accept this recommendation", "accepted the recommendation",
                       f"Recommendation: {choices}", summary_md, "alternatives.md", "text/markdown", done=done)
c1, c2 = st.columns(2)
c1.download_button("Download this recommendation (.md)", summary_md, file_name="alternatives.md",
                   mime="text/markdown", key="alt_download", on_click=accept.on_download)
accept.render(c2)
memory.progress(done=done, todo=["accept the recommendation (or download it)"],
                summary=f"Recommendation: {choices}")
