"""One search over everything the knowledge base holds: cards and their sections, flags, rules, slime's
error messages and model scripts.

Ranking is SQLite FTS5's BM25 (FTS5 ships with Python's sqlite3) over an in-memory index, built on first
use and rebuilt when a card or data file changes. The built index is saved as an image (a SQLite database in
the app's cache folder, named by a hash of the knowledge files and of the code the documents come from), and
the next process reads it back instead of building again: the start-up of `ask` is mostly that read. Before BM25, three exact lookups go first: a flag named
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
from typing import Any, NamedTuple

from pydantic import BaseModel, Field

from core.knowledge import index_image
from core.knowledge.answers import KINDS, Answer, Result
from core.knowledge.cards import CARDS_DIR, Card, cards_citing_frames, cited_files, parse_card
from core.knowledge.documents import (
    _CITE_RE,
    _answer_text,
    _card_docs,
    _Doc,
    _error_docs,
    _flag_docs,
    _model_docs,
    _rule_docs,
    _short,
)
from core.knowledge.errors import (
    ErrorEntry,
    ErrorIndex,
    ErrorMatch,
    entry_parts,
    links_for,
    match_error,
    prepare_matching,
)
from core.knowledge.flags import normalise_flag
from core.knowledge.layers import LAYER_TITLES, layer_of, load_all_messages, log_verdict
from core.knowledge.query_words import CONTEXT_WORD_RE, ISSUE_TAG_RE, WRAPPER_TYPE_RE, camel_parts
from core.knowledge.runtime import match_runtime
from core.knowledge.saved_messages import SavedMessages, SavedMessagesBroken
from core.knowledge.snippets import answer_sentence
from core.knowledge.symptoms import symptom_cards
from core.knowledge.tables import match_tables, runtime_messages, table_docs
from core.knowledge.traceback import MAX_LINE_CHARS, MAX_PASTE_CHARS, OWN_LAYERS, ReadPaste, read_paste
from core.knowledge.zh import english_words

MAX_QUERY_CHARS = 20_000  # of a question (a paste is read up to MAX_PASTE_CHARS, from its end)
MAX_TERMS = 40
PROSE_KINDS = frozenset({"card", "section"})
# Records presented as "the message you saw": shown first, a wrong one is a confident wrong answer.
MESSAGE_KINDS = frozenset({"error", "log", "runtime", "bug"})
# Of those, the templates read from the code (not the curated runtime and known-bug records, whose text is written
# as the symptom a user describes).
TEMPLATE_KINDS = frozenset({"error", "log"})
# BM25 is multiplied by these (BM25 is negative: a larger weight ranks higher); prose and rules are what a
# question usually wants, and raw BM25 favours the many short flag entries; the thousands of error messages
# and log lines of every layer are found by their text first (exact lookups), so words weigh them less.
KIND_WEIGHT = {"card": 1.5, "section": 1.3, "rule": 1.2, "error": 0.85, "log": 0.6}
# Left out of the any-word fallback (the all-words query keeps them): they match nearly every document.
STOPWORDS = frozenset("a an and are be by can do does for from how i in is it of on or should the to what when "
                      "where which why with".split()) | frozenset(  # and the filler of a question asked in words
    "did not find have has had looked look through docs doc documentation any anyone there this that my me we "
    "you your our slime support supports supported please thanks thank help know want wanted trying tried try "
    "get got use using used".split())
_CODE_RE = re.compile(r"^[A-Z]{2,8}\d{3}$")
_FLAG_WORD_RE = re.compile(r"--[A-Za-z0-9][A-Za-z0-9\-]{1,80}|\b[a-z][a-z0-9]{1,30}(?:_[a-z0-9]{1,30}){1,8}\b")


# A log level followed by a separator, a leading timestamp, `[rank0]:`, or Ray's `(X pid=...)`; not the
# `[Bug]` or `[Question]` an issue title starts with.
_LOG_MARK_RE = re.compile(r"\b(?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL|FATAL)\b\s*[:\-\]]|\b(?:INFO|WARNING|ERROR) "
                          r"(?:\d{2}:\d{2}:\d{2}\S*\s+)?\S+\.py:\d|^[ \t]*\[?\d{4}-\d{2}-\d{2}[ T]\d{2}:|^[ \t]*\[rank\d|\(\w+ pid=\d+", re.M)


def _is_pasted_error(text: str, read: ReadPaste) -> bool:
    """A traceback, a `SomeError: message` line, or log lines (a level, a `[...]` prefix, Ray's `(X pid=...)`),
    rather than a question, a flag or a few lines of plain words."""
    return bool(read.frames) or read.is_traceback or bool(read.final and read.final.type) or \
        bool(_LOG_MARK_RE.search(text[:MAX_QUERY_CHARS]))


def _evidence(match: ErrorMatch) -> bool:
    """Whether a message match answers the paste: exact, or likely with more than a generic template behind
    it (a frame locating it, or most of its distinctive words)."""
    return match.confidence == "exact" or (match.confidence == "likely" and (match.frame is not None
                                                                           or match.how == "words"))


# Linear: the leading spaces are read once (an indented line, two spaces or more, is code in a traceback).
_FRAME_OR_CODE_RE = re.compile(r"\s{2,}\S|\s*(?:\[rank\d+\]:\s*)?(?:File \"|Traceback \(|\^+$|[\w.]+\(|\w+ = |"
                               r"return |raise |assert )")
MAX_PROSE_LINES = 4


def _prose_lines(text: str) -> list[str]:
    """The first few lines of a paste written in words (an issue title, a sentence saying what was run), not
    frames, code, log lines or the exception: what a cut traceback without a final exception still tells."""
    out = []
    for line in text[:MAX_QUERY_CHARS].splitlines()[:200]:
        line = line[:MAX_LINE_CHARS]
        if not line.strip() or _FRAME_OR_CODE_RE.match(line) or _LOG_MARK_RE.search(line):
            continue
        if len(re.findall(r"[A-Za-z]{3,}", line)) >= 3 or english_words(line):
            out.append(line.strip())
        if len(out) >= MAX_PROSE_LINES:
            break
    return out


def _prose_before_word_matched_messages(order: list[int], picked: dict[int, str], docs: list[Any]) -> list[int]:
    """A question in words: a message record that only shares words with it (`related`) is not "your
    message", so it does not come first when a card or section matched the same words; the best such prose
    result moves in front of it. Exact lookups (a flag named, a message quoted whole) keep their place."""
    if not order or picked[order[0]] != "related" or docs[order[0]].kind not in MESSAGE_KINDS:
        return order
    prose = next((i for i in order if picked[i] == "related" and docs[i].kind in PROSE_KINDS), None)
    if prose is None:
        return order
    return [prose] + [i for i in order if i != prose]


_QUOTED_NAME_RE = re.compile(r"'([A-Za-z_][A-Za-z0-9_]{1,80})'")


def _in_frames(doc_id: str, frames: list[Any]) -> bool:
    """Whether a message's file (`path:line`) is one a traceback's frames pass through."""
    path = doc_id.rsplit(":", 1)[0].removeprefix("python/")
    return any(f.path.replace("\\", "/").endswith(path) for f in frames)


def located_note(read: ReadPaste) -> str | None:
    """Where the innermost frame in slime, Megatron-LM or SGLang is, and who raised the exception."""
    own = next((f for f in read.frames if f.layer in OWN_LAYERS), None)
    if own is None:
        return None
    innermost = read.frames[0]
    where = f"{own.path}:{own.line}" + (f", in {own.function}" if own.function else "")
    by = "" if innermost is own else f" ({LIBRARY_NAMES.get(innermost.layer, innermost.layer)} raised it further in)"
    return f"The innermost frame in {LAYER_TITLES.get(own.layer, own.layer)} is {where}{by}."


LIBRARY_NAMES = {"python": "Python or a library outside slime, Megatron-LM and SGLang"}


def _looks_like_flag(text: str, terms: list[str]) -> bool:
    return len(terms) <= 6 and (text.strip().startswith("-") or "_" in text or "-" in text.strip())


class _Shown(NamedTuple):
    """What a result shows of a document; an index read from its image keeps only this (`text`: what the
    answering sentence of a card or section is picked from)."""

    kind: str
    id: str
    title: str
    summary: str
    source: str
    text: str = ""


_RAISED_TITLES = {**LAYER_TITLES, "python": "Python code outside slime and the libraries known here"}


def _frame_words(frame: Any) -> str:
    """A traceback frame as `path, line N, in function` (the path as pasted, its long middle cut)."""
    path = frame.path if len(frame.path) <= 120 else frame.path[:40] + "…" + frame.path[-79:]
    return f"{path}, line {frame.line}" + (f", in {frame.function}" if frame.function else "")


def _valid_text(text: str) -> str:
    """The text with lone surrogates (undecodable bytes from a command line or a pipe) as U+FFFD: SQLite takes
    only valid UTF-8."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return re.sub("[\ud800-\udfff]+", "\ufffd", text)
    return text


# --------------------------------------------------------------------------------------------------
# The index
# --------------------------------------------------------------------------------------------------
class SearchIndex:
    """An in-memory FTS5 table over every document, plus the exact lookups that go before BM25."""

    def __init__(self, cards: tuple[Card, ...] | Callable[[], tuple[Card, ...]], catalog: Any,
                 errors: ErrorIndex | Callable[[], ErrorIndex], image: bytes | Path | None = None) -> None:
        """Build the index, or take it from `image` (what `image()` wrote for the same sources, or the file it
        was saved in), which saves the build; an image that is not one is ignored. `cards`, `catalog` and
        `errors` may be functions that load them: with an image each is loaded only when a query first needs it
        (messages are matched from the image's own tables, `match_messages`)."""
        self._cards = cards
        self._catalog = catalog
        self._errors = errors
        self._errors_by_id: dict[str, ErrorEntry] | None = None
        self._cited: dict[str, list[str]] | None = None  # a cited file -> the cards whose sources cite it
        self._lock = threading.RLock()  # re-entrant: an image's rows are read inside the queries that hold it
        self._saved_messages: SavedMessages | None = None
        self.from_image = image is not None and self._load_image(image)
        if not self.from_image:
            self._build()
        keys = self.docs.keys if isinstance(self.docs, index_image.ShownRows) else [(d.kind, d.id) for d in self.docs]
        self._by_key = {key: i for i, key in enumerate(keys)}
        self._prose_rows = sum(1 for kind, _ in keys if kind in PROSE_KINDS)  # cards and sections come first
        self._options_lower = {o.lower(): o for o in self.options}
        if not callable(self._errors):
            self._ready(self._errors)  # the message templates made ready once, here rather than in a query

    def _build(self) -> None:
        catalog, cards = self.catalog, self.cards
        self.options = sorted({o for f in catalog.flags for o in f.option_strings})
        specs = {o: catalog.lookup(o) for o in self.options}  # the flag an option names, as the catalog says
        self._primary = {o: spec.primary if spec else o for o, spec in specs.items()}
        if callable(self._errors):
            self._errors = self._errors()
        self._parts = entry_parts(self._errors)  # what matching prepares from each message, kept in the image
        built = [*_card_docs(cards), *_flag_docs(catalog), *_rule_docs(), *_error_docs(self._errors),
                 *_model_docs(), *(_Doc(**d) for d in table_docs())]
        by_id = {c.id: c for c in cards}
        self.docs: list[_Doc | _Shown] = [_Shown(d.kind, d.id, d.title, d.summary, d.source, _answer_text(d, by_id))
                                          for d in built]
        self._db = sqlite3.connect(":memory:", check_same_thread=False)
        self._db.execute("CREATE VIRTUAL TABLE docs USING fts5(names, title, body, "
                         "tokenize='porter unicode61 remove_diacritics 2')")
        self._db.executemany("INSERT INTO docs(rowid, names, title, body) VALUES (?, ?, ?, ?)",
                             [(i, d.names, d.title, d.body) if d.searchable else (i, "", "", "")
                              for i, d in enumerate(built)])
        self._db.execute("INSERT INTO docs(docs, rank) VALUES ('rank', 'bm25(10.0, 4.0, 1.0)')")
        self._db.execute("CREATE VIRTUAL TABLE options USING fts5(option, tokenize='trigram')")
        self._db.executemany("INSERT INTO options(rowid, option) VALUES (?, ?)",
                             [(i, o[2:]) for i, o in enumerate(self.options)])
        self._db.execute("CREATE TABLE primaries(option TEXT PRIMARY KEY, flag TEXT)")
        self._db.executemany("INSERT INTO primaries VALUES (?, ?)", sorted(self._primary.items()))
        self._db.execute("CREATE TABLE shown(rowid INTEGER PRIMARY KEY, kind, id, title, summary, source, text)")
        self._db.executemany("INSERT INTO shown VALUES (?, ?, ?, ?, ?, ?, ?)",
                             [(i, *d) for i, d in enumerate(self.docs)])
        index_image.save_parts(self._db, self._errors.entries, self._parts)
        index_image.save_start_up(self._db, self.docs)
        self._db.commit()

    def _ready(self, errors: ErrorIndex) -> None:
        """Prepare message matching from the parts the build computed or the image kept, else afresh."""
        parts = getattr(self, "_parts", None)
        if parts is None and self.from_image:
            with self._lock:
                parts = index_image.saved_parts(self._db, errors.entries)
        prepare_matching(errors, parts)
        self._parts = None

    @property
    def cards(self) -> tuple[Card, ...]:
        """The cards (with an image, read only when first needed)."""
        if callable(self._cards):
            self._cards = self._cards()
        return self._cards

    @property
    def catalog(self) -> Any:
        """The argument catalog (with an image, read only when first needed)."""
        if callable(self._catalog):
            self._catalog = self._catalog()
        return self._catalog

    @property
    def errors(self) -> ErrorIndex:
        """The messages of every layer and slime's log lines (with an image, read when a query needs them)."""
        if callable(self._errors):
            self._errors = self._errors()
            self._ready(self._errors)
        return self._errors

    def image(self) -> bytes:
        """The index as bytes (its SQLite database), for `SearchIndex(..., image=...)` in a later process."""
        with self._lock:
            return self._db.serialize()

    def _load_image(self, image: bytes | Path) -> bool:
        """Take the database, shown fields and flag spellings from an image; False when it is not one of ours."""
        loaded = index_image.load_image(image)
        if loaded is None:
            return False
        self._db, keys, self._primary = loaded
        self.options = sorted(self._primary)
        self.docs = index_image.ShownRows(self._db, self._lock, keys, _Shown)
        if SavedMessages.usable(self._db):
            self._saved_messages = SavedMessages(self._db, self._lock)
        return True

    def match_messages(self, text: str, limit: int = 5) -> list[ErrorMatch]:
        """`match_error` over the messages of every layer: read from the image's tables when the index came from
        one (a query reads only the messages its text leads to), else from the loaded messages; the same
        matches either way. A damaged table is given up for the loaded messages."""
        if self._saved_messages is not None:
            try:
                return match_error(text, self._saved_messages, limit=limit)
            except SavedMessagesBroken:
                self._saved_messages = None
        return match_error(text, self.errors, limit=limit)

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(KINDS, 0)
        for d in self.docs:
            out[d.kind] += 1
        return out

    def _result(self, i: int, match: str, terms: list[str]) -> Result:
        d = self.docs[i]
        return Result(kind=d.kind, id=d.id, title=d.title, snippet=_short(self._snippet(d, terms)), source=d.source,
                      match=match)

    def _snippet(self, d: _Shown, terms: list[str]) -> str:
        """For a card or section, the sentence that answers (plain text, see core.knowledge.snippets); for
        the other kinds, their summary."""
        if d.kind in PROSE_KINDS and d.text:
            return answer_sentence(d.text, terms, STOPWORDS) or d.summary
        return d.summary

    def _fts(self, terms: list[str], joiner: str, limit: int, kinds: set[str] | None) -> list[int]:
        """The rows of the best matches: BM25 over everything, plus the best few cards and sections (long
        prose loses to short flag entries on raw BM25), ranked by BM25 times the kind's weight."""
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
            except sqlite3.Error:
                return []
        return sorted(best, key=lambda i: (best[i], i))[:limit]

    def search(self, query: str, limit: int = 10, kinds: set[str] | None = None) -> list[Result]:
        """Best first: exact flag, rule code, matching error message, close flags, then BM25 (see `ask`)."""
        return self.ask(query, limit=limit, kinds=kinds).results

    def ask(self, query: str, limit: int = 10, kinds: set[str] | None = None) -> Answer:
        """The answer to a question, a flag, a rule code or a pasted error, best first, each result with how
        sure it is. A pasted error is read like an engineer reads it (`read_paste`): its final exception is
        matched first; when no indexed message matches, the text-search results are marked `closest`."""
        text = _valid_text((query or "")[-MAX_PASTE_CHARS:])  # a long log: its end holds the final exception
        if not text.strip():
            return Answer(results=[])
        read = read_paste(text)
        pasted = _is_pasted_error(text, read)
        picked: dict[int, str] = {}  # row -> match level, in rank order

        def add(kind: str, key: str, level: str = "exact") -> None:
            i = self._by_key.get((kind, key))
            if i is not None and i not in picked and (not kinds or kind in kinds):
                picked[i] = level

        matches = self.match_messages(text, limit=limit)
        if not pasted:
            self._add_named(text, matches, add)
            self._add_flag_section(text, add)
        for m in matches:  # exact messages, then the curated tables' exact hits, then the likely messages
            if m.confidence == "exact":
                add("log" if m.entry.kind == "log" else "error", m.entry.id, m.confidence)
        table_hits = self.table_hits(text, pasted)
        for kind, key in table_hits:
            add(kind, key)
        for m in matches:
            add("log" if m.entry.kind == "log" else "error", m.entry.id, m.confidence)
        query_text = (read.final.message if read.final else "") if pasted else text[:MAX_QUERY_CHARS]
        prose = _prose_lines(text) if pasted else []
        if pasted and not (read.final and read.final.type):  # a cut traceback or log lines: the words around
            query_text = " ".join([*prose, query_text])  # them say what went wrong
        elif pasted and WRAPPER_TYPE_RE.search(read.final.type or ""):  # `RayTaskError(Inner): ray::A.m() (pid=…)`:
            query_text = " ".join(prose)  # the wrapper's words say where it ran; the inner type and the prose, what
        query_text = ISSUE_TAG_RE.sub(" ", query_text)
        terms = re.findall(r"[A-Za-z0-9]+", query_text.lower())[:MAX_TERMS]
        terms += [w for w in camel_parts(query_text, MAX_QUERY_CHARS, MAX_TERMS) if w not in terms][:max(0, MAX_TERMS - len(terms))]
        if pasted and read.final and read.final.short_type and read.final.short_type.lower() not in terms:
            terms.append(read.final.short_type.lower())  # the exception's class joins its words
        terms += [w for w in english_words(text[:MAX_QUERY_CHARS]) if w not in terms][:max(0, MAX_TERMS - len(terms))]
        hits = self._text_hits(terms, limit, kinds, query_text)
        if _looks_like_flag(text, terms) and not any(self.docs[i].kind == "flag" for i in picked):
            for option in self.close_flags(text):
                add("flag", self._primary.get(option, option), "likely")
        found = any(_evidence(m) for m in matches) or bool(table_hits)
        if not pasted:  # a symptom in words: its card right after the exact lookups, before word overlap
            for card in symptom_cards(" ".join([text[:MAX_QUERY_CHARS], *english_words(text[:MAX_QUERY_CHARS])])):
                add("card", card, "related")
        if pasted and not found:  # only generic templates fit, or the class differs: candidates, not answers
            picked = {i: "closest" if level == "likely" else level for i, level in picked.items()}
        if pasted:  # the flags a message names (`no attribute 'x'`, `KeyError: 'x'`): what the code read
            for option in self.named_flags(" ".join(_QUOTED_NAME_RE.findall(read.final.message if read.final
                                                                             else ""))):
                spec = self.catalog.lookup(option)
                add("flag", spec.primary if spec else option, "related")
        if pasted and not found:  # the flags the paste's own words name (`when running with --x, it crashes`)
            for option in self.named_flags(" ".join(prose)):  # are the setting it ran with: before word overlap
                add("flag", self._primary.get(option, option), "closest")
        own_frames = [f for f in read.frames if f.layer in OWN_LAYERS]
        if pasted and not found and own_frames and (not kinds or "card" in kinds):
            for card in self.cards_citing(own_frames):  # the frames locate it: the card about that file
                add("card", card, "closest")
        if pasted and not found and not matches:
            # words alone point at messages first: the cards, flags and checks those words name come before
            # them (a message that only shares words is no answer)
            if not kinds or kinds & PROSE_KINDS:
                hits = [*self._prose_hits(terms, 3), *hits]
        for i in hits:
            d = self.docs[i]
            if pasted and not found and own_frames and d.kind in MESSAGE_KINDS and d.kind != "runtime" \
                    and not _in_frames(d.id, own_frames):
                continue  # a message of a file the traceback does not pass through is no candidate
            add(d.kind, d.id, "closest" if pasted and not found else "related")
        if pasted and not found:  # a wrapper or harmless line in the paste (Ray's RayTaskError): its record
            for entry in match_runtime(text, runtime_messages(), limit=3):  # says where the real error is printed
                if entry.normal:
                    add("runtime", entry.id, "closest")
        order = list(picked)
        if pasted and not found:  # no message answers: prose and checks near the words before other messages
            order.sort(key=lambda i: self.docs[i].kind in MESSAGE_KINDS)
        elif not pasted:
            order = _prose_before_word_matched_messages(order, picked, self.docs)
            if order and picked[order[0]] == "related" and self.docs[order[0]].kind in TEMPLATE_KINDS:
                order = self._templates_after_answers(order, picked, terms, kinds, add)
        results = [self._result(i, picked[i], terms) for i in order[:limit]]
        answer = self._answer(results, read, pasted, found)
        answer.cut_chars = max(0, len(query or "") - MAX_PASTE_CHARS)
        return answer

    def _templates_after_answers(self, order: list[int], picked: dict[int, str], terms: list[str],
                                 kinds: set[str] | None, add: Any) -> list[int]:
        """A question in words whose best word match is a message template of the code (an `error` or `log`
        line that only shares words with it): the template is not the user's message, so the cards and
        sections with the question's distinctive words (added when no result but messages was found, else the
        flags, checks and scripts with them) and every other result come before the templates; when the question
        finds nothing but such templates, it finds nothing (the class: a question about a platform or a feature answered with a raise)."""
        if not any(self.docs[i].kind not in MESSAGE_KINDS for i in order):
            wide = [t for t in terms if t not in STOPWORDS] or terms
            found = self._prose_hits(terms, 3) if not kinds or kinds & PROSE_KINDS else []
            for i in found or self._fts(wide, " OR ", 3, (set(kinds) if kinds else set(KINDS)) - MESSAGE_KINDS):
                add(self.docs[i].kind, self.docs[i].id, "related")
            order = list(picked)
        head = [i for i in order if not (picked[i] == "related" and self.docs[i].kind in TEMPLATE_KINDS)]
        if not head:  # nothing but templates sharing words: no answer, said as nothing found
            return []
        return head + [i for i in order if i not in set(head)]

    def cards_citing(self, frames: list[Any], most: int = 2) -> list[str]:
        """The cards whose sources cite the file of a traceback's frame (see `cards_citing_frames`)."""
        if self._cited is None:
            self._cited = cited_files(self.cards)
        return cards_citing_frames(self._cited, [f.path for f in frames], most)

    def table_hits(self, text: str, pasted: bool) -> list[tuple[str, str]]:
        """(kind, id) of exact hits in curated tables (runtime messages of the libraries under slime, known
        bugs, other frameworks' words), best first; such a hit counts as found for a pasted error."""
        return match_tables(text, pasted=pasted)

    def _add_named(self, text: str, matches: list[ErrorMatch], add: Any) -> None:
        """The exact lookups of a typed query: the query is a flag (any spelling) or a rule code; a message
        quoted whole goes first; then the flags a question names (`what does --rollout-batch-size mean`)."""
        stripped = text.strip()
        head = stripped.split("=", 1)[0].split()
        typed = head[0].lower() if head else ""  # `--flag value` and `--flag=value` too; "=x" names no flag
        flag = self._options_lower.get(typed) or self._options_lower.get(normalise_flag(text))
        if flag and (typed.startswith("-") or len(stripped.split()) <= 6):
            add("flag", self._primary.get(flag, flag), "exact")
        if _CODE_RE.match(stripped.upper()):
            add("rule", stripped.upper(), "exact")
        for m in matches:  # the query is the message itself, not a question that happens to contain it
            if m.confidence == "exact" and len(m.entry.fixed_words) >= 0.5 * len(stripped):
                add("log" if m.entry.kind == "log" else "error", m.entry.id, "exact")
        for option in self.named_flags(text)[:1]:  # the first flag a question names; the others rank as text
            add("flag", self._primary.get(option, option), "exact")

    def _add_flag_section(self, text: str, add: Any) -> None:
        """A question that names a flag and asks more than the name: the card section that names the flag in
        its text and shares the most of the question's other words goes right after the flag's entry. The names
        of models, sizes and GPUs say where it ran, not what it asks, so they do not choose the section (the
        class: "cudaError while offload_train for GLM-5 on 16x8 H20" answered with the recipe of that model
        rather than the offloading section)."""
        named = self.named_flags(text)
        if not named:
            return
        option = named[0]
        words = [w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in STOPWORDS
                 and w not in option.lower()]
        if len(words) < 2:
            return  # the flag alone, or the flag and a word: its entry is the answer
        asked = [w for w in words if not CONTEXT_WORD_RE.fullmatch(w)] or words
        flag_words = re.findall(r"[a-z0-9]+", option.lower())
        for i in self._fts([*flag_words, *asked][:MAX_TERMS], " OR ", 20, {"section"}):
            if re.search(re.escape(option) + r"(?![a-z0-9\-])", self.docs[i].text):
                add("section", self.docs[i].id, "related")
                return

    def named_flags(self, text: str) -> list[str]:
        """The catalog's flags a question names as `--flag` or as an argparse dest (`rollout_batch_size`)."""
        out = []
        for word in _FLAG_WORD_RE.findall(text[:2000]):
            option = self._options_lower.get(word.lower()) or (
                self._options_lower.get("--" + word.lower().replace("_", "-")) if "_" in word else None)
            if option and option not in out:
                out.append(option)
        return out[:3]

    def _prose_hits(self, terms: list[str], limit: int) -> list[int]:
        """The best cards and sections with any of the distinctive words (one narrow query over prose rows)."""
        wide = [t for t in terms if t not in STOPWORDS] or terms
        if not wide:
            return []
        match = " OR ".join('"' + t.replace('"', '""') + '"' for t in wide)
        with self._lock:
            try:
                rows = self._db.execute("SELECT rowid FROM docs WHERE docs MATCH ? AND rowid < ? ORDER BY rank "
                                        "LIMIT ?", (match, self._prose_rows, limit)).fetchall()
            except sqlite3.Error:
                return []
        return [int(r) for (r,) in rows]

    def _text_hits(self, terms: list[str], limit: int, kinds: set[str] | None, text: str = "") -> list[int]:
        """BM25 rows: those with every word first, then those with any of the distinctive words (a hyphenated
        pair of the text also as one word)."""
        joined = text.lower()
        rows: dict[int, None] = {}
        if terms:
            rows.update(dict.fromkeys(self._fts(terms, " ", limit, kinds)))
            wide = [t for t in terms if t not in STOPWORDS] or terms
            wide += [a + b for a, b in zip(terms, terms[1:], strict=False) if len(a) > 2 and len(b) > 2
                     and f"{a}-{b}" in joined][:5]  # multi-modal also finds multimodal
            if len(rows) < limit and len(terms) > 1:
                rows.update(dict.fromkeys(self._fts(wide, " OR ", limit, kinds)))
        return list(rows)

    def _answer(self, results: list[Result], read: ReadPaste, pasted: bool, found: bool) -> Answer:
        if not pasted:
            return Answer(results=results)
        final = read.final
        layer = read.layer
        notice = None
        if not found:
            what = f"{final.type + ': ' if final and final.type else ''}{final.message if final else ''}".strip()
            raised_by = (f" The traceback's innermost frames are in {layer}, so it is raised there, not by slime, "
                         "Megatron-LM or SGLang." if layer and layer not in LAYER_TITLES and layer != "python" else "")
            closest = ("; closest: " + " · ".join(f"'{_short(r.title, 90)}'" for r in results[:3])
                       + " (shown as closest, not as the answer)") if results else ""
            located = located_note(read)
            notice = (f"No message of slime, Megatron-LM or SGLang at the pinned commits matches "
                      f"\"{_short(what, 160)}\"{closest}.{raised_by}" + (f" {located}" if located else ""))
        own = next((f for f in read.frames if f.layer in LAYER_TITLES), None)
        inner = read.frames[0] if read.frames else None
        return Answer(results=results, pasted_error=True, error_type=final.type if final else None,
                      error_message=final.message if final else None,
                      layer=LAYER_TITLES.get(layer, layer) if layer else None, found=found, notice=notice,
                      raised_in=_RAISED_TITLES.get(inner.layer, inner.layer) if inner else None,
                      own_frame=_frame_words(own) if own else None,
                      own_layer=LAYER_TITLES[own.layer] if own else None)

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
        """The cards that name the flag in code (`--flag ...`), and the messages (slime's, and Megatron-LM's
        argument checks) whose condition or text reads its value (`args.<dest>`)."""
        cards = [c for c in self.cards if re.search(r"`" + re.escape(option) + r"(?![a-z0-9\-])", c.body)]
        errors = []
        if dest:
            attr = re.compile(r"\bargs\." + re.escape(dest) + r"\b")
            errors = [e for e in self.errors.entries if e.kind != "log" and e.template
                      and (attr.search(e.condition or "") or attr.search(e.template))]
        return cards, errors

    # ----------------------------------------------------------------------------------------------
    def error(self, key: str) -> ErrorEntry | None:
        """The indexed message (or log line) with this `path:line` id."""
        if self._saved_messages is not None and self._errors_by_id is None:
            try:
                return self._saved_messages.by_id.get(key)
            except SavedMessagesBroken:
                self._saved_messages = None
        if self._errors_by_id is None:
            self._errors_by_id = {}
            for e in self.errors.entries:
                self._errors_by_id.setdefault(e.id, e)
        return self._errors_by_id.get(key)

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


@lru_cache(maxsize=2)
def _index_for(cards_dir: Path, stamp: tuple) -> SearchIndex:
    """The index for these sources: from the image an earlier process saved for the same contents (start-up
    of `ask` is mostly this), else built, and its image saved for the next process."""
    key = index_image.known_image_key(index_image.data_files(cards_dir))
    where = index_image.image_dir() / f"index-{key}.sqlite" if key else None
    image = where if where is not None and where.exists() else None  # opened in place (`index_image.load_image`)
    index = SearchIndex(lambda: readable_cards(cards_dir), _load_catalog, load_all_messages, image=image)
    if where is not None and not index.from_image:
        index_image.write_image(where, index.image())
    return index


def _load_catalog() -> Any:
    """The argument catalog, core.launch loaded only when a query needs it (an index read from its image)."""
    from core.launch import load_catalog

    return load_catalog()


def readable_cards(cards_dir: Path) -> tuple[Card, ...]:
    """Every card that parses (a card being written and not valid yet is left out of the search, not fatal:
    the card tests name it), sorted by title."""
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
        seen = _STAMPS[cards_dir] = (now, index_image.stamp(cards_dir))
    return _index_for(cards_dir, seen[1])


def search(query: str, limit: int = 10, kinds: set[str] | None = None) -> list[Result]:
    return get_index().search(query, limit=limit, kinds=kinds)


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
    layer = LAYER_TITLES[layer_of(entry)]
    if entry.kind == "log":
        return ErrorExplanation(meaning=log_verdict(entry), fix=(
            "Nothing to fix: a healthy run prints it." if entry.normal else "Read the lines around it in the "
            "same log: the error that matters is usually printed just before it."),
            rules=linked["rules"], cards=linked["cards"])
    where = f"in {entry.function} ({entry.path}:{entry.line} at {layer} {entry.commit})"
    if entry.kind == "assert":
        meaning = (f"{layer} checks that {entry.condition} {where} and stops with AssertionError when it is false."
                   if entry.condition else f"An assert {where} failed.")
    elif entry.condition:
        meaning = f"{layer} raises {entry.exception} {where} when this holds: {entry.condition}."
    else:
        meaning = f"{layer} raises {entry.exception} {where}."
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
                     f"{layer} saw; compare them with the condition above and the code at the cited line.")
    return ErrorExplanation(meaning=meaning, fix=" ".join(fixes), rules=linked["rules"], cards=linked["cards"])
