"""The messages of every layer, and what matching prepares from them, kept as tables of the search index's image
(core.knowledge.index_image), so that a process answers its first query without loading and preparing all of
them: a query reads only the messages its words, frames and key words lead to.

`SavedMessages` answers every question `match_error` asks of a prepared index (`errors._Prepared`), in the same
order, from the same entries: the same matches as the index the image was built from. A table that turns out
damaged while a query reads it raises `SavedMessagesBroken`; the search then prepares the messages from their
files instead (see `SearchIndex.match_messages`).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterable
from typing import Any

import orjson
from pydantic import ValidationError

from core.knowledge.errors import _TOKEN_RE, FUZZY_MIN_WORDS, EntryParts, ErrorEntry, _Prepared

_FIELDS = ("kind", "exception", "template", "condition", "function", "path", "line", "end_line", "commit", "normal")
_COLUMNS = ", ".join(f'"{f}"' for f in _FIELDS)  # quoted: `commit` is a word of SQL
_M_COLUMNS = ", ".join(f'm."{f}"' for f in _FIELDS)
_CHUNK = 500  # key words asked for in one statement


class SavedMessagesBroken(Exception):
    """A saved table could not be read (a damaged image): prepare the messages from their files instead."""


def save_messages(db: sqlite3.Connection, entries: list[ErrorEntry], parts: list[EntryParts]) -> None:
    """Write the entries with their parts (`errors.entry_parts`) and the lookups matching makes of them."""
    order: dict[str, int] = {}
    n = 0
    for e, part in zip(entries, parts, strict=True):
        if part[0] is not None:
            order[e.id] = n  # a template's place among the templates (the last of an id, as `_Prepared.order`)
            n += 1
    db.execute("CREATE TABLE messages(rowid INTEGER PRIMARY KEY, id TEXT, name TEXT, " + _COLUMNS
               + ", pieces TEXT, key_word TEXT, words TEXT, nwords INTEGER, tmpl_order INTEGER)")
    rows = []
    for i, (e, (pieces, key, words)) in enumerate(zip(entries, parts, strict=True)):
        rows.append((i, e.id, e.path.rsplit("/", 1)[-1], *(getattr(e, f) for f in _FIELDS),
                     orjson.dumps(pieces).decode() if pieces is not None else None, key, " ".join(sorted(words)),
                     len(words), order[e.id] if pieces is not None else None))
    db.executemany(f"INSERT INTO messages VALUES ({', '.join('?' * (len(_FIELDS) + 8))})", rows)
    db.execute("CREATE TABLE message_words(word TEXT, entry INTEGER)")
    db.executemany("INSERT INTO message_words VALUES (?, ?)", [
        (w, i) for i, (_, (_, _, words)) in enumerate(zip(entries, parts, strict=True))
        if len(words) >= FUZZY_MIN_WORDS for w in sorted(words)])
    for sql in ("CREATE INDEX messages_key ON messages(key_word) WHERE pieces IS NOT NULL",
                "CREATE INDEX messages_path ON messages(path, condition)", "CREATE INDEX messages_id ON messages(id)",
                "CREATE INDEX messages_name ON messages(name)", "CREATE INDEX message_words_word ON message_words(word)"):
        db.execute(sql)


class _Lookup(dict):
    """A mapping filled on first access of each key by `fetch` (None: no such key, remembered too), so that
    `get` and `[]` read as a dict's."""

    def __init__(self, fetch: Callable[[Any], Any]) -> None:
        super().__init__()
        self._fetch = fetch
        self._absent: set[Any] = set()

    def __missing__(self, key: Any) -> Any:
        value = None if key in self._absent else self._fetch(key)
        if value is None:
            self._absent.add(key)
            raise KeyError(key)
        self[key] = value
        return value

    def get(self, key: Any, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default


class SavedMessages(_Prepared):
    """A prepared index read from an image's tables on demand (see the module's docstring)."""

    def __init__(self, db: sqlite3.Connection, lock: threading.Lock) -> None:  # noqa: D107 - no _Prepared.__init__
        self._db = db
        self._lock = lock
        self._entries: dict[int, ErrorEntry] = {}
        self._parts: dict[int, tuple[str, ...]] = {}
        self._unkeyed: list[tuple[ErrorEntry, str, tuple[str, ...]]] | None = None
        self.by_path = _Lookup(lambda path: self._all("path = ?", (path,)) or None)
        self.by_id = _Lookup(lambda key: next(iter(self._all("id = ?", (key,), " LIMIT 1")), None))
        self.by_test = _Lookup(lambda key: self._all("path = ? AND condition = ? AND kind = 'assert'", key) or None)
        self.by_word = _Lookup(self._word_entries)
        self.words = _Lookup(self._words_of)
        self.by_name = _Lookup(self._paths_named)

    @staticmethod
    def usable(db: sqlite3.Connection) -> bool:
        """Whether the image holds the tables, one message row per saved part (`index_image.save_parts`)."""
        try:
            rows, last = db.execute("SELECT count(*), max(rowid) FROM messages").fetchone()
            parts = db.execute("SELECT count(*) FROM parts").fetchone()[0]
            db.execute("SELECT word, entry FROM message_words LIMIT 1").fetchall()
        except sqlite3.Error:
            return False
        return rows == parts and (last is None or last == rows - 1)

    def _query(self, sql: str, args: Iterable[Any] = ()) -> list[tuple]:
        with self._lock:
            try:
                return self._db.execute(sql, tuple(args)).fetchall()
            except sqlite3.Error as exc:
                raise SavedMessagesBroken(str(exc)) from exc

    def _rows(self, rows: list[tuple]) -> list[ErrorEntry]:
        """Entries of (rowid, fields..., pieces) rows, each made once (the same object on every lookup)."""
        out = []
        for row in rows:
            entry = self._entries.get(row[0])
            if entry is None:
                try:
                    entry = ErrorEntry(**dict(zip(_FIELDS, row[1:11], strict=True)))
                    if row[11] is not None:
                        self._parts[row[0]] = tuple(orjson.loads(row[11]))
                except (ValidationError, orjson.JSONDecodeError, TypeError) as exc:
                    raise SavedMessagesBroken(f"message {row[0]}: {exc.__class__.__name__}") from exc
                self._entries[row[0]] = entry
            out.append(entry)
        return out

    def _all(self, where: str, args: Iterable[Any], limit: str = "") -> list[ErrorEntry]:
        """The entries of the rows that fit, in index order."""
        return self._rows(self._query(f"SELECT rowid, {_COLUMNS}, pieces FROM messages WHERE {where} "
                                      f"ORDER BY rowid{limit}", args))

    def _templates(self, where: str, args: Iterable[Any]) -> list[tuple[int, tuple[ErrorEntry, str, tuple[str, ...]]]]:
        rows = self._query(f"SELECT rowid, {_COLUMNS}, pieces, key_word, tmpl_order FROM messages "
                           f"WHERE pieces IS NOT NULL AND {where} ORDER BY rowid", args)
        entries = self._rows([row[:12] for row in rows])
        return [(row[13], (e, e.id, self._parts[row[0]]), row[12]) for row, e in zip(rows, entries, strict=True)]

    def candidates(self, message: str) -> list[tuple[ErrorEntry, str, tuple[str, ...]]]:
        """As `_Prepared.candidates`: the unkeyed templates, then those keyed by the message's words (in the
        order of its set of words), sorted by their place among the templates."""
        if self._unkeyed is None:
            self._unkeyed = [(order, item) for order, item, _ in self._templates("key_word IS NULL", ())]
        found = list(self._unkeyed)
        tokens = list(set(_TOKEN_RE.findall(message)))
        by_key: dict[str, list[tuple[int, tuple[ErrorEntry, str, tuple[str, ...]]]]] = {}
        for start in range(0, len(tokens), _CHUNK):
            chunk = tokens[start:start + _CHUNK]
            for order, item, key in self._templates(f"key_word IN ({', '.join('?' * len(chunk))})", chunk):
                by_key.setdefault(key, []).append((order, item))
        for token in tokens:
            found += by_key.get(token, ())
        return [item for _, item in sorted(found, key=lambda pair: pair[0])]

    def _word_entries(self, word: str) -> list[ErrorEntry] | None:
        rows = self._query(f"SELECT m.rowid, {_M_COLUMNS}, m.pieces FROM message_words w "
                           "JOIN messages m ON m.rowid = w.entry WHERE w.word = ? ORDER BY w.entry", (word,))
        return self._rows(rows) or None

    def _words_of(self, key: str) -> frozenset[str] | None:
        rows = self._query("SELECT words FROM messages WHERE id = ? AND nwords >= ? ORDER BY rowid DESC LIMIT 1",
                           (key, FUZZY_MIN_WORDS))
        return frozenset(rows[0][0].split()) if rows else None

    def _paths_named(self, name: str) -> list[str] | None:
        rows = self._query("SELECT path FROM messages WHERE name = ? GROUP BY path ORDER BY min(rowid)", (name,))
        return [path for (path,) in rows] or None
