"""The search index saved as an image: a SQLite database in the app's cache folder, named by a hash of the
contents of the files the documents come from (data and code), read back by the next process instead of
building the index again. A damaged or foreign image is not used; a folder that cannot be written only costs
the next start-up its speed. Nothing is written beside the package (an installed wheel may be read-only).
"""

from __future__ import annotations

import hashlib
import os
import re
import sqlite3
import stat
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson

from core.knowledge.flags import REFERENCE_PATH
from core.knowledge.layers import LAYER_PATHS, LOG_MEANINGS_PATH
from core.knowledge.symptoms import SYMPTOM_WORDS_PATH
from core.knowledge.table_file import text_key, use_saved_yaml, yaml_as_json
from core.knowledge.tables import TABLE_PATHS
from core.knowledge.zh import ZH_TERMS_PATH
from core.resources import knowledge_path


def data_files(cards_dir: Path) -> list[Path]:
    """The files the documents are made of: the cards, the catalogs and the curated tables."""
    from core.model_scripts import MODEL_SCRIPTS_JSON

    try:
        cards = sorted(Path(cards_dir).glob("*.md"))
    except OSError:
        cards = []
    return [*cards, knowledge_path("catalog", "arguments.json"), *LAYER_PATHS, REFERENCE_PATH, MODEL_SCRIPTS_JSON,
            *TABLE_PATHS, LOG_MEANINGS_PATH]


def stamp(cards_dir: Path) -> tuple:
    """What the index depends on: the cards' names and times, and the data files' times."""
    parts: list[Any] = []
    for path in data_files(cards_dir):
        try:
            parts.append((path.name, path.stat().st_mtime_ns))
        except OSError:
            parts.append((path.name, 0))
    return tuple(parts)


INDEX_IMAGE_FORMAT = 5
MAX_IMAGE_BYTES = 64 * 2**20
IMAGE_DIR = "search-index"
# The code the documents are the output of (its files, relative to the package root): a change to any of
# them makes a saved image stale, as a change to the data does.
_DOC_CODE = ("core/knowledge", "core/launch/rules", "core/launch/catalog.py", "core/data/rules.py",
             "core/model_scripts.py")
_PACKAGE_ROOT = Path(__file__).resolve().parent.parent.parent


def image_key(data_files: list[Path]) -> str | None:
    """A hash of the contents of the data files and of every code file the documents come from, with the
    image format and SQLite's version; None when one cannot be read (no image is then used)."""
    digest = hashlib.blake2b(f"{INDEX_IMAGE_FORMAT} {sqlite3.sqlite_version}".encode(), digest_size=16)
    try:
        for path in [*data_files, *_code_files()]:
            data = path.read_bytes()
            digest.update(f"{path.name} {len(data)}\n".encode("utf-8", "surrogateescape"))
            digest.update(data)
    except OSError:
        return None
    return digest.hexdigest()


def _code_files() -> list[Path]:
    code: list[Path] = []
    for name in _DOC_CODE:
        path = _PACKAGE_ROOT / name
        code += sorted(path.glob("*.py")) if path.is_dir() else [path]
    return code


KEY_SETTLE_S = 2.0
_KEY_RE = re.compile(r"[0-9a-f]{32}")


def known_image_key(data_files: list[Path]) -> str | None:
    """`image_key`, remembered in the image folder under a hash of what the file system says of every file it
    reads (size, modification and change times, inode): while none of them changed, a process finds the key
    without reading the files again. The change time cannot be set back by a program, so an edited file always
    gets its contents hashed; a file changed in the last KEY_SETTLE_S seconds (a coarse clock could hide a
    second edit) is not remembered."""
    paths = [*data_files, *_code_files()]
    digest = hashlib.blake2b(f"{INDEX_IMAGE_FORMAT} {sqlite3.sqlite_version}".encode(), digest_size=16)
    newest = 0
    try:
        for path in paths:
            info = os.stat(path)
            digest.update(f"{path}\0{info.st_size}\0{info.st_mtime_ns}\0{info.st_ctime_ns}\0{info.st_ino}\n"
                          .encode("utf-8", "surrogateescape"))
            newest = max(newest, info.st_mtime_ns, info.st_ctime_ns)
    except (OSError, ValueError):
        return image_key(data_files)
    memo = image_dir() / f"key-{digest.hexdigest()}"
    from core.paths import NotRegularFile, read_regular

    try:
        known = read_regular(memo, 64).decode("ascii")
    except (NotRegularFile, OSError, ValueError):
        known = ""
    if _KEY_RE.fullmatch(known):
        return known
    key = image_key(data_files)
    if key is not None and time.time_ns() - newest > KEY_SETTLE_S * 1e9:
        _write_in_place(memo, key.encode("ascii"), "key-*")
    return key


def _write_in_place(where: Path, data: bytes, family: str, prefix: str = ".key-") -> None:
    """Write a file of the image folder (a temporary file renamed into place, so a reader never sees half of
    one) and prune its family (`_prune`); a folder that cannot be written is left as it is."""
    try:
        where.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=prefix, dir=where.parent)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, where)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        _prune(where, family)
    except OSError:
        pass


