"""Runtime messages from the layers under slime (Ray, NCCL, CUDA, PyTorch, numpy, Hugging Face, HTTP between
the parts): a curated, cited table in knowledge/runtime_messages.yaml, read into typed entries, and matched
against pasted text by fixed marker phrases (plain substring tests on normalised text, so matching time is
linear in the paste and no pattern from the table is ever compiled from user input)."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, field_validator

from core.knowledge.cards import KNOWLEDGE_DIR, SOURCE_RE
from core.knowledge.table_file import parse_table

RUNTIME_PATH = KNOWLEDGE_DIR / "runtime_messages.yaml"
MAX_MATCH_CHARS = 200_000
Layer = Literal["ray", "nccl", "cuda", "pytorch", "numpy", "huggingface", "http", "python"]
LAYER_TITLES = {"ray": "Ray", "nccl": "NCCL", "cuda": "CUDA", "pytorch": "PyTorch", "numpy": "numpy",
                "huggingface": "Hugging Face", "http": "HTTP between the parts", "python": "Python"}
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_ID = re.compile(r"^[a-z0-9][a-z0-9-]*$")


class Cause(BaseModel):
    """One usual slime cause of a message, in the order to check it."""

    why: str = Field(min_length=1)
    flags: list[str] = Field(default_factory=list)
    env: list[str] = Field(default_factory=list)
    rules: list[str] = Field(default_factory=list, description="codes of our checks that catch it before launch")


class RuntimeMessage(BaseModel):
    id: str
    layer: Layer
    template: str = Field(min_length=1, description="the message as users see it; <...> marks what varies")
    markers: list[str] = Field(min_length=1, description="fixed phrases; any one found in a paste is a match")
    meaning: str = Field(min_length=1)
    causes: list[Cause] = Field(min_length=1)
    check_first: str = Field(min_length=1)
    normal: str = Field("", description="when the line is harmless, say so here")
    cards: list[str] = Field(default_factory=list)
    sources: list[str] = Field(min_length=1)
    threads: list[str] = Field(default_factory=list)

    @field_validator("id")
    @classmethod
    def _id_ok(cls, v: str) -> str:
        if not _ID.match(v):
            raise ValueError(f"id must be lower-case words joined by '-': {v!r}")
        return v

    @field_validator("markers")
    @classmethod
    def _markers_ok(cls, v: list[str]) -> list[str]:
        out = [normalise(m) for m in v]
        if any(len(m) < 6 for m in out):
            raise ValueError(f"markers must be at least 6 characters: {v}")
        return out

    @field_validator("sources")
    @classmethod
    def _sources_ok(cls, v: list[str]) -> list[str]:
        bad = [s for s in v if not SOURCE_RE.match(s)]
        if bad:
            raise ValueError(f"sources must be path:line@pin or URLs; not: {bad}")
        return v

    @field_validator("threads")
    @classmethod
    def _threads_ok(cls, v: list[str]) -> list[str]:
        bad = [s for s in v if not s.startswith("https://github.com/")]
        if bad:
            raise ValueError(f"threads must be GitHub URLs; not: {bad}")
        return v

    @property
    def rules(self) -> list[str]:
        """Every rule code any cause names, first mention first."""
        return list(dict.fromkeys(code for c in self.causes for code in c.rules))

    @property
    def flags(self) -> list[str]:
        return list(dict.fromkeys(f for c in self.causes for f in c.flags))

    @property
    def env(self) -> list[str]:
        return list(dict.fromkeys(e for c in self.causes for e in c.env))

    def text(self) -> str:
        """Everything a search should find the entry by."""
        causes = " ".join(f"{c.why} {' '.join(c.flags)} {' '.join(c.env)} {' '.join(c.rules)}" for c in self.causes)
        return f"{self.template} {self.meaning} {causes} {self.check_first} {self.normal}"


class RuntimeTableError(ValueError):
    pass


def normalise(text: str) -> str:
    """Lower case, ANSI colour codes removed, runs of whitespace made one space."""
    return " ".join(_ANSI.sub("", text).lower().split())


def parse_runtime_messages(text: str) -> tuple[RuntimeMessage, ...]:
    return parse_table(text, "messages", RuntimeMessage, "runtime messages", RuntimeTableError)


@lru_cache(maxsize=4)
def load_runtime_messages(path: Path = RUNTIME_PATH) -> tuple[RuntimeMessage, ...]:
    return parse_runtime_messages(Path(path).read_text(encoding="utf-8"))


def match_runtime(text: str, messages: tuple[RuntimeMessage, ...] | None = None,
                  limit: int = 5) -> list[RuntimeMessage]:
    """The entries whose markers occur in the text: real errors before entries marked `normal` (harmless log
    lines and wrappers such as Ray's RayTaskError, which only carry another error), then the longest (most
    specific) marker first; the last occurrence in the paste breaks ties, since the final exception of a
    traceback is printed last; then the table's order."""
    messages = load_runtime_messages() if messages is None else messages
    hay = normalise((text or "")[:MAX_MATCH_CHARS])
    if not hay:
        return []
    scored = []
    for order, entry in enumerate(messages):
        found = [(len(m), hay.rfind(m)) for m in entry.markers if m in hay]
        if found:
            length, where = max(found)
            scored.append((bool(entry.normal), -length, -where, order, entry))
    return [e for *_, e in sorted(scored, key=lambda t: t[:4])][:limit]
