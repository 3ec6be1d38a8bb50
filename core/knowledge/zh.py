"""Chinese words of a question turned into the English words our index uses (knowledge/zh_terms.yaml).

The full-text index splits text on spaces and punctuation, so a Chinese sentence (no spaces) gives it no
usable words at all, and our cards are in English anyway. A small curated vocabulary of the words users write
for symptoms and parts of a run (乱码, 显存, 卡住, 续训 ...) maps each to English search words; every entry
cites a line of slime's Chinese documentation that uses the word. Longer words are matched first and the text
they cover is not matched again, so 投机采样 does not also count as 采样.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from core.knowledge.table_file import safe_yaml
from core.resources import knowledge_path

ZH_TERMS_PATH = knowledge_path("zh_terms.yaml")
MAX_SCAN_CHARS = 20_000
_CJK_RE = re.compile(r"[\u3400-\u9fff]")


class ZhTerm(BaseModel):
    zh: list[str] = Field(min_length=1)
    en: str = Field(min_length=1)
    source: str = Field(pattern=r"^docs/zh/\S+:\d+@[0-9a-f]{7,40}$")


def parse_zh_terms(text: str) -> tuple[ZhTerm, ...]:
    data = safe_yaml(text) or {}
    try:
        return tuple(ZhTerm(**entry) for entry in data.get("terms", []))
    except (TypeError, ValidationError) as exc:
        raise ValueError(f"knowledge/zh_terms.yaml has an entry that is not valid: {exc.__class__.__name__}") from exc


@lru_cache(maxsize=2)
def _load(path: str, stamp: int) -> tuple[tuple[str, str], ...]:
    """(Chinese word, English words), longest Chinese word first."""
    try:
        entries = parse_zh_terms(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ()
    pairs = [(word, entry.en) for entry in entries for word in entry.zh]
    return tuple(sorted(pairs, key=lambda p: -len(p[0])))


def zh_terms(path: Path = ZH_TERMS_PATH) -> tuple[tuple[str, str], ...]:
    try:
        stamp = path.stat().st_mtime_ns
    except OSError:
        stamp = 0
    return _load(str(path), stamp)


def has_cjk(text: str) -> bool:
    return bool(_CJK_RE.search(text[:MAX_SCAN_CHARS]))


def english_words(text: str) -> list[str]:
    """The English search words for the Chinese words of `text`, in the order the vocabulary lists them
    (longest first); empty when the text has no Chinese."""
    text = text[:MAX_SCAN_CHARS]
    if not has_cjk(text):
        return []
    words: list[str] = []
    for zh, en in zh_terms():
        if zh in text:
            text = text.replace(zh, " ")
            words += [w for w in en.lower().split() if w not in words]
    return words