def image_dir() -> Path:
    """Where index images are kept: $SLIME_ASSISTANT_HOME, else $XDG_CACHE_HOME/slime-assistant, else
    ~/.cache/slime-assistant (the app's home, as the store's), in its `search-index` folder; never the package
    folder, which an installed wheel may not let us write."""
    home = os.environ.get("SLIME_ASSISTANT_HOME")
    base = Path(home).expanduser() if home else Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") \
        / "slime-assistant"
    return base / IMAGE_DIR


def _connect(image: bytes | Path) -> tuple[sqlite3.Connection, int] | None:
    """The image as a database, and its size in bytes: bytes are copied into memory; a saved file is opened in
    place, read-only (its pages are read as queries need them, not all at start-up), when it is a regular file
    of at most MAX_IMAGE_BYTES (never a FIFO or a device: nothing here waits on one)."""
    if isinstance(image, Path):
        try:
            info = os.stat(image)
        except (OSError, ValueError):
            return None
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_IMAGE_BYTES:
            return None
        try:  # immutable: an image is never changed in place, a newer one is renamed over it (`write_image`)
            db = sqlite3.connect(f"{Path(os.path.abspath(image)).as_uri()}?mode=ro&immutable=1", uri=True,
                                 check_same_thread=False)
            db.execute(f"PRAGMA mmap_size={MAX_IMAGE_BYTES}")
        except (sqlite3.Error, ValueError):
            return None
        return db, info.st_size
    db = sqlite3.connect(":memory:", check_same_thread=False)
    try:
        db.deserialize(image)
    except (sqlite3.Error, ValueError, OverflowError, MemoryError):
        db.close()
        return None
    return db, len(image)


def load_image(image: bytes | Path) -> tuple[sqlite3.Connection, list[tuple[str, str]], dict[str, str]] | None:
    """(the database, the (kind, id) of each shown row in rowid order, option -> flag) of an image (its bytes,
    or the file it was saved in); None when it is not one of ours (not SQLite, cut short, other tables, rowids
    that do not count 0, 1, 2, ..., kinds, ids or flags that are not text). The rest of a shown row is read
    when a query shows it (`ShownRows`)."""
    connected = _connect(image)
    if connected is None:
        return None
    db, size = connected
    try:
        pages, page_size = db.execute("PRAGMA page_count").fetchone()[0], db.execute("PRAGMA page_size").fetchone()[0]
        if pages * page_size != size:  # cut short (or longer than SQLite wrote it)
            raise ValueError("not a whole image")
        count, first, last = db.execute("SELECT count(*), min(rowid), max(rowid) FROM shown").fetchone()
        keys = orjson.loads(db.execute("SELECT value FROM start_up WHERE name = 'keys'").fetchone()[0])
        options = db.execute("SELECT count(*) FROM options").fetchone()[0]
        primaries = dict(db.execute("SELECT option, flag FROM primaries"))
        db.execute("SELECT rowid FROM docs WHERE docs MATCH 'slime' LIMIT 1").fetchall()
        db.execute("SELECT id, pieces, key_word, words FROM parts LIMIT 1").fetchall()
        yaml_data = dict(db.execute("SELECT key, data FROM yaml"))
    except (sqlite3.Error, ValueError, OverflowError, MemoryError, TypeError):
        db.close()
        return None
    if not isinstance(keys, list) or not keys or (first, last, len(keys)) != (0, count - 1, count) \
            or not all(isinstance(k, list) and len(k) == 2 and isinstance(k[0], str) and isinstance(k[1], str)
                       for k in keys) \
            or len(primaries) != options or not all(isinstance(o, str) and isinstance(f, str)
                                                     for o, f in primaries.items()):
        db.close()
        return None
    use_saved_yaml({k: v for k, v in yaml_data.items() if isinstance(k, bytes) and isinstance(v, bytes)})
    return db, [(kind, key) for kind, key in keys], primaries


class ShownRows(Sequence):
    """The shown fields of an image's documents, each row read when first asked for (a query shows ten); `keys`
    holds the (kind, id) of every row, read at start-up. Iterating reads them all."""

    def __init__(self, db: sqlite3.Connection, lock: Any, keys: list[tuple[str, str]],
                 make: Callable[..., Any]) -> None:
        self._db = db
        self._lock = lock  # the index's (re-entrant) lock: rows are read inside its queries
        self.keys = keys
        self._make = make
        self._rows: dict[int, Any] = {}

    def __len__(self) -> int:
        return len(self.keys)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[n] for n in range(*i.indices(len(self)))]
        n = range(len(self.keys))[i]  # an IndexError as a list's
        row = self._rows.get(n)
        if row is None:
            try:
                with self._lock:
                    fields = self._db.execute("SELECT kind, id, title, summary, source, text FROM shown "
                                              "WHERE rowid = ?", (n,)).fetchone()
            except sqlite3.Error:  # a damaged page: the row reads as empty text, never as an exception
                fields = None
            row = self._rows[n] = self._make(*_text_fields(fields, self.keys[n]))
        return row

    def __iter__(self) -> Iterator[Any]:
        if len(self._rows) < len(self.keys):
            try:
                with self._lock:
                    every = self._db.execute("SELECT rowid, kind, id, title, summary, source, text FROM shown "
                                             "ORDER BY rowid").fetchall()
            except sqlite3.Error:
                every = []  # a damaged page: each row is read (or read as empty text) on its own below
            for n, *fields in every:
                if isinstance(n, int) and 0 <= n < len(self.keys):
                    self._rows.setdefault(n, self._make(*_text_fields(fields, self.keys[n])))
        return iter([self[n] for n in range(len(self.keys))])


