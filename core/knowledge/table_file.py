"""Reading one curated table (known bugs, runtime messages, other frameworks' terms): a YAML mapping whose one
key holds the list of entries, each validated by its pydantic model, ids unique."""

from __future__ import annotations

from typing import TypeVar

import yaml
from pydantic import BaseModel

from core.knowledge.cards import _safe_yaml

Entry = TypeVar("Entry", bound=BaseModel)


def parse_table(text: str, key: str, model: type[Entry], what: str, error: type[ValueError]) -> tuple[Entry, ...]:
    """The entries under `key`, in file order; `error` (its message naming `what`) when the text is not YAML,
    not a mapping with a `key` list, or repeats an id."""
    try:
        data = _safe_yaml(text) or {}  # libyaml's safe loader where present: the known-bugs table is large
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
