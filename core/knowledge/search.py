"""One search over everything the knowledge base holds: cards and their sections, flags, rules, slime's
error messages and model scripts.

Ranking is SQLite FTS5's BM25 (FTS5 ships with Python's sqlite3) over an in-memory index, built on first
use and rebuilt when a card or data file changes. Before BM25, three exact lookups go first: a flag named
whole in any spelling (`--rollout-batch-size`, `rollout_batch_size`, `rollout batch size`), a rule code,
and, for a pasted error or traceback, the assert/raise in slime it comes from. A flag name with a typo
gets the closest flags. The query is data: it is turned into quoted FTS terms, never into SQL or markup.
"""

from __future__ import annotations

import difflib
import re
import sqlite3
import threading
import time
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from core.knowledge.cards import Card
from core.knowledge.errors import (
    ERRORS_PATH,
    ErrorEntry,
    ErrorIndex,
    error_message_of,
    links_for,
    load_error_index,
    match_error,
    traceback_frames,
)
from core.knowledge.flags import REFERENCE_PATH, flag_rows, load_flag_reference, normalise_flag
from core.pins import SLIME_SHORT

# core.knowledge.cards.CARDS_DIR (a test keeps them equal): the cards module, with PyYAML and its models, is
# imported only when cards are read, which an index taken from its saved image does not need to do.
CARDS_DIR = Path(__file__).resolve().parents[2] / "knowledge" / "cards"
KINDS = ("card", "section", "flag", "rule", "error", "model_script")
KIND_TITLES = {"card": "Knowledge cards", "section": "Card sections", "flag": "Flags", "rule": "Our checks",
               "error": "slime error messages", "model_script": "Model scripts"}
MAX_QUERY_CHARS = 20_000
MAX_TERMS = 40
SNIPPET_CHARS = 220
_CITE_RE = re.compile(r"([A-Za-z0-9_.\-/]+\.[A-Za-z0-9]+):(\d+)(?:-(\d+))?@" + SLIME_SHORT)
PROSE_KINDS = frozenset({"card", "section"})
# BM25 is multiplied by these (BM25 is negative: a larger weight ranks higher); prose and rules are what a
# question usually wants, and raw BM25 favours the many short flag entries.
KIND_WEIGHT = {"card": 1.5, "section": 1.3, "rule": 1.2}
# Left out of the any-word fallback (the all-words query keeps them): they match nearly every document.
STOPWORDS = frozenset("a an and are be by can do does for from how i in is it of on or should the to what when "
                      "where which why with".split())
_CODE_RE = re.compile(r"^[A-Z]{2,8}\d{3}$")


class Result(BaseModel):
    kind: str = Field(description="card | section | flag | rule | error | model_script")
    id: str
    title: str
    snippet: str
    source: str

    def public(self) -> dict[str, str]:
        return self.model_dump()


class _Doc(BaseModel):
    model_config = ConfigDict(defer_build=True)  # an index read from its image uses none

    kind: str
    id: str
    title: str
    summary: str
    source: str
    names: str = ""
    body: str = ""


