"""How the memory is kept on disk: JSON text only, never pickles, and what to do with what cannot be read.

- `JsonOnlyDisk` is the diskcache serializer of the memory: it stores text (kept inside the database, never in
  separate value files) and it never unpickles. A value it cannot read comes back as `Unreadable`, so a damaged
  value is one reportable failure and write access to the store is not code execution.
- `convert_row` turns one row of an older store (pickled dicts, value files) into JSON text, reading pickles with
  an unpickler that accepts only plain data (dicts, lists, strings, numbers) and never imports anything.
- `salvage_rows` reads what can still be read from a damaged database file, row by row, and names the keys it
  could not read when the key index survived.
"""

from __future__ import annotations

import io
import json
import pickle
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import diskcache
from diskcache.core import MODE_BINARY, MODE_PICKLE, MODE_RAW, MODE_TEXT, UNKNOWN

# Every value stays inside the database: a value file that is deleted or damaged cannot lose an answer.
INLINE_LIMIT = 2**40
UNREADABLE_KEY = "\0unreadable-key"
MAX_ROWID_SCAN = 1_000_000


@dataclass(frozen=True)
class Unreadable:
    """A stored value that could not be read, with the reason in words."""

    reason: str


class JsonOnlyDisk(diskcache.Disk):
    """diskcache serializer for the memory: string keys, text values, no pickle in either direction."""

    def put(self, key):
        if type(key) is not str:
            raise TypeError("the memory only uses text keys")
        return key, True

    def get(self, key, raw):
        return key if raw else UNREADABLE_KEY

    def store(self, value, read, key=UNKNOWN):
        if type(value) is str:
            return 0, MODE_RAW, None, value
        if type(value) is bytes:
            return 0, MODE_RAW, None, sqlite3.Binary(value)
        raise TypeError(f"the memory stores JSON text, not {type(value).__name__}")

    def fetch(self, mode, filename, value, read):
        if mode == MODE_RAW:
            return bytes(value) if type(value) is sqlite3.Binary else value
        if mode == MODE_PICKLE:
            return Unreadable("it is in the old pickled format and was not converted")
        try:
            data = (Path(self._directory) / filename).read_bytes()
        except OSError:
            return Unreadable("its value file is missing or cannot be read")
        if mode == MODE_TEXT:
            try:
                return data.decode("utf-8")
            except UnicodeDecodeError:
                return Unreadable("its value file is damaged (not text)")
        return data


class _PlainDataUnpickler(pickle.Unpickler):
    """Reads pickles of plain data only: any class or function reference is refused, nothing is imported."""

    def find_class(self, module: str, name: str):
        raise pickle.UnpicklingError(f"refused to load {module}.{name}")


def safe_unpickle(data: bytes) -> Any:
    return _PlainDataUnpickler(io.BytesIO(data)).load()


def convert_row(mode: int, filename: str | None, value: Any, directory: Path) -> str | None | Unreadable:
    """JSON text for one stored value of any older format; None for a stored None (a cleared setting)."""
    try:
        if mode == MODE_RAW:
            if isinstance(value, (bytes, memoryview)):
                return bytes(value).decode("utf-8")
            if isinstance(value, str):
                return value
            return json.dumps(value)
        if value is None and filename:
            data = (directory / filename).read_bytes()
        elif isinstance(value, (bytes, memoryview)):
            data = bytes(value)
        else:
            return Unreadable("its stored value is empty")
        if mode == MODE_TEXT:
            return data.decode("utf-8")
        if mode == MODE_BINARY:
            return data.decode("utf-8")
        if mode == MODE_PICKLE:
            obj = safe_unpickle(data)
            if obj is None:
                return None
            return obj if isinstance(obj, str) else json.dumps(obj, allow_nan=False)
    except FileNotFoundError:
        return Unreadable("its value file was deleted")
    except OSError:
        return Unreadable("its value file cannot be read")
    except UnicodeDecodeError:
        return Unreadable("it is not text")
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, IndexError, KeyError, AttributeError,
            OverflowError, MemoryError, RecursionError) as exc:
        return Unreadable(f"it is damaged ({type(exc).__name__})")
    return Unreadable(f"it has an unknown storage mode {mode}")


@dataclass
class Salvage:
    """What could be read from a damaged database: rows, the keys known lost, and unreadable rows."""

    rows: list[tuple[str, int, str | None, Any]]
    lost_keys: list[str]
    unreadable_rows: int


def salvage_rows(db_path: Path) -> Salvage:
    """Every row still readable in a damaged diskcache database (the file itself is only read)."""
    con = _open_read_only(db_path)
    if con is None:
        return Salvage([], [], 0)
    try:
        rows: list[tuple[str, int, str | None, Any]] = []
        unreadable = 0
        select = "SELECT key, raw, mode, filename, value FROM Cache"
        try:
            found = con.execute(select).fetchall()
            rows = [(k, m, f, v) for k, raw, m, f, v in found if raw and isinstance(k, str)]
        except sqlite3.DatabaseError:
            try:
                top = con.execute("SELECT max(rowid) FROM Cache").fetchone()[0] or 0
            except sqlite3.DatabaseError:
                top = MAX_ROWID_SCAN
            for rowid in range(1, min(int(top), MAX_ROWID_SCAN) + 1):
                try:
                    row = con.execute(select + " WHERE rowid = ?", (rowid,)).fetchone()
                except sqlite3.DatabaseError:
                    unreadable += 1
                    continue
                if row is not None and row[1] and isinstance(row[0], str):
                    rows.append((row[0], row[2], row[3], row[4]))
        known = _indexed_keys(con)
        read = {r[0] for r in rows}
        return Salvage(rows, sorted(k for k in known if k not in read), unreadable)
    finally:
        con.close()


def _open_read_only(db_path: Path) -> sqlite3.Connection | None:
    for suffix in ("?mode=ro", "?mode=ro&immutable=1"):
        try:
            con = sqlite3.connect(f"file:{db_path}{suffix}", uri=True)
            con.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
            return con
        except sqlite3.Error:
            continue
    return None


def _indexed_keys(con: sqlite3.Connection) -> set[str]:
    """The keys listed in diskcache's key index, which may survive damage to the table itself."""
    try:
        return {k for (k,) in con.execute("SELECT key FROM Cache INDEXED BY Cache_key_raw WHERE raw = 1")
                if isinstance(k, str)}
    except sqlite3.DatabaseError:
        return set()
