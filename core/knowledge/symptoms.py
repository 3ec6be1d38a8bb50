"""Symptom words of a question (knowledge/symptom_words.yaml) and the symptom cards they name.

A question that says how a run misbehaves ("hangs", "garbled", "reward is always 0") is answered by that
symptom's card; plain BM25 can rank other pages first when the question also names hardware, parallel sizes or
model names that many pages mention. `symptom_cards` returns the cards whose words the question uses, most
words first, so the search can put them right after its exact lookups.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from core.knowledge.table_file import safe_yaml
from core.resources import knowledge_path

SYMPTOM_WORDS_PATH = knowledge_path("symptom_words.yaml")
MAX_SCAN_CHARS = 4_000  # a question, not a log: its start says what is wrong
MAX_CARDS = 2


class SymptomWords(BaseModel):
    card: str = Field(pattern=r"^symptom-[a-z0-9-]+$")
    words: list[str] = Field(min_length=1)


def parse_symptom_words(text: str) -> tuple[SymptomWords, ...]:
    data = safe_yaml(text) or {}
    try:
        entries = tuple(SymptomWords(**e) for e in data.get("symptoms", []))
        for e in entries:
            for w in e.words:
                re.compile(w)
    except (TypeError, ValidationError, re.error) as exc:
        raise ValueError(f"knowledge/symptom_words.yaml has an entry that is not valid: "
                         f"{exc.__class__.__name__}") from exc
    return entries


@lru_cache(maxsize=2)
def _compiled(path: str, stamp: int) -> tuple[tuple[str, re.Pattern[str]], ...]:
    try:
        entries = parse_symptom_words(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ()
    return tuple((e.card, re.compile(r"(?<![\w-])(?:" + "|".join(e.words) + r")(?![\w-])", re.I))
                 for e in entries)


def symptom_cards(text: str, path: Path = SYMPTOM_WORDS_PATH) -> list[str]:
    """The ids of the symptom cards whose words `text` uses, the card with the most distinct words first."""
    try:
        stamp = path.stat().st_mtime_ns
    except OSError:
        stamp = 0
    text = text[:MAX_SCAN_CHARS]
    scored = []
    for n, (card, pattern) in enumerate(_compiled(str(path), stamp)):
        found = {m.group(0).lower() for m in pattern.finditer(text)}
        if found:
            scored.append((-len(found), n, card))
    return [card for _, _, card in sorted(scored)[:MAX_CARDS]]