def _short(text: str, limit: int = SNIPPET_CHARS) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _valid_text(text: str) -> str:
    """The text with lone surrogates (undecodable bytes from a command line or a pipe) as U+FFFD: SQLite takes
    only valid UTF-8."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return re.sub("[\ud800-\udfff]+", "\ufffd", text)
    return text


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _name_variants(option: str) -> str:
    core = option.lstrip("-")
    return " ".join({option, core, core.replace("-", "_"), core.replace("-", " ")})


class _Shown(NamedTuple):
    """What a result shows of a document (an index read from its image keeps only this)."""

    kind: str
    id: str
    title: str
    summary: str
    source: str


# --------------------------------------------------------------------------------------------------
# Documents
# --------------------------------------------------------------------------------------------------
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
            docs.append(_Doc(kind="section", id=f"{card.id}#{_slug(heading)}", title=f"{card.title}: {heading}",
                             summary=_short(re.sub(r"[`*_#>|]", "", text)),
                             source=cite.group(0) if cite else card.sources[0], names=heading, body=text))
    return docs


def _flag_docs(catalog: Any) -> list[_Doc]:
    docs = []
    for row in flag_rows(catalog, load_flag_reference()):
        facts = f"{row.owner} flag, type {row.type}, default {row.default}"
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
    return [_Doc(kind="error", id=e.id, title=_short(f"{e.exception}: {e.template}", 160),
                 summary=_short(f"{e.kind} in {e.function}" + (f", when {e.condition} fails" if e.kind == "assert"
                                                               and e.condition else "")),
                 source=e.source, names=e.exception, body=f"{e.fixed_words} {e.function.replace('_', ' ')}")
            for e in index.entries]


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


# --------------------------------------------------------------------------------------------------
# The index
# --------------------------------------------------------------------------------------------------
class SearchIndex:
    """An in-memory FTS5 table over every document, plus the exact lookups that go before BM25."""

    def __init__(self, cards: tuple[Card, ...] | Callable[[], tuple[Card, ...]], catalog: Any, errors: ErrorIndex,
                 image: bytes | None = None) -> None:  # catalog: the catalog, or a function that loads it
        """Build the index, or take it from `image` (what `image()` wrote for the same sources: the SQLite
        database with the documents beside it), which saves most of the build; a bad image is rebuilt.
        `cards` and `catalog` may be functions that read them: with an image they are read only when needed."""
        self._catalog = catalog
        self.errors = errors
        self._cards = cards
        self._lock = threading.Lock()
        self.from_image = image is not None and self._load_image(image)
        if not self.from_image:
            catalog = self.catalog
            self.options = sorted({o for f in catalog.flags for o in f.option_strings})
            specs = {o: catalog.lookup(o) for o in self.options}  # the flag an option names, as the catalog says
            self._primary = {o: spec.primary if spec else o for o, spec in specs.items()}
            self.docs: list[_Doc | _Shown] = [*_card_docs(self.cards), *_flag_docs(catalog), *_rule_docs(),
                                     *_error_docs(errors), *_model_docs()]
            self._db = sqlite3.connect(":memory:", check_same_thread=False)
            self._db.execute("CREATE VIRTUAL TABLE docs USING fts5(names, title, body, "
                             "tokenize='porter unicode61 remove_diacritics 2')")
            self._db.executemany("INSERT INTO docs(rowid, names, title, body) VALUES (?, ?, ?, ?)",
                                 [(i, d.names, d.title, d.body) for i, d in enumerate(self.docs)])
            self._db.execute("INSERT INTO docs(docs, rank) VALUES ('rank', 'bm25(10.0, 4.0, 1.0)')")
            self._db.execute("CREATE VIRTUAL TABLE options USING fts5(option, tokenize='trigram')")
            self._db.executemany("INSERT INTO options(rowid, option) VALUES (?, ?)",
                                 [(i, o[2:]) for i, o in enumerate(self.options)])
            self._db.execute("CREATE TABLE primaries(option TEXT PRIMARY KEY, flag TEXT)")
            self._db.executemany("INSERT INTO primaries VALUES (?, ?)", sorted(self._primary.items()))
            self._db.execute("CREATE TABLE shown(rowid INTEGER PRIMARY KEY, kind, id, title, summary, source)")
            self._db.executemany("INSERT INTO shown VALUES (?, ?, ?, ?, ?, ?)",
                                 [(i, d.kind, d.id, d.title, d.summary, d.source) for i, d in enumerate(self.docs)])
            self._db.commit()
        self._by_key = {(d.kind, d.id): i for i, d in enumerate(self.docs)}
        self._prose_rows = sum(1 for d in self.docs if d.kind in PROSE_KINDS)  # cards and sections come first
        self._options_lower = {o.lower(): o for o in self.options}
        match_error("", errors)  # compiles the message templates once, here rather than in the first query

    @property
    def catalog(self) -> Any:
        """The argument catalog (with an image, read only when first needed)."""
        if callable(self._catalog):
            self._catalog = self._catalog()
        return self._catalog

    @property
    def cards(self) -> tuple[Card, ...]:
        if callable(self._cards):
            self._cards = self._cards()
        return self._cards

    def image(self) -> bytes:
        """The index as bytes (its SQLite database), for `SearchIndex(..., image=...)` in a later process."""
        with self._lock:
            return self._db.serialize()

    def _load_image(self, image: bytes) -> bool:
        """Take the database and the documents from an image; False (nothing kept) when it is not one."""
        db = sqlite3.connect(":memory:", check_same_thread=False)
        try:
            db.deserialize(image)
            rows = db.execute("SELECT rowid, kind, id, title, summary, source FROM shown ORDER BY rowid").fetchall()
            options = db.execute("SELECT count(*) FROM options").fetchone()[0]
            primaries = dict(db.execute("SELECT option, flag FROM primaries"))
            db.execute("SELECT rowid FROM docs WHERE docs MATCH 'slime' LIMIT 1").fetchall()
        except (sqlite3.Error, ValueError, OverflowError, MemoryError):
            db.close()
            return False
        if any(row[0] != i or not all(isinstance(v, str) for v in row[1:]) for i, row in enumerate(rows)) \
                or len(primaries) != options or not all(isinstance(o, str) and isinstance(f, str)
                                                         for o, f in primaries.items()):
            db.close()
            return False
        self.options = sorted(primaries)
        self._primary = primaries
        self.docs = [_Shown(*row[1:]) for row in rows]
        self._db = db
        return True

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(KINDS, 0)
        for d in self.docs:
            out[d.kind] += 1
        return out

    def _result(self, i: int, snippet: str | None = None) -> Result:
        d = self.docs[i]
        text = snippet if snippet and d.kind in ("card", "section") else d.summary
        return Result(kind=d.kind, id=d.id, title=d.title, snippet=_short(text), source=d.source)

    def _fts(self, terms: list[str], joiner: str, limit: int, kinds: set[str] | None) -> list[tuple[int, str]]:
        """(row, snippet) of the best matches: BM25 over everything, plus the best few cards and sections
        (long prose loses to short flag entries on raw BM25), ranked by BM25 times the kind's weight.
        Snippets are made for the card and section rows kept only; other kinds show their summary."""
        match = joiner.join('"' + t.replace('"', '""') + '"' for t in terms)
        with self._lock:
            try:
                rows = self._db.execute("SELECT rowid, rank FROM docs WHERE docs MATCH ? ORDER BY rank LIMIT ?",
                                        (match, limit * 4 if kinds else limit * 2)).fetchall()
                if not kinds or kinds & PROSE_KINDS:
                    rows += self._db.execute("SELECT rowid, rank FROM docs WHERE docs MATCH ? AND rowid < ? "
                                             "ORDER BY rank LIMIT 3", (match, self._prose_rows)).fetchall()
                best: dict[int, float] = {}
                for rowid, rank in rows:
                    i = int(rowid)
                    if not kinds or self.docs[i].kind in kinds:
                        best[i] = rank * KIND_WEIGHT.get(self.docs[i].kind, 1.0)
                kept = sorted(best, key=lambda i: (best[i], i))[:limit]
                prose = [i for i in kept if self.docs[i].kind in PROSE_KINDS]
                snippets = dict(self._db.execute(
                    f"SELECT rowid, snippet(docs, 2, '', '', '…', 18) FROM docs WHERE docs MATCH ? "
                    f"AND rowid IN ({','.join('?' * len(prose))})", (match, *prose)).fetchall()) if prose else {}
            except sqlite3.Error:
                return []
        return [(i, snippets.get(i, "")) for i in kept]

    def search(self, query: str, limit: int = 10, kinds: set[str] | None = None) -> list[Result]:
        """Best first: exact flag, rule code, matching slime error, close flags, then BM25 over everything."""
        text = _valid_text((query or "")[:MAX_QUERY_CHARS])
        if not text.strip():
            return []
        picked: list[int] = []

        def add(kind: str, key: str) -> None:
            i = self._by_key.get((kind, key))
            if i is not None and i not in picked and (not kinds or kind in kinds):
                picked.append(i)

        pasted_error = bool(traceback_frames(text)) or "\n" in text.strip() or re.search(r"\w(Error|Exception):", text)
        if not pasted_error:
            typed = text.strip().split("=", 1)[0].split()[0].lower()  # `--flag value` and `--flag=value` too
            flag = self._options_lower.get(typed) or self._options_lower.get(normalise_flag(text))
            if flag:
                add("flag", self._primary.get(flag, flag))
            if _CODE_RE.match(text.strip().upper()):
                add("rule", text.strip().upper())
        for m in match_error(text, self.errors, limit=limit):
            add("error", m.entry.id)
        query_text = error_message_of(text) if pasted_error else text
        terms = re.findall(r"[A-Za-z0-9]+", query_text.lower())[:MAX_TERMS]
        snippets: dict[int, str] = {}
        if terms:
            for i, snip in self._fts(terms, " ", limit, kinds):
                snippets.setdefault(i, snip)
            wide = [t for t in terms if t not in STOPWORDS] or terms
            if len(snippets) < limit and len(terms) > 1:
                for i, snip in self._fts(wide, " OR ", limit, kinds):
                    snippets.setdefault(i, snip)
        looks_like_flag = len(terms) <= 6 and (text.strip().startswith("-") or "_" in text or "-" in text.strip())
        if looks_like_flag and not any(self.docs[i].kind == "flag" for i in picked):
            for option in self.close_flags(text):
                add("flag", self._primary.get(option, option))
        for i in snippets:
            if i not in picked:
                picked.append(i)
        return [self._result(i, snippets.get(i)) for i in picked[:limit]]

    def close_flags(self, text: str, n: int = 3) -> list[str]:
        """Typo tolerance: options sharing the most trigrams with the text (FTS5's trigram tokenizer), kept
        when difflib's similarity ratio is at least 0.75, best first."""
        wanted = normalise_flag(_valid_text(text))[2:]
        grams = list(dict.fromkeys(wanted[i:i + 3] for i in range(len(wanted) - 2)))[:MAX_TERMS]
        if len(wanted) < 4 or not grams:
            return []
        match = " OR ".join('"' + g.replace('"', '""') + '"' for g in grams)
        with self._lock:
            try:
                rows = self._db.execute("SELECT rowid FROM options WHERE options MATCH ? ORDER BY rank LIMIT 25",
                                        (match,)).fetchall()
            except sqlite3.Error:
                return []
        scored = []
        for (rowid,) in rows:
            option = self.options[int(rowid)]
            matcher = difflib.SequenceMatcher(None, wanted, option[2:])
            if matcher.real_quick_ratio() < 0.75 or matcher.quick_ratio() < 0.75:
                continue
            ratio = matcher.ratio()
            if ratio >= 0.75:
                scored.append((-ratio, option))
        return [o for _, o in sorted(scored)[:n]]

    def about_flag(self, option: str, dest: str | None = None) -> tuple[list[Card], list[ErrorEntry]]:
        """The cards that name the flag in code (`--flag ...`), and slime's messages whose condition or text
        reads its value (`args.<dest>`)."""
        cards = [c for c in self.cards if re.search(r"`" + re.escape(option) + r"(?![a-z0-9\-])", c.body)]
        errors = []
        if dest:
            attr = re.compile(r"\bargs\." + re.escape(dest) + r"\b")
            errors = [e for e in self.errors.entries if attr.search(e.condition or "") or attr.search(e.template)]
        return cards, errors

    # ----------------------------------------------------------------------------------------------
    def error(self, key: str) -> ErrorEntry | None:
        return next((e for e in self.errors.entries if e.id == key), None)

    def explain_error(self, entry: ErrorEntry) -> dict[str, list[tuple[str, str]]]:
        """The rules (code, title) that catch the same condition before launch and the cards (id, title)
        that cite the same place in slime or are named by those rules or the link table."""
        from core.data import RULES as DATA_RULES
        from core.launch import RULES as LAUNCH_RULES

        rules: list[tuple[str, str]] = []
        card_ids: list[str] = []
        for link in links_for(entry):
            for code in link.rules:
                info = LAUNCH_RULES.get(code)
                data_rule = DATA_RULES.get(code)
                title = info.title if info else (data_rule.name.replace("-", " ") if data_rule else code)
                if (code, title) not in rules:
                    rules.append((code, title))
                if info and info.card:
                    card_ids.append(info.card)
            if link.card:
                card_ids.append(link.card)
        for card in self.cards:
            text = f"{card.body} {' '.join(card.sources)}"
            for m in _CITE_RE.finditer(text):
                start, end = int(m.group(2)), int(m.group(3) or m.group(2))
                if m.group(1) == entry.path and start <= entry.end_line and entry.line <= end:
                    card_ids.append(card.id)
                    break
        titles = {c.id: c.title for c in self.cards}
        cards = [(cid, titles[cid]) for cid in dict.fromkeys(card_ids) if cid in titles]
        return {"rules": rules, "cards": cards}


def _stamp(cards_dir: Path) -> tuple:
    """What the index depends on: the cards' names and times, and the data files' times."""
    from core.launch import CATALOG_PATH
    from core.model_scripts import MODEL_SCRIPTS_JSON

    parts: list[Any] = []
    try:
        parts += sorted((p.name, p.stat().st_mtime_ns) for p in Path(cards_dir).glob("*.md"))
    except OSError:
        pass
    for path in (CATALOG_PATH, ERRORS_PATH, REFERENCE_PATH, MODEL_SCRIPTS_JSON):
        try:
            parts.append(Path(path).stat().st_mtime_ns)
        except OSError:
            parts.append(0)
    return tuple(parts)


INDEX_IMAGE_FORMAT = 1
MAX_IMAGE_BYTES = 64 * 2**20
# Code whose output the documents are: a change to any of these makes the saved image stale.
_DOC_SOURCES = ("core/knowledge/search.py", "core/knowledge/flags.py", "core/knowledge/cards.py",
                "core/knowledge/errors.py", "core/data/rules.py", "core/model_scripts.py", "core/launch/rules")


@lru_cache(maxsize=2)
def _index_for(cards_dir: Path, stamp: tuple) -> SearchIndex:
    """The index for these sources: from the image saved by an earlier process when it matches them (start-up
    of `ask` is mostly this), else built and its image saved for the next one."""
    from core.launch import load_catalog

    where = _image_path(cards_dir, stamp)
    image = _read_image(where) if where is not None else None
    index = SearchIndex(lambda: readable_cards(cards_dir), load_catalog, load_error_index(), image=image)
    if where is not None and not index.from_image:
        _write_image(where, index.image())
    return index


def _image_path(cards_dir: Path, stamp: tuple) -> Path | None:
    """Where the index image for these sources is kept: in the app's home (SLIME_ASSISTANT_HOME, as the store),
    named by a hash of everything the documents come from."""
    import hashlib
    import os

    root = Path(__file__).resolve().parent.parent.parent
    parts: list[Any] = [INDEX_IMAGE_FORMAT, str(Path(cards_dir).resolve()), stamp, sqlite3.sqlite_version]
    for name in _DOC_SOURCES:
        path = root / name
        try:
            files = sorted(path.glob("*.py")) if path.is_dir() else [path]
            parts += [(f.name, f.stat().st_mtime_ns, f.stat().st_size) for f in files]
        except OSError:
            return None
    home = os.environ.get("SLIME_ASSISTANT_HOME")
    base = Path(home).expanduser() if home else Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") \
        / "slime-assistant"
    digest = hashlib.sha256(repr(parts).encode("utf-8", "surrogateescape")).hexdigest()[:20]
    return base / "search-index" / f"index-{digest}.sqlite"


def _read_image(where: Path) -> bytes | None:
    from core.paths import NotRegularFile, read_regular

    try:
        data = read_regular(where, MAX_IMAGE_BYTES + 1)
    except (NotRegularFile, OSError, ValueError):
        return None
    return data if len(data) <= MAX_IMAGE_BYTES else None


def _write_image(where: Path, image: bytes) -> None:
    """Save the image (a temporary file renamed into place, so a reader never sees half of one) and remove the
    images of older sources. A home that cannot be written only costs the next start-up its speed."""
    import os
    import tempfile

    try:
        where.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".index-", dir=where.parent)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(image)
            os.replace(tmp, where)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        for old in where.parent.glob("index-*.sqlite"):
            if old != where and time.time() - old.stat().st_mtime > 60:
                old.unlink(missing_ok=True)
    except OSError:
        pass


