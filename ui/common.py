"""Shared Streamlit pieces: the store singleton, the active profile, findings and records."""

from __future__ import annotations

import time
from pathlib import Path
from urllib.parse import quote

import streamlit as st

from core.data import DataKeys
from core.findings import Finding, Severity, count_by_severity
from core.knowledge import get_card
from core.memory import Profile, SavedLaunchKeys, Store
from core.paths import PathRefused, resolve_allowed
from core.pins import source_url

FRAME_KEY = "_slime_assistant_frame"
CHECKOUT_KEY = "slime_checkout"  # the user's slime checkout, set on the launch-script checker, followed elsewhere
SGLANG_KEY = "sglang_source"  # the user's SGLang (installed package or checkout), with the checkout
MEGATRON_KEY = "megatron_source"  # the user's Megatron-LM checkout, with the checkout
_SOURCES_SEEDED = "_own_versions_seeded"
ASK_PAGE = "pages/ask.py"


# What the workflow pages import and load on their first visit in a server process (pandas for their tables,
# the launch checker their drafts go through, the argument catalog, the drafting and agent-check code): read
# once, in the background, after the first page the server shows, so that the next first visit finds it ready.
WARM_MODULES = ("pandas", "core.launch.check", "core.drafts.launch", "core.drafts.agent_check",
                "core.drafts.model_config", "core.knowledge.flags", "core.knowledge.search", "core.model_scripts")
_WARMING: list[object] = []


def warm_up_in_background() -> None:
    """Start, once per process, a daemon thread that imports WARM_MODULES and loads the argument catalog, the
    flag reference and the model scripts (module imports and cached reads only: nothing is written, nothing
    recorded). A failure there only leaves the work to the page that needs it."""
    import threading

    if _WARMING:
        return

    def warm() -> None:
        import importlib

        try:
            for name in WARM_MODULES:
                importlib.import_module(name)
            from core.knowledge import load_flag_reference
            from core.launch import load_catalog
            from core.model_scripts import load_model_scripts

            load_catalog()
            load_flag_reference()
            load_model_scripts()
        except Exception:  # noqa: BLE001 - the page that needs it reports the problem itself
            return

    thread = threading.Thread(target=warm, name="slime-assistant-warm-up", daemon=True)
    _WARMING.append(thread)
    thread.start()


def mark_app_frame() -> None:
    """Called by streamlit_app.py before it runs the chosen page."""
    st.session_state[FRAME_KEY] = True


def ensure_app_frame() -> None:
    """Make sure a page runs inside streamlit_app.py's declared navigation.

    Streamlit still auto-discovers a `pages/` folder until the entry script has called st.navigation once
    in the server's life: a first visit straight to a page URL (a bookmark, after a restart) would run that
    page alone, with a navigation of raw file names. Hand over to the entry script, keeping the URL.
    """
    if st.session_state.get(FRAME_KEY):
        seed_own_versions()
        return
    from streamlit.runtime.pages_manager import PagesManager

    PagesManager.uses_pages_directory = False
    st.rerun()


@st.cache_resource
def get_store() -> Store:
    """One diskcache-backed store per server process (diskcache is thread- and process-safe)."""
    return Store()


def show_store_notices(*, new_warnings_only: bool = False) -> None:
    """Store problems: an error (answers not kept) on every page; a warning once per browser session.

    A page that reads many saved items calls it again with `new_warnings_only` after reading them, so that a
    value found unreadable during this run is reported at once.
    """
    shown = st.session_state.setdefault("_store_notices_shown", set())
    for notice in get_store().notices:
        if notice.level == "error":
            if not new_warnings_only:
                st.error(plain(notice.message), icon=":material/warning:")
        elif notice.message not in shown:
            shown.add(notice.message)
            st.warning(plain(notice.message), icon=":material/warning:")


def own_source(raw: str | None, kind: str) -> tuple[Path | None, str | None]:
    """A directory the user named as their slime checkout, SGLang or Megatron source (`kind`): the path when
    the app may read it and it is one, else (None, why not). Blank text is (None, None)."""
    from core.launch import SourceError, megatron_root, sglang_root, slime_problem

    if not raw or not raw.strip():
        return None, None
    try:
        path = resolve_allowed(raw, want="dir").path
    except PathRefused as exc:
        return None, str(exc)
    if kind == "slime":
        problem = slime_problem(path)
        return (None, problem) if problem else (path, None)
    try:
        (sglang_root if kind == "sglang" else megatron_root)(path)
    except SourceError as exc:
        return None, str(exc)
    return path, None


