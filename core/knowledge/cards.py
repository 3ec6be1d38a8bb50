"""Knowledge cards: markdown files under knowledge/cards with YAML front matter, parsed into typed cards."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, Field, field_validator

from core.knowledge.table_file import safe_yaml, yaml_error
from core.resources import knowledge_path

KNOWLEDGE_DIR = knowledge_path()
CARDS_DIR = KNOWLEDGE_DIR / "cards"

# path@commit-or-tag (optionally :line after the path), or an http(s) URL.
SOURCE_RE = re.compile(r"^(https?://\S+|[A-Za-z0-9_.\-/]+(?::\d+(?:-\d+)?)?@[A-Za-z0-9_.\-]+)$")
_FRONT = re.compile(r"\A---\n(.*?)\n---\n?(.*)\Z", re.S)


class Card(BaseModel):
    id: str
    title: str = Field(min_length=1)
    summary: str = Field(min_length=1)
    tags: list[str] = Field(default_factory=list)
    sources: list[str] = Field(min_length=1)
    applies_to: str = Field(min_length=1)
    body: str = Field(min_length=1)

    @field_validator("sources")
    @classmethod
    def _sources_ok(cls, v: list[str]) -> list[str]:
        bad = [s for s in v if not SOURCE_RE.match(str(s))]
        if bad:
            raise ValueError(f"sources must be path@commit or URLs; not: {bad}")
        return v


class CardError(ValueError):
    pass


def parse_card(card_id: str, text: str) -> Card:
    """Split front matter from body and validate both."""
    m = _FRONT.match(text.replace("\r\n", "\n"))
    if not m:
        raise CardError(f"{card_id}: no YAML front matter between '---' lines")
    try:
        meta = safe_yaml(m.group(1)) or {}
    except yaml_error() as exc:
        raise CardError(f"{card_id}: front matter is not valid YAML: {exc}") from exc
    if not isinstance(meta, dict):
        raise CardError(f"{card_id}: front matter must be a mapping")
    meta["applies_to"] = str(meta.get("applies_to", ""))
    return Card(id=card_id, body=m.group(2).strip(), **meta)


@lru_cache(maxsize=4)
def load_cards(directory: Path = CARDS_DIR) -> tuple[Card, ...]:
    """Every card in the directory, sorted by title."""
    cards = [parse_card(p.stem, p.read_text(encoding="utf-8")) for p in sorted(directory.glob("*.md"))]
    return tuple(sorted(cards, key=lambda c: c.title.lower()))


def get_card(card_id: str) -> Card | None:
    return next((c for c in load_cards() if c.id == card_id), None)


def search_cards(query: str, cards: tuple[Card, ...] | None = None) -> list[Card]:
    """Cards whose id, title, summary, tags or body contain every word of the query (case-insensitive).

    Ranking: cards matching more words in the id, title, summary or tags come first, then cards that
    mention the words more often in the body, then alphabetical by title.
    """
    cards = load_cards() if cards is None else cards
    words = [w for w in query.lower().split() if w]
    if not words:
        return list(cards)
    scored = []
    for c in cards:
        head = f"{c.id} {c.id.replace('-', ' ')} {c.title} {c.summary} {' '.join(c.tags)}".lower()
        body = c.body.lower()
        if all(w in head or w in body for w in words):
            head_hits = sum(w in head for w in words)
            body_hits = sum(body.count(w) for w in words)
            scored.append((-head_hits, -body_hits, c.title.lower(), c))
    return [c for *_, c in sorted(scored, key=lambda t: t[:3])]


_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*$")
_TRAILING_SOURCE = re.compile(r"^(?P<title>.*?)[ \t]*\((?P<source>[^()]*@[A-Za-z0-9_.\-]+)\)$")


def short_heading(heading: str) -> tuple[str, str | None]:
    """A section heading without the source in its trailing parentheses, and that source (None if none)."""
    cited = _TRAILING_SOURCE.match(heading.strip())
    if cited is None:
        return heading.strip(), None
    return cited.group("title").rstrip(" ,;:"), cited.group("source").strip()


# Written bare in a card's prose, markdown would read part of these as emphasis (`rm_hub/__init__.py` shows a bold
# "init"): a citation (`path:line@pin`), a file path, or a file name with double underscores (`__init__.py`).
_BARE_CODE = re.compile(r"(?<![\w`/.\-])(?:(?:[\w.\-]+/)+[\w.\-]+\.\w+|[\w\-]*__\w+__\.\w+)(?::\d+(?:-\d+)?)?"
                        r"(?:@[A-Za-z0-9_.\-]*[A-Za-z0-9])?(?![\w`/])")
_CODE_SPAN = re.compile(r"(`+).+?\1")


def mark_code(text: str) -> str:
    """Markdown with the citations, paths and `__init__.py`-like file names written bare outside code spans put in code
    spans, so they show as written (and a citation gets its link from `link_citations`)."""
    out, pos = [], 0
    for m in _CODE_SPAN.finditer(text):
        out += [_BARE_CODE.sub(lambda c: f"`{c.group(0)}`", text[pos:m.start()]), m.group(0)]
        pos = m.end()
    out.append(_BARE_CODE.sub(lambda c: f"`{c.group(0)}`", text[pos:]))
    return "".join(out)


def display_markdown(body: str) -> str:
    """A card's body as shown inside its card: section headings a step below the page's own (## becomes ####)
    and short, a source given in a heading's parentheses moved into a "Source:" line under it, bare citations
    and paths as code (`mark_code`)."""
    out: list[str] = []
    fenced = False
    for line in body.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            out.append(line)
            continue
        m = None if fenced else _HEADING.match(line)
        if m is None:
            out.append(line if fenced else mark_code(line))
            continue
        level = min(len(m.group(1)) + 2, 6)
        title, source = short_heading(m.group(2))
        out.append(f"{'#' * level} {title}")
        if source:
            out += ["", f"Source: `{source}`" if "`" not in source else f"Source: {source}"]
    return "\n".join(out)


MAX_CITING = 3  # a file cited by more cards than this (train.py, arguments.py) does not locate a traceback


def cited_files(cards: tuple[Card, ...]) -> dict[str, list[str]]:
    """Each file the cards' `sources` cite (`path:lines@commit`), with the ids of the cards citing it."""
    cited: dict[str, list[str]] = {}
    for card in cards:
        for source in card.sources:
            path = source.split("@", 1)[0].rsplit(":", 1)[0] if "@" in source else ""
            if path and card.id not in cited.setdefault(path, []):
                cited[path].append(card.id)
    return cited


def cards_citing_frames(cited: dict[str, list[str]], frame_paths: list[str], most: int = 2) -> list[str]:
    """The cards whose sources cite the file of a traceback's frame, innermost frame first: where no message
    matches, the file the code failed in says which part of slime it is (the class: a cut traceback inside a
    tool, `tools/convert_hf_to_torch_dist.py ... get_model(`, answered with unrelated word matches). A file that
    more than MAX_CITING cards cite (an entry point such as train.py) locates nothing and is skipped."""
    out: list[str] = []
    for frame_path in frame_paths:
        path = frame_path.replace("\\", "/")
        for cited_path, ids in cited.items():
            if len(ids) <= MAX_CITING and (path == cited_path or path.endswith("/" + cited_path)):
                out += [c for c in ids if c not in out]
        if len(out) >= most:
            break
    return out[:most]
