"""Knowledge cards: every card parses, is pinned and sourced, has no HTML, and is reachable in the app."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from core.knowledge.cards import CARDS_DIR, SOURCE_RE, Card, CardError, load_cards, parse_card, search_cards
from core.pins import MEGATRON_SHORT, SGLANG_VERSION, SLIME_COMMIT, SLIME_SHORT, pinned_source_dir

ROOT = Path(__file__).resolve().parents[2]
CARD_IDS = sorted(p.stem for p in CARDS_DIR.glob("*.md"))
PINS = {SLIME_SHORT, MEGATRON_SHORT, SGLANG_VERSION}

# Where the pinned upstream trees live on a development machine; citation checks skip when absent.
UPSTREAM_ROOTS = {
    SLIME_SHORT: pinned_source_dir("slime"),
    MEGATRON_SHORT: pinned_source_dir("megatron"),
    SGLANG_VERSION: pinned_source_dir("sglang"),
}
CITATION_RE = re.compile(r"([A-Za-z0-9_.\-/]+\.[A-Za-z0-9]+)(?::(\d+)(?:-(\d+))?)?@(" +
                         "|".join(re.escape(p) for p in PINS) + r")\b")
HTML_TAG_RE = re.compile(r"</?[A-Za-z][A-Za-z0-9-]*(\s[^<>]*)?/?>")
CODE_RE = re.compile(r"```.*?```|`[^`\n]*`", re.S)
# Ways the app's code names a card: Finding(card="x"), CARD = "x", BATCH_CARD: str = "x", get_card("x"),
# query_params={"card": "x"}.
CARD_REF_RES = (
    re.compile(r"""\b(?:[A-Za-z0-9]+_)*(?:card|CARD)(?:_[A-Za-z0-9]+)*\s*(?::\s*str\s*)?=\s*["']([a-z0-9][a-z0-9-]*)["']"""),
    re.compile(r"""\bget_card\(\s*["']([a-z0-9][a-z0-9-]*)["']"""),
    re.compile(r"""["']card["']\s*:\s*["']([a-z0-9][a-z0-9-]*)["']"""),
)
# The cards other code links to by id (task brief); they must keep these names.
EXPECTED_IDS = {"argument-categories", "batch-size", "gpu-placement", "alternatives", "multi-turn-agent",
                "async-training", "checkpoints", "source-vs-folklore", "getting-started"}


def read_card(card_id: str) -> Card:
    return parse_card(card_id, (CARDS_DIR / f"{card_id}.md").read_text(encoding="utf-8"))


def html_tags_outside_code(markdown: str) -> list[str]:
    """Raw HTML tags in markdown text, ignoring fenced and inline code."""
    return [m.group(0) for m in HTML_TAG_RE.finditer(CODE_RE.sub("", markdown))]


def card_references(source: str) -> set[str]:
    """Card ids a Python source text refers to."""
    return {m.group(1) for rx in CARD_REF_RES for m in rx.finditer(source)}


def resolve_citation(path: str, pin: str) -> Path:
    """The local file a `path@pin` citation names (the SGLang wheel drops the repo's python/ prefix)."""
    if pin == SGLANG_VERSION:
        path = path.removeprefix("python/")
    return UPSTREAM_ROOTS[pin] / path


def test_expected_cards_exist():
    assert EXPECTED_IDS <= set(CARD_IDS)


@pytest.mark.parametrize("card_id", CARD_IDS, ids=str)
def test_card_parses_with_pinned_wellformed_sources(card_id):
    card = read_card(card_id)
    assert card.id == card_id
    assert card.applies_to in {SLIME_SHORT, SLIME_COMMIT}
    assert card.sources
    for source in card.sources:
        assert SOURCE_RE.match(source), source
        if not source.startswith(("http://", "https://")):
            assert source.rsplit("@", 1)[1] in PINS, f"{source} is not pinned to a known upstream version"


@pytest.mark.parametrize("card_id", CARD_IDS, ids=str)
def test_card_body_has_no_raw_html(card_id):
    card = read_card(card_id)
    assert html_tags_outside_code(card.body) == []
    assert html_tags_outside_code(card.title + " " + card.summary) == []


@pytest.mark.parametrize("card_id", CARD_IDS, ids=str)
def test_card_citations_point_at_real_upstream_lines(card_id):
    text = (CARDS_DIR / f"{card_id}.md").read_text(encoding="utf-8")
    citations = CITATION_RE.findall(text)
    available = [c for c in citations if UPSTREAM_ROOTS[c[3]].is_dir()]
    if not available:
        pytest.skip("pinned upstream sources are not on this machine")
    for path, start, end, pin in available:
        target = resolve_citation(path, pin)
        assert target.is_file(), f"{path}@{pin} does not exist"
        if start:
            n_lines = len(target.read_text(encoding="utf-8", errors="replace").splitlines())
            last = int(end or start)
            assert 1 <= int(start) <= last <= n_lines, f"{path}:{start}-{last}@{pin} beyond {n_lines} lines"


