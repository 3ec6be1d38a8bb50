"""The sentence of a card that answers a query, as plain text.

A card's markdown is turned into plain sentences (no `**`, backticks, headings, list bullets, link syntax or
table pipes; code lines kept as text), and the sentence sharing the most query words is the snippet; with
none shared, the section's lead (its first sentence). Only our own card text is handled here.
"""

from __future__ import annotations

import re
from functools import lru_cache

_FENCE_RE = re.compile(r"^\s*(```|~~~)")
_TABLE_RULE_RE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")
_HEADING_RE = re.compile(r"^\s{0,3}#{1,6}\s+")
_QUOTE_RE = re.compile(r"^\s*>\s?")
_BULLET_RE = re.compile(r"^\s*(?:[-*+]|\d{1,3}[.)])\s+")
_LINK_RE = re.compile(r"!?\[([^\]\n]{0,300})\]\([^)\n]{0,500}\)")
# `**x**` and `*x*`; `__x__` only between spaces or punctuation, never inside a name or a path
# (`rm_hub/__init__.py` keeps its underscores)
_EMPHASIS_RE = re.compile(r"(\*\*)(?=\S)(.+?)(?<=\S)\*\*|(?<![\w*])\*(?=\S)([^*\n]+?)(?<=\S)\*(?![\w*])"
                          r"|(?<![\w/.])__(?=[^\s_])(.+?)(?<=[^\s_])__(?![\w.])")
_CODE_SPAN_RE = re.compile(r"(`+)(.+?)\1")
_SENTENCE_END_RE = re.compile(r"(?<=[.!?])\s+(?=[A-Z`(\"'])")
_WORD_RE = re.compile(r"[a-z0-9]+")
MAX_SENTENCE_CHARS = 400


def _inline(text: str) -> str:
    """Plain text of one line of markdown: code spans as they are written (emphasis around them undone, none
    read inside them), links as their text."""
    spans: list[str] = []

    def hold(m: re.Match[str]) -> str:
        spans.append(m.group(2))
        return f"\x00{len(spans) - 1}\x00"

    text = _CODE_SPAN_RE.sub(hold, text.replace("\x00", ""))
    text = _LINK_RE.sub(r"\1", text)
    text = _EMPHASIS_RE.sub(lambda m: m.group(2) or m.group(3) or m.group(4) or "", text)
    text = text.replace("`", "")
    return re.sub("\x00(\\d+)\x00", lambda m: spans[int(m.group(1))], text)


def plain_units(markdown: str) -> list[str]:
    """Paragraphs, list items, table rows and code lines of markdown, each as one plain-text line."""
    units: list[str] = []
    paragraph: list[str] = []

    def flush() -> None:
        if paragraph:
            units.append(" ".join(paragraph))
            paragraph.clear()

    in_code = False
    for raw in markdown.splitlines():
        if _FENCE_RE.match(raw):
            flush()
            in_code = not in_code
            continue
        if in_code:
            if raw.strip():
                units.append(" ".join(raw.split()))
            continue
        line = raw.strip()
        if not line or _TABLE_RULE_RE.match(line):
            flush()
            continue
        if line.startswith("|"):
            flush()
            cells = [_inline(c.strip()) for c in line.strip("|").split("|")]
            units.append("; ".join(c for c in cells if c))
            continue
        if _HEADING_RE.match(line) or _BULLET_RE.match(line):
            flush()
        line = _BULLET_RE.sub("", _QUOTE_RE.sub("", _HEADING_RE.sub("", line)))
        paragraph.append(_inline(line))
    flush()
    return [" ".join(u.split()) for u in units if u.strip()]


@lru_cache(maxsize=2048)
def sentences(markdown: str) -> tuple[str, ...]:
    """The plain sentences of markdown, in order (a long sentence cut at MAX_SENTENCE_CHARS)."""
    out = []
    for unit in plain_units(markdown):
        for sentence in _SENTENCE_END_RE.split(unit):
            sentence = sentence.strip()
            if sentence:
                out.append(sentence if len(sentence) <= MAX_SENTENCE_CHARS else sentence[:MAX_SENTENCE_CHARS - 1] + "…")
    return tuple(out)


def _stem(word: str) -> str:
    return word[:5]


def answer_sentence(markdown: str, terms: list[str] | tuple[str, ...], ignore: frozenset[str] = frozenset()) -> str:
    """The sentence sharing the most distinct query words (compared on their first five letters, so
    `batches` meets `batch`), the earliest on a tie; the first sentence when none is shared."""
    found = sentences(markdown)
    if not found:
        return ""
    wanted = {_stem(t) for t in terms if t not in ignore and len(t) > 1}
    best, best_score = found[0], 0
    if wanted:
        for sentence in found:
            score = len(wanted & {_stem(w) for w in _WORD_RE.findall(sentence.lower())})
            if score > best_score:
                best, best_score = sentence, score
    return best