def readable_cards(cards_dir: Path) -> tuple[Card, ...]:
    """Every card that parses (a card being written and not valid yet is left out of the search, not fatal:
    the card tests name it), sorted by title."""
    from core.knowledge.cards import parse_card

    cards = []
    for path in sorted(Path(cards_dir).glob("*.md")):
        try:
            cards.append(parse_card(path.stem, path.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError, ValueError):  # CardError and pydantic's ValidationError
            continue
    return tuple(sorted(cards, key=lambda c: c.title.lower()))


STAMP_TTL_S = 2.0
_STAMPS: dict[Path, tuple[float, tuple]] = {}


def get_index(cards_dir: Path = CARDS_DIR) -> SearchIndex:
    """The index, built on first use and rebuilt when a card is added, removed or edited or a data file
    changes (looked at most every STAMP_TTL_S seconds)."""
    now = time.monotonic()
    seen = _STAMPS.get(cards_dir)
    if seen is None or now - seen[0] > STAMP_TTL_S:
        seen = _STAMPS[cards_dir] = (now, _stamp(cards_dir))
    return _index_for(cards_dir, seen[1])


def search(query: str, limit: int = 10, kinds: set[str] | None = None) -> list[Result]:
    return get_index().search(query, limit=limit, kinds=kinds)


def grouped(results: list[Result]) -> dict[str, list[Result]]:
    """Results by kind, kinds in the order of their best result."""
    out: dict[str, list[Result]] = {}
    for r in results:
        out.setdefault(r.kind, []).append(r)
    return out


class ErrorExplanation(BaseModel):
    """What a message from slime means in plain words, what to do, and where we say more."""

    meaning: str
    fix: str
    rules: list[tuple[str, str]] = Field(default_factory=list, description="(code, title) of our checks")
    cards: list[tuple[str, str]] = Field(default_factory=list, description="(id, title) of cards")


def explain(index: SearchIndex, entry: ErrorEntry) -> ErrorExplanation:
    """Plain words for one indexed message: which check in slime fails, and the fix when a rule knows it."""
    from core.data import RULES as DATA_RULES

    linked = index.explain_error(entry)
    where = f"in {entry.function} ({entry.path}:{entry.line} at slime {entry.commit})"
    if entry.kind == "assert":
        meaning = (f"slime checks that {entry.condition} {where} and stops with AssertionError when it is false."
                   if entry.condition else f"An assert {where} failed.")
    elif entry.condition:
        meaning = f"slime raises {entry.exception} {where} when this holds: {entry.condition}."
    else:
        meaning = f"slime raises {entry.exception} {where}."
    fixes = []
    for code, title in linked["rules"]:
        data_rule = DATA_RULES.get(code)
        if data_rule is not None:
            fixes.append(f"{code}: {data_rule.fix} (the data checker finds these rows before launch)")
        else:
            fixes.append(f"{code} ({title}) catches this before launch: run the launch-script checker on your "
                         "script and follow its fix.")
    if not fixes and linked["cards"]:
        titles = [f"'{title}'" for _, title in linked["cards"][:2]]
        which = (f"the card {titles[0]} cites this line and explains" if len(titles) == 1
                 else f"the cards {titles[0]} and {titles[1]} cite this line and explain")
        fixes.append(f"No check of ours catches this one before launch; {which} the setting around it.")
    elif not fixes:
        fixes.append("No check of ours catches this one before launch. The values in your message show what "
                     "slime saw; compare them with the condition above and the code at the cited line.")
    return ErrorExplanation(meaning=meaning, fix=" ".join(fixes), rules=linked["rules"], cards=linked["cards"])
