"""Reading one curated table (known bugs, runtime messages, other frameworks' terms): a YAML mapping whose one
key holds the list of entries, each validated by its pydantic model, ids unique."""

from __future__ import annotations

import hashlib
from typing import TypeVar

import orjson
from pydantic import BaseModel

Entry = TypeVar("Entry", bound=BaseModel)


def _safe_loader() -> type:
    """libyaml's safe loader when PyYAML was built with it (ten times faster: `ask` builds its index from every
    card and table), else PyYAML's own; both read only plain data. PyYAML is imported here, on the first text
    parsed: a process that reads its tables from an index image never loads it."""
    import yaml

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def yaml_error() -> type[Exception]:
    """PyYAML's error class, for an `except` clause (evaluated only when an exception is raised, by which time
    PyYAML is loaded)."""
    import yaml

    return yaml.YAMLError


# The plain data of YAML texts that a saved search index kept (core.knowledge.index_image), as JSON, by a hash
# of the text: such a text is not parsed again. The hash is of the text itself, so an edited file never gets
# the data of its old contents; JSON that does not decode is ignored and the text parsed.
_SAVED: dict[bytes, bytes] = {}


def text_key(text: str) -> bytes:
    """The hash a YAML text's saved data is kept under."""
    return hashlib.blake2b(text.encode("utf-8", "surrogateescape"), digest_size=16).digest()


def use_saved_yaml(saved: dict[bytes, bytes]) -> None:
    """Take the saved data of YAML texts (`text_key` -> `yaml_as_json`) read back from an index image."""
    _SAVED.update(saved)


def yaml_as_json(text: str) -> bytes | None:
    """The plain data of a YAML text as JSON, when JSON gives back exactly the same data (no dates, no keys
    that are not text, no numbers JSON changes); None otherwise, or when the text is not valid YAML."""
    try:
        data = _parse_yaml(text)
        encoded = orjson.dumps(data)
    except (yaml_error(), TypeError, orjson.JSONEncodeError):
        return None
    return encoded if orjson.loads(encoded) == data and orjson.dumps(orjson.loads(encoded)) == encoded else None


def safe_yaml(text: str) -> object:
    """Plain data from YAML text, read by the safe loader above (it never builds Python objects); the same
    steps as PyYAML's own load function, with the safe loader fixed here rather than passed in. A text whose
    data an index image kept (`use_saved_yaml`) is read from that JSON instead, with the same result."""
    saved = _SAVED.get(text_key(text)) if _SAVED else None
    if saved is not None:
        try:
            return orjson.loads(saved)
        except orjson.JSONDecodeError:
            pass
    return _parse_yaml(text)


def _parse_yaml(text: str) -> object:
    loader = _safe_loader()(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def parse_table(text: str, key: str, model: type[Entry], what: str, error: type[ValueError]) -> tuple[Entry, ...]:
    """The entries under `key`, in file order; `error` (its message naming `what`) when the text is not YAML,
    not a mapping with a `key` list, or repeats an id."""
    try:
        data = safe_yaml(text) or {}
    except yaml_error() as exc:
        raise error(f"{what}: not valid YAML: {exc}") from exc
    rows = data.get(key) if isinstance(data, dict) else None
    if not isinstance(rows, list):
        raise error(f"{what}: expected a mapping with a '{key}' list")
    entries = tuple(model(**row) for row in rows)
    ids = [e.id for e in entries]
    if len(ids) != len(set(ids)):
        raise error(f"{what}: ids must be unique")
    return entries
