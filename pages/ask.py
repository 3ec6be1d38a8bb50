"""Ask: one search over cards, flags, rules, the error messages of slime, Megatron-LM and SGLang, slime's log
lines, model scripts, runtime messages of the layers under slime, other frameworks' words and known bugs. A
pasted error line or traceback finds the place it comes from, or says plainly that nothing indexed matches.
Everything pasted is shown as plain text, never run."""

from __future__ import annotations

import streamlit as st

from core.knowledge import (
    KIND_TITLES,
    KINDS,
    LAYER_TITLES,
    MATCH_TITLES,
    MAX_PASTE_CHARS,
    Result,
    checkout_error_index,
    checkout_has_fix,
    distinct,
    explain,
    get_index,
    grouped,
    match_error,
    runtime_messages,
    slime_frames,
)
from core.knowledge import framework_terms as terms
from core.knowledge import known_bugs as bugs
from core.paths import describe_skipped
from core.pins import SLIME_SHORT, slime_source
from core.plan import is_oom_paste, sizing_answer, sizing_flags
from ui.common import CHECKOUT_KEY, active_profile, cited, ensure_app_frame, plain

ensure_app_frame()

RESULTS = 40
SHOWN_FIRST = 5  # the best few; the rest on request
_CARD_KINDS = ("card", "section")
cached_sizing = st.cache_data(max_entries=64, show_spinner=False)(sizing_answer)  # a large model's search: ~0.2 s

st.title("Ask")
st.caption("Search everything here at once: a flag in any spelling, a rule code such as SLIME003, plain words, "
           "or an error line or whole traceback from a failed run. Pasted text is only searched.")

asked = st.query_params.get("q")
if asked and st.session_state.get("ask_from_link") != asked:
    st.session_state["ask_from_link"] = asked
    st.session_state["ask_query"] = asked[:MAX_PASTE_CHARS]

query = st.text_area("Question, flag, rule code, error or traceback", key="ask_query", height=120,
                     max_chars=MAX_PASTE_CHARS, placeholder="rollout batch size · SLIME003 · AssertionError: ...")
kinds = st.multiselect("Only", KINDS, format_func=lambda k: KIND_TITLES[k], key="ask_kinds")
st.button("Search", type="primary", icon=":material/search:", key="ask_go")  # a rerun reads the box

if not query.strip():
    st.info("Type or paste something to look it up.")
    st.stop()

with st.spinner("Searching"):
    index = get_index()
    answer = index.ask(query, limit=RESULTS, kinds=set(kinds) or None)
    results = distinct(answer.results)

profile = active_profile()
sizing = cached_sizing(query, profile.gpu_model if profile else None)  # None unless it asks how many GPUs
if sizing is not None:
    details = [f"GPU type {sizing.gpu} ({sizing.gpu_from}); responses of {sizing.response_len} tokens "
               f"({sizing.response_from})."] + [f"Assumed: {a}" for a in sizing.assumptions]
    st.info(plain(sizing.message) + "\n\n" + plain(" ".join(details)) + (
        f"\n\nModel sizes from {cited(sizing.model_source)}." if sizing.model_source else ""), icon=":material/memory:")
    for flags in dict.fromkeys(f for f in (sizing_flags(sizing), sizing_flags(sizing, cpu_adam=True)) if f):
        st.code(flags, language="bash")
    st.page_link("pages/plan.py", label="Plan your own script or these numbers on Will it fit?", icon=":material/memory:")

if is_oom_paste(query):
    from core.plan import judge_oom

    memory = judge_oom(query, model=profile.model if profile else None, gpu=profile.gpu_model if profile else None)
    if memory is not None:
        st.info("**The numbers in your paste**\n\n" + "\n\n".join(plain(line) for line in memory.lines)
                + "\n\n" + plain(memory.plan_hint) + (f" ({plain(memory.gpu)}: {plain(memory.gpu_from)}.)"
                                                        if memory.gpu else ""), icon=":material/memory:")

