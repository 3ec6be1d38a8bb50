"""Where the app's data lives: the one place that locates files under knowledge/ (cards, catalogs, tables).

Every module that reads a knowledge file asks `knowledge_path(...)`; nothing else computes the location."""

from __future__ import annotations

from pathlib import Path

_KNOWLEDGE_ROOT = Path(__file__).resolve().parent.parent / "knowledge"


def knowledge_path(*parts: str) -> Path:
    """The path of a file or folder under knowledge/, e.g. `knowledge_path("catalog", "arguments.json")`."""
    return _KNOWLEDGE_ROOT.joinpath(*parts)
