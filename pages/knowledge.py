"""Knowledge cards: browse and search; markdown with HTML disabled."""

import streamlit as st

from core.knowledge.cards import load_cards, search_cards
from core.knowledge.flags import link_flags
from core.launch import load_catalog
from core.pins import link_citations, source_url
from ui.common import ensure_app_frame, plain

ensure_app_frame()

st.title("Knowledge cards")
st.caption("Short, sourced notes on slime. Every fact cites the upstream file and line it comes from.")
st.page_link("pages/ask.py", label="Search flags, our checks and slime's error messages too (Ask)",
             icon=":material/search:")
cards = load_cards()
known_flags = {o for f in load_catalog().flags for o in f.option_strings}
query = st.text_input("Search the cards", key="kn_query", placeholder="batch size, colocate, async ...")
tags = sorted({t for c in cards for t in c.tags})
chosen_tags = st.multiselect("Tags", tags, key="kn_tags")
hits = [c for c in search_cards(query, cards) if set(chosen_tags) <= set(c.tags)]
st.caption(f"{len(hits)} of {len(cards)} cards")
if not hits:
    st.info(f"No card matches {plain(query.strip()) or 'these tags'}. Try a single word such as a flag name.")

for card in hits:
    with st.expander(card.title, expanded=len(hits) == 1 or card.id == st.query_params.get("card")):
        st.caption(card.summary)
        st.markdown(link_flags(link_citations(card.body), known_flags))  # our own files; unsafe_allow_html stays False
        st.caption("Sources: " + " · ".join(f"[`{s}`]({source_url(s)})" if source_url(s) else f"`{s}`"
                                            for s in card.sources) + f" · applies to slime {card.applies_to}")
        if card.tags:
            st.caption("Tags: " + ", ".join(card.tags))