KEEP_OTHERS = 3  # images (and remembered keys) of other contents kept: two checkouts sharing a home do not evict
# each other's image at every start


def _prune(where: Path, family: str) -> None:
    """Remove the files of a family in the image folder beyond the KEEP_OTHERS newest besides `where`, those
    written in the last minute always kept (another process may be about to read one)."""
    others = sorted(((old.stat().st_mtime, old) for old in where.parent.glob(family) if old != where), reverse=True)
    for mtime, old in others[KEEP_OTHERS:]:
        if time.time() - mtime > 60:
            old.unlink(missing_ok=True)


def write_image(where: Path, image: bytes) -> None:
    """Save the image and remove the images of older contents but the KEEP_OTHERS newest. A home that cannot be
    written only costs the next start-up its speed."""
    _write_in_place(where, image, "index-*.sqlite", prefix=".index-")


# The YAML tables a query reads (curated tables, symptom words, Chinese words): their data is kept in the image
# so that no process parses them again (PyYAML's constructor is most of what the first query used to pay).
YAML_PATHS = (*TABLE_PATHS, SYMPTOM_WORDS_PATH, ZH_TERMS_PATH)


def save_start_up(db: sqlite3.Connection, docs: list[Any]) -> None:
    """What a process reads at start-up besides the search tables: the (kind, id) of every shown row in one
    value (`load_image`), and the YAML tables' data (`save_yaml`)."""
    db.execute("CREATE TABLE start_up(name TEXT PRIMARY KEY, value BLOB)")
    db.execute("INSERT INTO start_up VALUES ('keys', ?)", (orjson.dumps([[d.kind, d.id] for d in docs]),))
    save_yaml(db)


def save_yaml(db: sqlite3.Connection, paths: tuple[Path, ...] = YAML_PATHS) -> None:
    """Keep the plain data of the YAML files (`table_file.yaml_as_json`) in the image, under the hash of their
    text; a file that cannot be read or whose data JSON would change is left out (it is parsed as before)."""
    db.execute("CREATE TABLE yaml(key BLOB PRIMARY KEY, data BLOB)")
    rows = {}
    for path in paths:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        data = yaml_as_json(text)
        if data is not None:
            rows[text_key(text)] = data
    db.executemany("INSERT INTO yaml VALUES (?, ?)", sorted(rows.items()))


def save_parts(db: sqlite3.Connection, entries: list[Any], parts: list[Any]) -> None:
    """Keep what message matching prepares from each entry (`errors.entry_parts`) in the image, and the entries
    with the lookups matching reads, for a later process to match without loading them (`saved_messages`)."""
    from core.knowledge.saved_messages import save_messages

    save_messages(db, entries, parts)
    db.execute("CREATE TABLE parts(rowid INTEGER PRIMARY KEY, id TEXT, pieces TEXT, key_word TEXT, words TEXT)")
    db.executemany("INSERT INTO parts VALUES (?, ?, ?, ?, ?)", [
        (i, e.id, orjson.dumps(pieces).decode() if pieces is not None else None, key, " ".join(sorted(words)))
        for i, (e, (pieces, key, words)) in enumerate(zip(entries, parts, strict=True))])


def saved_parts(db: sqlite3.Connection, entries: list[Any]) -> list[Any] | None:
    """The parts the image kept, when they are those of these entries (same count, same ids in the same order,
    well-formed); None otherwise (matching then computes them)."""
    try:
        rows = db.execute("SELECT id, pieces, key_word, words FROM parts ORDER BY rowid").fetchall()
        if len(rows) != len(entries) or any(r[0] != e.id for r, e in zip(rows, entries, strict=True)):
            return None
        return [(tuple(orjson.loads(pieces)) if pieces is not None else None, key, frozenset(words.split()))
                for _, pieces, key, words in rows]
    except (sqlite3.Error, orjson.JSONDecodeError, TypeError, AttributeError):
        return None


def _text_fields(fields: Any, key: tuple[str, str]) -> tuple[str, ...]:
    """A shown row's fields as text: its kind and id as read at start-up, a value of a damaged row that is not
    text (or a row gone) as empty text, never another type."""
    fields = tuple(fields) if fields is not None else ()
    rest = [v if isinstance(v, str) else "" for v in fields[2:6]]
    return (*key, *rest, *[""] * (4 - len(rest)))