@pytest.mark.parametrize("markdown, expected", [
    ("plain text with a < b and x > y", []),
    ("a `<script>` tag inside code is fine", []),
    ("```\n<div>fenced</div>\n```", []),
    ("a <b>bold</b> word", ["<b>", "</b>"]),
    ('an <img src="x.png"> image', ['<img src="x.png">']),
], ids=str)
def test_html_detector(markdown, expected):
    assert html_tags_outside_code(markdown) == expected


@pytest.mark.parametrize("source, expected", [
    ('Finding(code="X1", card="batch-size")', {"batch-size"}),
    ("get_card('gpu-placement')", {"gpu-placement"}),
    ('st.page_link("pages/knowledge.py", query_params={"card": "checkpoints"})', {"checkpoints"}),
    ('CARD = "multi-turn-agent"', {"multi-turn-agent"}),
    ('BATCH_CARD: str = "batch-size"', {"batch-size"}),
    ('discard = "not-a-card"', set()),
    ("card = get_card(f.card) if f.card else None", set()),
], ids=str)
def test_card_reference_scanner(source, expected):
    assert card_references(source) == expected


def test_every_card_referenced_in_code_exists():
    referenced: dict[str, list[str]] = {}
    for folder in ("core", "pages", "ui"):
        for py in sorted((ROOT / folder).rglob("*.py")):
            for card_id in card_references(py.read_text(encoding="utf-8")):
                referenced.setdefault(card_id, []).append(str(py.relative_to(ROOT)))
    missing = {cid: where for cid, where in referenced.items() if cid not in CARD_IDS}
    assert not missing, f"cards referenced but not written: {missing}"


@pytest.mark.parametrize("text, problem", [
    ("no front matter at all", CardError),
    ("---\ntitle: [unclosed\n---\nbody", CardError),
    ("---\n- a list\n---\nbody", CardError),
    ("---\ntitle: T\nsummary: S\nsources: [not a source]\napplies_to: 624b824a\n---\nbody", ValidationError),
    ("---\ntitle: T\nsummary: S\nsources: []\napplies_to: 624b824a\n---\nbody", ValidationError),
], ids=str)
def test_malformed_cards_are_rejected(text, problem):
    with pytest.raises(problem):
        parse_card("bad", text)


def test_search_ranks_title_hits_first_and_requires_every_word():
    cards = load_cards()
    hits = search_cards("colocate", cards)
    assert "gpu-placement" in [c.id for c in hits]
    assert len(hits) < len(cards)
    assert search_cards("batch", cards)[0].id == "batch-size"
    assert search_cards("", cards) == list(cards)
    assert search_cards("colocate zzzunknownword", cards) == []
    assert [c.id for c in search_cards("GPU placement", cards)][0] == "gpu-placement"


def test_knowledge_search_is_asks_index_and_renders_only_open_cards(app_env, make_app):
    from core.knowledge.search import get_index

    at = make_app("pages/knowledge.py").run()
    assert not at.exception and not [m for m in at.markdown if "##" in m.value]  # every card closed: no body
    at.text_input(key="kn_query").input("kl loss").run()
    expected = list(dict.fromkeys(r.id.split("#")[0] for r in get_index().search("kl loss", limit=200,
                                                                                   kinds={"card", "section"})))
    titles = {c.id: c.title for c in load_cards()}
    assert [e.label for e in at.expander] == [titles[i] for i in expected][:5]  # the best five first (issue 28)
    at.toggle(key="kn_more").set_value(True).run()
    assert [e.label for e in at.expander] == [titles[i] for i in expected]
    at = make_app("pages/knowledge.py")
    at.query_params["card"] = "delta-weight-sync"
    at.run()
    body = "\n".join(m.value for m in at.markdown)
    assert "#### Flags\n" in body and "\n## " not in body  # a short heading a step below the page's own
    assert "Source: [`slime/utils/arguments.py:122-225@624b824a`](https://github.com/THUDM/slime/blob/" in body


def test_knowledge_page_lists_every_card_title(app_env, make_app):
    at = make_app("pages/knowledge.py").run()
    assert not at.exception
    labels = [e.label for e in at.expander]
    assert sorted(labels) == sorted(c.title for c in load_cards())
    assert any(f"{len(labels)} of {len(labels)} cards" in c.value for c in at.caption)


def test_knowledge_search_narrows_the_list(app_env, make_app):
    at = make_app("pages/knowledge.py").run()
    total = len(at.expander)
    at.text_input(key="kn_query").input("colocate").run()
    assert not at.exception
    labels = [e.label for e in at.expander]
    gpu_title = next(c.title for c in load_cards() if c.id == "gpu-placement")
    assert gpu_title in labels
    assert 0 < len(labels) < total
    at.text_input(key="kn_query").input("<zzqxv>qqzvw</zzqxv>").run()  # no word of it is in any card
    assert not at.exception
    assert not at.expander
    assert any("No card matches" in i.value for i in at.info)