def seed_own_versions() -> None:
    """Once per browser session, follow the profile's own versions (checkout, SGLang, Megatron) on every page."""
    if st.session_state.get(_SOURCES_SEEDED):
        return
    st.session_state[_SOURCES_SEEDED] = True
    try:
        profile = active_profile()
    except Exception:  # noqa: BLE001 - an unreadable store is reported by the pages themselves
        return
    if profile is None:
        return
    for key, kind, raw in ((CHECKOUT_KEY, "slime", profile.slime_checkout),
                           (SGLANG_KEY, "sglang", profile.sglang_source),
                           (MEGATRON_KEY, "megatron", profile.megatron_source)):
        path, _ = own_source(raw, kind)
        if path is not None and key not in st.session_state:
            st.session_state[key] = str(path)


def own_sources() -> tuple[Path | None, Path | None, Path | None]:
    """The slime checkout, SGLang and Megatron sources the pages follow (set on the checker or the profile)."""
    def get(key: str) -> Path | None:
        value = st.session_state.get(key)
        return Path(value) if value else None

    slime = get(CHECKOUT_KEY)
    return slime, get(SGLANG_KEY) if slime else None, get(MEGATRON_KEY) if slime else None


def own_model_scripts() -> tuple | None:
    """The model scripts of the checkout the pages follow (for `match_model(name, own_model_scripts())`), or
    None for the ones slime ships at the pin."""
    from core.launch import checkout_model_scripts

    slime, _, _ = own_sources()
    return (checkout_model_scripts(slime) or None) if slime is not None else None


def versions_caption(versions: list[dict]) -> None:
    """The versions a report was checked against, each with where it came from."""
    from core.launch import versions_line

    line = versions_line(versions)
    if line:
        st.caption(plain(line[0].upper() + line[1:]))


def active_profile() -> Profile | None:
    return get_store().active_profile()


def require_profile() -> Profile:
    """The saved profile, or stop the page with a pointer to the first-visit questions."""
    profile = active_profile()
    if profile is None:
        st.info("Tell us your model, data file and GPUs first: it takes ten seconds, and every page "
                "uses the answers.")
        st.page_link("pages/home.py", label="Answer the three questions", icon=":material/arrow_forward:")
        st.stop()
    return profile


GUEST_GPUS = 8  # what the tool pages assume before the first-visit questions are answered


def profile_or_guest() -> Profile:
    """The saved profile, or before the first-visit questions a stand-in for the profile they will create.

    The tool pages (checker, data check, monitor) work at once: a user who only wants to check a script is
    invited to answer the questions, not stopped. What they do there is kept under the name the answers will
    be saved as, so it is still there (inputs, What's done) once they answer.
    """
    profile = active_profile()
    if profile is not None:
        return profile
    return Profile.model_construct(name="default", model="", data_path="", gpus_total=GUEST_GPUS,
                                   gpus_per_node=None)


def profile_caption(profile: Profile) -> None:
    if active_profile() is None:
        with st.container(border=True):
            st.caption("No profile yet: this page works without one. Answering the three questions on Home "
                       "(model, data file, GPUs) pre-fills it and every other page.")
            st.page_link("pages/home.py", label="Answer the three questions", icon=":material/arrow_forward:")
        return
    nodes = f" over {profile.nodes} nodes of {profile.per_node}" if profile.nodes > 1 else ""
    st.caption(f"Profile **{plain(profile.name)}**: model {plain(profile.model)}, data "
               f"{plain(profile.data_path)}, {profile.gpus_total} GPU(s){nodes}. Change these on the Profile page.")


def remember_launch_keys(profile: Profile, origin: str, keys: DataKeys) -> None:
    """Keep the data keys of the user's latest draft or checked script, for the data checker to pre-fill."""
    store = get_store()
    current = store.launch_keys(profile.name)
    if current is None or current.keys != keys or current.origin != origin:
        store.save_launch_keys(profile.name, SavedLaunchKeys(keys=keys, origin=origin, updated_at=time.time()))


