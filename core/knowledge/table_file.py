"""Reading one curated table (known bugs, runtime messages, other frameworks' terms): a YAML mapping whose one
key holds the list of entries, each validated by its pydantic model, ids unique."""

from __future__ import annotations

from typing import TypeVar

import yaml
from pydantic import BaseModel

Entry = TypeVar("Entry", bound=BaseModel)

# libyaml's safe loader when PyYAML was built with it (ten times faster: `ask` builds its index from every
# card and table), else PyYAML's own; both read only plain data.
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def safe_yaml(text: str) -> object:
    """Plain data from YAML text, read by the safe loader above (it never builds Python objects); the same
    steps as PyYAML's own load function, with the safe loader fixed here rather than passed in."""
    loader = _SAFE_LOADER(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def parse_table(text: str, key: str, model: type[Entry], what: str, error: type[ValueError]) -> tuple[Entry, ...]:
    """The entries under `key`, in file order; `error` (its message naming `what`) when the text is not YAML,
    not a mapping with a `key` list, or repeats an id."""
    try:
        data = safe_yaml(text) or {}
    except yaml.YAMLError as exc:
        raise error(f"{what}: not valid YAML: {exc}") from exc
    rows = data.get(key) if isinstance(data, dict) else None
    if not isinstance(rows, list):
        raise error(f"{what}: expected a mapping with a '{key}' list")
    entries = tuple(model(**row) for row in rows)
    ids = [e.id for e in entries]
    if len(ids) != len(set(ids)):
        raise error(f"{what}: ids must be unique")
    return entries
