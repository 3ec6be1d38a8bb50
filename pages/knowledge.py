"""Knowledge cards: browse them, or search them with the same index as Ask; markdown with HTML disabled.

Only an open card's body is rendered (each card is an expander that reruns when opened), so the page stays
light with every card listed."""

import streamlit as st

from core.knowledge import Card, display_markdown, get_index, link_flags
from core.pins import link_citations, source_url
from ui.common import ensure_app_frame, plain, prose

ensure_app_frame()

KINDS = {"card", "section"}
MAX_HITS = 200
BEST_FIRST = 5  # a search shows its best few cards; the others on request


@st.cache_data(show_spinner=False, max_entries=256)
def card_markdown(card_id: str, body: str) -> str:
    """A card's body ready to show: short headings, citations and flag names linked (our own files only)."""
    from core.launch import load_catalog

    known_flags = {o for f in load_catalog().flags for o in f.option_strings}
    return link_flags(link_citations(display_markdown(body)), known_flags)


def matching_cards(query: str, cards: tuple[Card, ...]) -> tuple[list[Card], dict[str, str]]:
    """Cards in Ask's order for this query (a card or one of its sections matched), with the best snippet."""
    by_id = {c.id: c for c in cards}
    order: list[str] = []
    snippets: dict[str, str] = {}
    for result in get_index().search(query, limit=MAX_HITS, kinds=KINDS):
        card_id = result.id.split("#", 1)[0]
        if card_id in by_id and card_id not in snippets:
            order.append(card_id)
            snippets[card_id] = result.snippet
    return [by_id[i] for i in order], snippets


st.title("Knowledge cards")
st.caption("Short, sourced notes on slime. Every fact cites the upstream file and line it comes from.")
st.page_link("pages/ask.py", label="Search flags, our checks and slime's error messages too (Ask)",
             icon=":material/search:")
index = get_index()
cards = index.cards
query = st.text_input("Search the cards", key="kn_query", max_chars=500,
                      placeholder="batch size, colocate, async ...",
                      help="The same search as Ask, over the cards and their sections.")
tags = sorted({t for c in cards for t in c.tags})
chosen_tags = st.multiselect("Tags", tags, key="kn_tags")
if query.strip():
    found, snippets = matching_cards(query, cards)
else:
    found, snippets = list(cards), {}
hits = [c for c in found if set(chosen_tags) <= set(c.tags)]
weaker = len(hits) - BEST_FIRST if query.strip() else 0
if weaker > 0:
    st.caption(f"The {BEST_FIRST} best of the {len(hits)} cards that share words with your search, best first "
               f"(of {len(cards)} cards in all)")
    if not st.toggle(f"Show the {weaker} other card{'s' if weaker != 1 else ''}, which match less well",
                     key="kn_more"):
        hits = hits[:BEST_FIRST]
else:
    st.caption(f"{len(hits)} of {len(cards)} cards" + (", best first" if query.strip() and hits else ""))
if not hits:
    st.info(f"No card matches {plain(query.strip()) or 'these tags'}. Try a single word such as a flag name.")

linked = st.query_params.get("card")
for card in hits:
    box = st.expander(card.title, expanded=len(hits) == 1 or card.id == linked, key=f"kn_open_{card.id}",
                      on_change="rerun")
    if not box.open:
        continue
    with box:
        st.caption(prose(card.summary))
        if card.id in snippets:
            st.caption("Matched: " + plain(snippets[card.id]))
        st.markdown(card_markdown(card.id, card.body))  # our own files; unsafe_allow_html stays False
        st.caption("Sources: " + " · ".join(f"[`{s}`]({source_url(s)})" if source_url(s) else f"`{s}`"
                                            for s in card.sources) + f" · applies to slime {card.applies_to}")
        if card.tags:
            st.caption("Tags: " + ", ".join(card.tags))