def saved_launch_keys(profile: Profile) -> SavedLaunchKeys | None:
    return get_store().launch_keys(profile.name)


_SEVERITY_UI = {
    Severity.ERROR: (st.error, ":material/error:"),
    Severity.WARNING: (st.warning, ":material/warning:"),
    Severity.INFO: (st.info, ":material/info:"),
}


def show_findings(findings: list[Finding], *, key_prefix: str, empty_message: str = "No findings.") -> None:
    """Findings grouped by severity; user-derived text is shown as plain text, never as HTML."""
    if not findings:
        st.success(empty_message, icon=":material/check_circle:")
        return
    counts = count_by_severity(findings)
    st.write(f"{counts['error']} error(s), {counts['warning']} warning(s), {counts['info']} note(s)")
    for sev in (Severity.ERROR, Severity.WARNING, Severity.INFO):
        group = [f for f in findings if f.severity == sev]
        if not group:
            continue
        box, icon = _SEVERITY_UI[sev]
        with st.expander(f"{sev.value.capitalize()}s ({len(group)})", expanded=sev != Severity.INFO):
            for f in group:
                where = f"line {f.line} · " if f.line is not None else ""
                flag = f" · {f.flag}" if f.flag else ""
                lines = [f"{f.code} · {where}{f.message}{flag}"]
                if f.fix:
                    lines.append(f"Fix: {f.fix}")
                text = plain("\n\n".join(lines))
                if f.source:
                    url = source_url(f.source)
                    text += f"\n\nSource: [{plain(f.source)}]({url})" if url else f"\n\nSource: {plain(f.source)}"
                card = get_card(f.card) if f.card else None
                if card:
                    text += f"\n\n[Read more: knowledge card '{plain(card.title)}'](knowledge?card={quote(card.id)})"
                if f.flag and f.flag.startswith("--"):
                    text += f"\n\nFlag reference: {flag_link(f.flag)}"
                box(text, icon=icon)


def ask_box(where: str) -> None:
    """The "Ask" search box (sidebar of every page, and Home): a submitted query opens the Ask page."""
    with st.form(f"ask_form_{where}", clear_on_submit=True, border=False):
        query = st.text_input("Ask", key=f"ask_box_{where}", max_chars=2000,
                              placeholder="a flag, a rule code, an error, words")
        submitted = st.form_submit_button("Search", icon=":material/search:")
    if submitted and query.strip():
        st.switch_page(ASK_PAGE, query_params={"q": query.strip()})


def cited(citation: str) -> str:
    """A `path:line@pin` citation as markdown: a link to the upstream lines when it has a web address."""
    url = source_url(citation)
    return f"[`{citation}`]({url})" if url else f"`{citation}`"


def flag_link(flag: str) -> str:
    """Markdown link to a flag on the reference page; the label is escaped and the target URL-quoted."""
    from core.knowledge import flag_url

    return f"[{plain(flag)}]({flag_url(flag)})"


def plain(text: str) -> str:
    """Escape markdown so that text from users, uploads or logs shows literally."""
    out = []
    for ch in str(text):
        if ch in "\\`*_{}[]()<>#+-.!|~$:":
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def prose(text: str) -> str:
    """Our own short text (a card's summary) as markdown: its code spans shown as code, bare citations and
    `__init__.py`-like file names made code too, everything else escaped so it shows literally."""
    import re

    from core.knowledge import mark_code

    out, pos = [], 0
    marked = mark_code(str(text))
    for m in re.finditer(r"(`+)(.+?)\1", marked):
        out += [plain(marked[pos:m.start()]), f"`{m.group(2)}`" if "`" not in m.group(2) else plain(m.group(2))]
        pos = m.end()
    out.append(plain(marked[pos:]))
    return "".join(out)


def show_table(frame, *, labels: dict[str, str] | None = None) -> None:
    """A small table shown whole: every cell in full, wrapped inside its column, no scroll of its own.

    st.table reads cells as Markdown, so every cell and header is escaped: values from files or users show
    literally. For long lists that need sorting and scrolling, use st.dataframe instead."""
    labels = labels or {}
    shown = frame.rename(columns={c: plain(labels.get(c, str(c).replace("_", " "))) for c in frame.columns})
    shown = shown.map(lambda v: "" if v is None else plain(str(v)))
    st.table(shown.reset_index(drop=True), border="horizontal")