checkout = st.session_state.get(CHECKOUT_KEY)
if checkout and (not kinds or "error" in kinds):
    with st.spinner("Reading your checkout's error messages"):
        checkout_index = checkout_error_index(checkout)
        in_checkout = match_error(query, checkout_index, limit=5)
    not_read = describe_skipped(checkout_index.skipped)
    if not_read:
        st.caption("Not read from your checkout: " + plain("; ".join(not_read)))
    if in_checkout:
        st.subheader("In your slime checkout")
        st.caption(f"{plain(checkout)}, as named on the launch-script checker; the explanations below are for slime "
                   "at the pinned commit.")
        for match in in_checkout:
            e = match.entry
            st.markdown(f"**{plain(e.exception)}: {plain(e.template)}**")
            st.caption(f"{plain(f'{e.path}:{e.line}')} in {plain(e.function)}"
                       + (f" · condition: {plain(e.condition)}" if e.condition else ""))

if not results:
    st.info("Nothing found. Try a flag name, a rule code or fewer words.")
    st.stop()

exact = {m.entry.id: m for m in index.match_messages(query, limit=10)}
if answer.pasted_error and answer.error_message is not None:
    st.caption(plain(f"Read from your paste: {answer.read_as}"
                     + (f" ({answer.where_raised})" if answer.where_raised else "")))
if answer.notice:
    st.warning(plain(answer.notice), icon=":material/search_off:")
frames = slime_frames(query)[:3]
if frames:
    st.caption(f"Your traceback passes through slime at (innermost first; lines as at slime {SLIME_SHORT}): "
               + " · ".join(cited(slime_source(path, line)) for path, line in frames))
more = len(results) - SHOWN_FIRST
show_all = more > 0 and st.toggle(f"Show {more} more result{'s' if more != 1 else ''}", key="ask_more")
shown = results if show_all or more <= 0 else results[:SHOWN_FIRST]
count = (f"The best {len(shown)} of {len(results)} results" if len(shown) < len(results)
         else f"{len(results)} result{'s' if len(results) != 1 else ''}")
st.caption(f"{count}, best first within each group; groups in the order of their best result.")


def show_error(result: Result, first: bool) -> None:
    entry = index.error(result.id)
    if entry is None:
        return
    why = explain(index, entry)
    with st.expander(f"{MATCH_TITLES[result.match]}: {plain(result.title)}", expanded=first):
        found = exact.get(entry.id)
        if found is not None and found.how in ("traceback-line", "traceback-code") and not entry.template:
            st.success(plain(f"Your traceback stops at this assert ({found.frame}), which has no message: the "
                             "condition below is what failed."), icon=":material/my_location:")
        elif found is not None and found.how == "traceback-code":
            st.info(plain(f"Your traceback shows this assert ({found.frame}) at another line: another version. Its "
                          "message differs."), icon=":material/my_location:")
        elif found is not None and found.how == "traceback-line":
            st.info(plain(f"Your traceback points at this line ({found.frame}), but its message differs: "
                          "another version, or a message built at run time."), icon=":material/my_location:")
        elif found is not None and found.how == "words":
            st.info("Your message has most of this one's distinctive words, worded a little differently "
                    "(another version?).", icon=":material/my_location:")
        elif found is not None:
            which = "an earlier exception of your traceback's chain" if found.how == "chain-message" else \
                "your final exception"
            st.success(plain(f"The message of {which} has every fixed word of this one, in order"
                             + (f"; your traceback also points at this line ({found.frame})." if found.frame
                                else ".")), icon=":material/my_location:")
        st.markdown("**What it means:** " + plain(why.meaning))
        st.markdown("**What to do:** " + plain(why.fix))
        st.caption(f"Message as written in the source: {plain(entry.template)}")
        st.caption(f"Source: {cited(entry.source)} · {entry.kind} in {plain(entry.function)}"
                   + ("".join(f" · the same text also at {cited(s)}" for s in result.also)))
        for code, title in why.rules:
            target = "pages/check_data.py" if code.startswith("DATA") else "pages/check_args.py"
            st.page_link(target, label=plain(f"{code}: {title}"), icon=":material/fact_check:")
        for card_id, title in why.cards:
            st.page_link("pages/knowledge.py", label=plain(f"Card: {title}"), icon=":material/menu_book:",
                         query_params={"card": card_id})


