"""Flag reference: every flag slime's command line accepts (slime, Megatron, SGLang, router) with its owner,
type, default, choices, help, source and how slime's own launch scripts use it. Widgets only; the logic is in
core.knowledge.flags. Follows the user's own checkout when one was given on the launch-script checker."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.knowledge import FlagRow, checkout_flag_view, filter_rows, flag_rows, get_index, load_flag_reference
from core.launch import load_catalog
from core.pins import SLIME_SHORT
from ui.common import cited, ensure_app_frame, own_sources, plain, versions_caption

ensure_app_frame()

MAX_QUERY_CHARS = 200


def usage_frame(values: dict[str, int]) -> pd.DataFrame:
    """The values slime's scripts give a flag, most used first; numbers as numbers, so they sort as numbers."""
    def number(text: str) -> float | None:
        try:
            return float(text)
        except ValueError:
            return None

    numeric = bool(values) and all(number(v) is not None for v in values)
    order = sorted(values.items(), key=lambda kv: (-kv[1], number(kv[0]) if numeric else 0, kv[0]))
    shown = [(int(n) if n.is_integer() else n) if numeric and (n := number(v)) is not None else v for v, _ in order]
    return pd.DataFrame({"value": shown, "scripts": [c for _, c in order]})

st.title("Flag reference")


@st.cache_resource(show_spinner=False)
def bundled_rows() -> list[FlagRow]:
    return flag_rows(load_catalog(), load_flag_reference())


checkout, sglang_source, megatron_source = own_sources()
if checkout:
    with st.spinner("Reading your checkout"):
        rows, reference, problems, versions = checkout_flag_view(checkout, sglang_source, megatron_source)
    for problem in problems:
        st.warning(plain(problem))
    st.caption(f"Following your slime checkout {plain(str(checkout))} (set on the launch-script checker or your "
               f"profile): its flags, help texts and its {reference.scripts_read} launch scripts.")
    if reference.scripts_not_read:
        st.caption("Not read from your checkout: " + plain("; ".join(reference.scripts_not_read)))
    versions_caption(versions)
else:
    rows, reference = bundled_rows(), load_flag_reference()
    st.caption(f"{len(rows):,} flags at slime {SLIME_SHORT} and the Megatron-LM, SGLang and router versions it "
               f"pins; usage from slime's {reference.scripts_read} launch scripts. Name your own checkout on the "
               "launch-script checker to follow it here.")

wanted = st.query_params.get("flag")
if wanted and st.session_state.get("fl_from_link") != wanted:
    st.session_state["fl_from_link"] = wanted
    st.session_state["fl_query"] = wanted[:MAX_QUERY_CHARS]

query = st.text_input("Search flags", key="fl_query", max_chars=MAX_QUERY_CHARS,
                      placeholder="--rollout-batch-size, rollout_batch_size, kl loss ...")
c1, c2, c3, c4 = st.columns([2, 2, 3, 2])
owners = c1.multiselect("Owner", sorted({r.owner for r in rows}), key="fl_owner")
types = c2.multiselect("Type", sorted({r.type for r in rows}), key="fl_type")
groups = c3.multiselect("Group", sorted({r.group for r in rows}), key="fl_group")
deprecated = c4.toggle("Deprecated only", key="fl_deprecated")
hits = filter_rows(rows, query, owners, types, groups, deprecated)
st.caption(f"{len(hits):,} of {len(rows):,} flags")

if not hits:
    close = get_index().close_flags(query) if query.strip() else []
    hint = f" Did you mean {', '.join(close)}?" if close else ""
    st.info(plain(f"No flag matches {query.strip() or 'these filters'}.{hint}"))
    st.stop()

frame = pd.DataFrame([{"flag": r.flag, "owner": r.owner, "type": r.type, "default": r.default,
                       "group": r.group, "scripts": r.usage.scripts, "deprecated": bool(r.deprecated)}
                      for r in hits])
st.dataframe(frame, hide_index=True, width="stretch", key="fl_table", height=min(36 * (len(hits) + 1), 360))

names = [r.flag for r in hits]
chosen = st.selectbox("Details for", names, index=0, key="fl_detail")
row = next(r for r in hits if r.flag == chosen)

st.subheader(row.flag)
if row.aliases:
    st.caption("Also spelt: " + ", ".join(plain(a) for a in row.aliases))
if row.deprecated:
    st.warning(plain(f"Deprecated: {row.deprecated}"), icon=":material/warning:")
m1, m2, m3 = st.columns(3)
m1.markdown(f"**Owner**  \n{plain(row.owner)}")
m2.markdown(f"**Type**  \n{plain(row.type)}")
m3.markdown(f"**Default**  \n{plain(row.default)}")
if row.choices:
    st.markdown("**Choices:** " + ", ".join(plain(c) for c in row.choices))
if row.our_help:
    st.markdown(f"**In short** (our words)  \n{plain(row.our_help)}")
    if row.our_help_source:
        st.caption(f"Based on {cited(row.our_help_source)}")
if row.help:
    st.markdown(f"**Help** (the source's own text)  \n{plain(row.help)}")
elif not row.our_help:
    st.caption("The source gives this flag no help text.")
st.caption(f"Group: {plain(row.group)} · Registered at {cited(row.source)}"
           + (f" · default changed by slime at {cited(row.reset_source)}" if row.reset_source else ""))
for note in row.notes:
    st.caption(plain(note))

st.markdown("**In slime's own launch scripts**")
if row.usage.scripts:
    st.write(f"Set by {row.usage.scripts} of {reference.scripts_read} launch scripts.")
    st.dataframe(usage_frame(row.usage.values), hide_index=True, key="fl_values")
    st.caption("For example: " + ", ".join(f"`{e}`" for e in row.usage.examples))
else:
    st.caption(f"None of the {reference.scripts_read} launch scripts sets it.")

index = get_index()
spec = next((f for f in index.catalog.flags if f.primary == row.flag), None)
cards, messages = index.about_flag(row.flag, spec.dest if spec is not None else None)
if cards:
    st.markdown("**Cards that explain it**")
    for card in cards:
        st.page_link("pages/knowledge.py", label=plain(card.title), icon=":material/menu_book:",
                     query_params={"card": card.id})
if messages:
    with st.expander(f"Error messages that check it ({len(messages)})"):
        for entry in messages:
            st.markdown(f"{plain(entry.exception)}: {plain(entry.template)}  \n{cited(entry.source)}")
