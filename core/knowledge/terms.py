"""Other frameworks' words (PPO papers, TRL, verl, OpenRLHF) mapped to slime's flags, or stated plainly as
absent from slime at the pin, from knowledge/framework_terms.yaml. `match_terms` finds the entries a question
names; `expand_terms` gives the slime words a search can add to such a question."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, Field, field_validator

from core.knowledge.cards import KNOWLEDGE_DIR, SOURCE_RE
from core.knowledge.table_file import parse_table

TERMS_PATH = KNOWLEDGE_DIR / "framework_terms.yaml"
MAX_TERM_QUERY = 20_000
FRAMEWORKS = ("ppo", "trl", "verl", "openrlhf")
_ID = re.compile(r"^[a-z0-9][a-z0-9-]*$")


def _words(text: str) -> str:
    """Lower case; `_`, `-`, `.` and other punctuation become spaces, so `ppo_mini_batch_size`,
    `ppo-mini-batch-size` and `ppo mini batch size` are the same words."""
    return " ".join(re.sub(r"[^a-z0-9]+", " ", text.lower()).split())


class Term(BaseModel):
    id: str
    term: str = Field(min_length=1, description="the name as the other framework writes it")
    aliases: list[str] = Field(default_factory=list)
    frameworks: list[str] = Field(min_length=1)
    meaning: str = Field(min_length=1, description="what it means there")
    slime: str = Field(min_length=1, description="slime's counterpart, or why there is none at the pin")
    flags: list[str] = Field(default_factory=list, description="slime's flags for it (empty: none at the pin)")
    cards: list[str] = Field(default_factory=list)
    sources: list[str] = Field(min_length=1)

    @field_validator("id")
    @classmethod
    def _id_ok(cls, v: str) -> str:
        if not _ID.match(v):
            raise ValueError(f"id must be lower-case words joined by '-': {v!r}")
        return v

    @field_validator("frameworks")
    @classmethod
    def _frameworks_ok(cls, v: list[str]) -> list[str]:
        bad = [f for f in v if f not in FRAMEWORKS]
        if bad:
            raise ValueError(f"frameworks must be among {FRAMEWORKS}; not: {bad}")
        return v

    @field_validator("flags")
    @classmethod
    def _flags_ok(cls, v: list[str]) -> list[str]:
        bad = [f for f in v if not re.match(r"^--[a-z0-9][a-z0-9-]*$", f)]
        if bad:
            raise ValueError(f"flags must be written as on the command line: {bad}")
        return v

    @field_validator("sources")
    @classmethod
    def _sources_ok(cls, v: list[str]) -> list[str]:
        bad = [s for s in v if not SOURCE_RE.match(s)]
        if bad:
            raise ValueError(f"sources must be path:line@pin or URLs; not: {bad}")
        return v

    @property
    def none_at_pin(self) -> bool:
        return not self.flags

    def names(self) -> list[str]:
        return [self.term, *self.aliases]

    def text(self) -> str:
        return f"{self.term} {' '.join(self.aliases)} {self.meaning} {self.slime} {' '.join(self.flags)}"


class TermsTableError(ValueError):
    pass


def parse_terms(text: str) -> tuple[Term, ...]:
    return parse_table(text, "terms", Term, "framework terms", TermsTableError)


@lru_cache(maxsize=4)
def load_terms(path: Path = TERMS_PATH) -> tuple[Term, ...]:
    return parse_terms(Path(path).read_text(encoding="utf-8"))


_NAME_TABLES: dict[int, tuple[tuple[Term, ...], list[tuple[str, int]]]] = {}


def _name_table(terms: tuple[Term, ...]) -> list[tuple[str, int]]:
    """(name as words, entry index), longest names first so `ppo mini batch size` wins over `mini batch`.
    Kept per table (the table itself is held too, so its id cannot be reused while cached)."""
    cached = _NAME_TABLES.get(id(terms))
    if cached is not None and cached[0] is terms:
        return cached[1]
    table = sorted({(_words(n), i) for i, t in enumerate(terms) for n in t.names() if _words(n)},
                   key=lambda x: (-len(x[0]), x[0]))
    if len(_NAME_TABLES) > 8:
        _NAME_TABLES.clear()
    _NAME_TABLES[id(terms)] = (terms, table)
    return table


def match_terms(query: str, terms: tuple[Term, ...] | None = None, limit: int = 5) -> list[Term]:
    """Entries whose name or alias appears in the query as whole words, longest name first. A name used up
    by a longer match is not counted again (`kl coef` inside `init kl coef`)."""
    terms = load_terms() if terms is None else terms
    hay = f" {_words((query or '')[:MAX_TERM_QUERY])} "
    if not hay.strip():
        return []
    found: list[int] = []
    for name, i in _name_table(terms):
        needle = f" {name} "
        if needle in hay:
            hay = hay.replace(needle, " | ")
            if i not in found:
                found.append(i)
    return [terms[i] for i in found][:limit]


def expand_terms(query: str, terms: tuple[Term, ...] | None = None) -> list[str]:
    """slime's words for the other frameworks' terms the query names: each mapped flag as plain words
    (`--global-batch-size` gives `global batch size`), in the order the terms were found, without
    repeats and without words the query already has. Empty when the query names no known term."""
    have = set(_words(query or "").split())
    out: list[str] = []
    for term in match_terms(query, terms):
        for flag in term.flags:
            words = flag.lstrip("-").replace("-", " ")
            if words not in out and not set(words.split()) <= have:
                out.append(words)
    return out
