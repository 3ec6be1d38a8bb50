"""The search index saved as an image: a SQLite database in the app's cache folder, named by a hash of the
contents of the files the documents come from (data and code), read back by the next process instead of
building the index again. A damaged or foreign image is not used; a folder that cannot be written only costs
the next start-up its speed. Nothing is written beside the package (an installed wheel may be read-only).
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import tempfile
import time
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


INDEX_IMAGE_FORMAT = 4
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
    code: list[Path] = []
    for name in _DOC_CODE:
        path = _PACKAGE_ROOT / name
        code += sorted(path.glob("*.py")) if path.is_dir() else [path]
    try:
        for path in [*data_files, *code]:
            data = path.read_bytes()
            digest.update(f"{path.name} {len(data)}\n".encode("utf-8", "surrogateescape"))
            digest.update(data)
    except OSError:
        return None
    return digest.hexdigest()


def image_dir() -> Path:
    """Where index images are kept: $SLIME_ASSISTANT_HOME, else $XDG_CACHE_HOME/slime-assistant, else
    ~/.cache/slime-assistant (the app's home, as the store's), in its `search-index` folder; never the package
    folder, which an installed wheel may not let us write."""
    home = os.environ.get("SLIME_ASSISTANT_HOME")
    base = Path(home).expanduser() if home else Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") \
        / "slime-assistant"
    return base / IMAGE_DIR


def load_image(image: bytes) -> tuple[sqlite3.Connection, list[tuple[str, ...]], dict[str, str]] | None:
    """(the database, the shown rows without their rowid, option -> flag) of an image; None when it is not one
    of ours (not SQLite, cut short, other tables, values that are not text)."""
    db = sqlite3.connect(":memory:", check_same_thread=False)
    try:
        db.deserialize(image)
        rows = db.execute("SELECT rowid, kind, id, title, summary, source, text FROM shown ORDER BY rowid").fetchall()
        options = db.execute("SELECT count(*) FROM options").fetchone()[0]
        primaries = dict(db.execute("SELECT option, flag FROM primaries"))
        db.execute("SELECT rowid FROM docs WHERE docs MATCH 'slime' LIMIT 1").fetchall()
        db.execute("SELECT id, pieces, key_word, words FROM parts LIMIT 1").fetchall()
        yaml_data = dict(db.execute("SELECT key, data FROM yaml"))
    except (sqlite3.Error, ValueError, OverflowError, MemoryError):
        db.close()
        return None
    if not rows or any(row[0] != i or not all(isinstance(v, str) for v in row[1:]) for i, row in enumerate(rows)) \
            or len(primaries) != options or not all(isinstance(o, str) and isinstance(f, str)
                                                     for o, f in primaries.items()):
        db.close()
        return None
    use_saved_yaml({k: v for k, v in yaml_data.items() if isinstance(k, bytes) and isinstance(v, bytes)})
    return db, [row[1:] for row in rows], primaries


def read_image(where: Path) -> bytes | None:
    from core.paths import NotRegularFile, read_regular

    try:
        data = read_regular(where, MAX_IMAGE_BYTES + 1)
    except (NotRegularFile, OSError, ValueError):
        return None
    return data if len(data) <= MAX_IMAGE_BYTES else None


def write_image(where: Path, image: bytes) -> None:
    """Save the image (a temporary file renamed into place, so a reader never sees half of one) and remove the
    images of older contents. A home that cannot be written only costs the next start-up its speed."""
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


# The YAML tables a query reads (curated tables, symptom words, Chinese words): their data is kept in the image
# so that no process parses them again (PyYAML's constructor is most of what the first query used to pay).
YAML_PATHS = (*TABLE_PATHS, SYMPTOM_WORDS_PATH, ZH_TERMS_PATH)


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
