"""The documents the search indexes, built from the knowledge base: cards and their sections, flags, rules,
error messages and log lines of every layer, and model scripts. One builder per kind; the search
(core/knowledge/search.py) ranks them and never knows how they are made."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, Field

from core.knowledge.cards import Card, short_heading
from core.knowledge.errors import ErrorIndex
from core.knowledge.flags import REQUIRED_TEXT, flag_rows, load_flag_reference
from core.knowledge.layers import LAYER_TITLES, layer_of
from core.knowledge.snippets import plain_units
from core.pins import SLIME_SHORT

SNIPPET_CHARS = 220
_CITE_RE = re.compile(r"([A-Za-z0-9_.\-/]+\.[A-Za-z0-9]+):(\d+)(?:-(\d+))?@" + SLIME_SHORT)


class _Doc(BaseModel):
    kind: str
    id: str
    title: str
    summary: str
    source: str
    names: str = ""
    body: str = ""
    searchable: bool = Field(default=True, description="False: only exact lookups find it, not the text search")


def _short(text: str, limit: int = SNIPPET_CHARS) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"



def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _name_variants(option: str) -> str:
    core = option.lstrip("-")
    return " ".join({option, core, core.replace("-", "_"), core.replace("-", " ")})


def _answer_text(d: _Doc, cards: dict[str, Card]) -> str:
    """What the answering sentence of a card (its summary and body) or a section (its text) is picked from."""
    if d.kind == "section":
        return d.body
    card = cards.get(d.id) if d.kind == "card" else None
    return f"{card.summary}\n\n{card.body}" if card is not None else ""


def card_sections(card: Card) -> list[tuple[str, str]]:
    """(heading, text) for each `## ` section of a card's body."""
    parts = re.split(r"^##+\s+(.+)$", card.body, flags=re.M)
    return [(parts[i].strip(), parts[i + 1].strip()) for i in range(1, len(parts) - 1, 2) if parts[i + 1].strip()]


def _card_docs(cards: tuple[Card, ...]) -> list[_Doc]:
    docs = []
    for card in cards:
        docs.append(_Doc(kind="card", id=card.id, title=card.title, summary=card.summary, source=card.sources[0],
                         names=f"{card.id.replace('-', ' ')} {' '.join(card.tags)}",
                         body=f"{card.summary} {card.body}"))
        for heading, text in card_sections(card):
            cite = _CITE_RE.search(text)
            docs.append(_Doc(kind="section", id=f"{card.id}#{_slug(heading)}",
                             title=f"{card.title}: {short_heading(heading)[0]}",  # its source is in the text
                             summary=_short(" ".join(plain_units(text))),
                             source=cite.group(0) if cite else card.sources[0], names=heading, body=text))
    return docs


def _flag_docs(catalog: Any) -> list[_Doc]:
    docs = []
    for row in flag_rows(catalog, load_flag_reference()):
        facts = f"{row.owner} flag, type {row.type}, " + (row.default if row.default == REQUIRED_TEXT
                                                           else f"default {row.default}")
        text = row.our_help or row.help
        docs.append(_Doc(kind="flag", id=row.flag, title=f"{row.flag} ({row.owner})",
                         summary=_short(f"{text + ' · ' if text else ''}{facts}"), source=row.source,
                         names=" ".join(_name_variants(o) for o in [row.flag, *row.aliases]),
                         body=f"{row.our_help or ''} {row.help or ''} {row.group} {facts} {' '.join(row.choices)}"))
    return docs


def _rule_docs() -> list[_Doc]:
    from core.data import RULES as DATA_RULES
    from core.launch import list_rules

    docs = []
    for info in list_rules():
        doc = " ".join((info.check.__doc__ or "").split()) if info.check else ""
        docs.append(_Doc(kind="rule", id=info.code, title=f"{info.code}: {info.title}",
                         summary=_short(doc or info.title), source=info.source or "core/launch/check.py",
                         names=info.code, body=f"{info.title} {doc}"))
    for rule in DATA_RULES.values():
        docs.append(_Doc(kind="rule", id=rule.code, title=f"{rule.code}: {rule.name.replace('-', ' ')}",
                         summary=_short(rule.fix), source=rule.source, names=f"{rule.code} {rule.name}",
                         body=f"{rule.name.replace('-', ' ')} {rule.fix}"))
    return docs


def _error_docs(index: ErrorIndex) -> list[_Doc]:
    """slime's, Megatron-LM's and SGLang's messages (kind `error`) and slime's log lines (kind `log`)."""
    docs = []
    for e in index.entries:
        layer = LAYER_TITLES[layer_of(e)]
        if e.kind == "log":
            docs.append(_Doc(kind="log", id=e.id, title=_short(f"{e.exception} line: {e.template}", 160),
                             summary=_short(("normal: " if e.normal else "") + f"{layer} {e.exception} line in "
                                            f"{e.function}" + (f", when {e.condition}" if e.condition else "")),
                             source=e.source, names=f"{e.exception} log",
                             body=f"{e.fixed_words} {e.function.replace('_', ' ')}"))
            continue
        if not e.template:  # a bare assert: found through a traceback's frame, not by words
            docs.append(_Doc(kind="error", id=e.id, title=_short(f"AssertionError (no message): assert {e.condition}",
                                                                 160),
                             summary=_short(f"{layer} assert without a message in {e.function}"), source=e.source,
                             searchable=False))
            continue
        docs.append(_Doc(kind="error", id=e.id, title=_short(f"{e.exception}: {e.template}", 160),
                         summary=_short(f"{layer} {e.kind} in {e.function}" + (
                             f", when {e.condition} fails" if e.kind == "assert" and e.condition else "")),
                         source=e.source, names=f"{e.exception} {layer}",
                         body=f"{e.fixed_words} {e.function.replace('_', ' ')}"))
    return docs


def _model_docs() -> list[_Doc]:
    from core.model_scripts import load_model_scripts

    docs = []
    for script in load_model_scripts():
        shape = ", ".join(f"--{k} {v}" if v is not None else f"--{k}" for k, v in list(script.values.items())[:6])
        docs.append(_Doc(kind="model_script", id=script.name, title=f"Model script {script.name}",
                         summary=_short(shape), source=script.source,
                         names=f"{script.name} {re.sub(r'[-_.]', ' ', script.name)}",
                         body=" ".join(f"{k} {v or ''}" for k, v in script.values.items())))
    return docs