def show_runtime(result: Result, first: bool) -> None:
    m = next((x for x in runtime_messages() if x.id == result.id), None)
    if m is None:
        return
    with st.expander(plain(result.title), expanded=first):
        st.markdown("**What it means:** " + plain(m.meaning))
        if m.normal:
            st.info(plain(m.normal), icon=":material/check_circle:")
        st.markdown("**Usual causes in slime, in the order to check them:**")
        for n, cause in enumerate(m.causes, 1):
            knobs = ", ".join([*cause.flags, *cause.env])
            st.markdown(f"{n}. " + plain(cause.why) + (f" (`{knobs}`)" if knobs else ""))
        st.markdown("**Check first:** " + plain(m.check_first))
        st.caption(f"Layer: {LAYER_TITLES[m.layer]} · Source: " + " · ".join(cited(s) for s in m.sources[:3]))
        for code in m.rules:
            target = "pages/check_data.py" if code.startswith("DATA") else "pages/check_args.py"
            st.page_link(target, label=plain(f"{code} catches this cause before launch"), icon=":material/fact_check:")
        for card_id in m.cards[:3]:
            st.page_link("pages/knowledge.py", label=plain(f"Card: {card_id}"), icon=":material/menu_book:",
                         query_params={"card": card_id})


def show_term(result: Result) -> None:
    t = next((x for x in terms() if x.id == result.id), None)
    if t is None:
        return
    st.markdown(f"**{plain(result.title)}**")
    st.caption(plain(t.meaning))
    st.markdown(plain(t.slime))
    st.caption("Source: " + " · ".join(cited(s) for s in t.sources[:2]))


def show_bug(result: Result, first: bool) -> None:
    b = next((x for x in bugs() if x.id == result.id), None)
    if b is None:
        return
    with st.expander(plain(result.title), expanded=first):
        st.markdown(plain(b.symptom))
        st.success(plain(f"{b.fixed_upstream[0].upper()}{b.fixed_upstream[1:]}."), icon=":material/build:")
        st.markdown("**Affected:** " + plain(b.affected))
        st.markdown("**Cause:** " + plain(b.cause))
        st.markdown("**Workaround:** " + plain(b.workaround))
        if checkout:
            status = checkout_has_fix(b, checkout)
            verdict = {True: "Your checkout has the fix", False: "Your checkout does not have the fix",
                       None: "Whether your checkout has the fix cannot be told"}[status.has_fix]
            (st.warning if status.has_fix is False else st.caption)(plain(f"{verdict}: {status.detail}."))
        st.caption(f"Fix: {cited(b.fix_url)} · Threads: " + " · ".join(cited(t) for t in b.threads))


def show_result(result: Result) -> None:
    if result.kind == "flag":
        st.page_link("pages/flags.py", label=plain(result.title), icon=":material/flag:",
                     query_params={"flag": result.id})
    elif result.kind in _CARD_KINDS:
        st.page_link("pages/knowledge.py", label=plain(result.title), icon=":material/menu_book:",
                     query_params={"card": result.id.split("#", 1)[0]})
    elif result.kind == "rule":
        target = "pages/check_data.py" if result.id.startswith("DATA") else "pages/check_args.py"
        st.page_link(target, label=plain(result.title), icon=":material/fact_check:")
    elif result.kind == "model_script":
        st.page_link("pages/model_checkpoint.py", label=plain(result.title), icon=":material/memory:")
    else:
        st.markdown(f"**{plain(result.title)}**")
    st.caption(f"{MATCH_TITLES[result.match]} · {plain(result.snippet)}  \nSource: {cited(result.source)}"
               + "".join(f" · {cited(s)}" for s in result.also))


for kind, items in grouped(shown).items():
    st.subheader(KIND_TITLES[kind])
    for i, result in enumerate(items):
        if kind in ("error", "log"):
            show_error(result, first=i == 0)
        elif kind == "runtime":
            show_runtime(result, first=i == 0)
        elif kind == "term":
            show_term(result)
        elif kind == "bug":
            show_bug(result, first=i == 0)
        else:
            show_result(result)
