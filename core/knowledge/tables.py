"""The three curated tables (runtime messages, other frameworks' words, known bugs) as search documents and
as exact lookups, in one place so the search module needs only two calls: `table_docs()` when it builds the
index and `match_tables(text)` before BM25. Tables are re-read when their file changes."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from core.knowledge.bugs import BUGS_PATH, KnownBug, match_bugs, parse_bugs
from core.knowledge.runtime import (
    LAYER_TITLES,
    RUNTIME_PATH,
    RuntimeMessage,
    match_runtime,
    parse_runtime_messages,
)
from core.knowledge.terms import TERMS_PATH, Term, match_terms, parse_terms

TABLE_PATHS = (RUNTIME_PATH, TERMS_PATH, BUGS_PATH)
SUMMARY_CHARS = 220
MAX_SCAN_CHARS = 200_000


def _mtime(path: Path) -> int:
    try:
        return Path(path).stat().st_mtime_ns
    except OSError:
        return 0


@lru_cache(maxsize=8)
def _read(path: str, stamp: int) -> tuple[Any, ...]:
    text = Path(path).read_text(encoding="utf-8")
    parse = {str(RUNTIME_PATH): parse_runtime_messages, str(TERMS_PATH): parse_terms, str(BUGS_PATH): parse_bugs}
    return parse[path](text)


def runtime_messages() -> tuple[RuntimeMessage, ...]:
    return _read(str(RUNTIME_PATH), _mtime(RUNTIME_PATH))


def terms() -> tuple[Term, ...]:
    return _read(str(TERMS_PATH), _mtime(TERMS_PATH))


def bugs() -> tuple[KnownBug, ...]:
    return _read(str(BUGS_PATH), _mtime(BUGS_PATH))


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= SUMMARY_CHARS else text[: SUMMARY_CHARS - 1].rstrip() + "…"


def _first_cited(sources: list[str], fallback: str) -> str:
    return next((s for s in sources if not s.startswith("http")), sources[0] if sources else fallback)


def table_docs() -> list[dict[str, str]]:
    """One search document per table entry (fields of search._Doc)."""
    docs = []
    for m in runtime_messages():
        docs.append({"kind": "runtime", "id": m.id, "title": f"{LAYER_TITLES[m.layer]}: {m.template}",
                     "summary": _short(m.meaning), "source": _first_cited(m.sources, ""),
                     "names": f"{m.id.replace('-', ' ')} {' '.join(m.markers)}", "body": m.text()})
    for t in terms():
        where = "/".join(f.upper() if f in ("ppo", "trl") else {"verl": "verl", "openrlhf": "OpenRLHF"}[f]
                         for f in t.frameworks)
        docs.append({"kind": "term", "id": t.id, "title": f"{t.term} ({where}) in slime",
                     "summary": _short(t.slime), "source": _first_cited(t.sources, ""),
                     "names": " ".join(re.sub(r"[_\-.]", " ", n) for n in t.names()), "body": t.text()})
    for b in bugs():
        docs.append({"kind": "bug", "id": b.id, "title": f"Known bug: {b.title}",
                     "summary": _short(f"{b.fixed_upstream[0].upper()}{b.fixed_upstream[1:]}. {b.symptom}"),
                     "source": b.fix_url, "names": " ".join(b.markers), "body": b.text()})
    return docs


_ERROR_LINE = re.compile(r"Traceback \(most recent call last\)|\b\w*(?:Error|Exception)\b[:(]")


def match_tables(text: str, pasted: bool = False) -> list[tuple[str, str]]:
    """(kind, id) of the exact hits, best first: known bugs and runtime messages whose markers occur in the
    text, then, for a question rather than a paste, the other frameworks' terms it names followed by the
    slime flags they map to. Entries marked `normal` (harmless log lines, Ray's wrapper) are exact hits only
    when the text holds no traceback or exception line: next to a real error they would point away from it."""
    out = [("bug", b.id) for b in match_bugs(text, bugs())]
    runtime = match_runtime(text, runtime_messages(), limit=3)
    if any(m.normal for m in runtime) and _ERROR_LINE.search((text or "")[:MAX_SCAN_CHARS]):
        runtime = [m for m in runtime if not m.normal]
    out += [("runtime", m.id) for m in runtime]
    if not pasted:
        short = len(re.findall(r"\w+", text or "")) <= SHORT_QUESTION_WORDS
        for t in match_terms(text, terms(), limit=3):
            if short or _spelled_like_code(t, text):
                out.append(("term", t.id))
                out += [("flag", f) for f in t.flags[:2]]
    return out


SHORT_QUESTION_WORDS = 10


def _spelled_like_code(term: Term, text: str) -> bool:
    """Whether the text names the term in a config spelling (`ppo_mini_batch_size`, `rollout.n`) or as an
    acronym-like word (`LoRA`, `PEFT`): in a long question, a plain-word name such as "reference model" is
    more likely about something else."""
    lowered = (text or "").lower()
    words = set(re.findall(r"\w+", text or ""))
    return any((("_" in n or "." in n) and n.lower() in lowered) or (" " not in n and any(c.isupper() for c in n[1:])
                                                                     and n in words) for n in term.names())
