"""Where the app's data lives: the one place that locates files under knowledge/ (cards, catalogs, tables).

knowledge/ at the repository root is where people edit the data. A wheel ships the same files as package
data inside the `core` package, at core/_knowledge/ (setup.py maps it), so an installed copy finds them
through `importlib.resources`; a checkout (an editable install, or the code run from the repository) finds
knowledge/ beside core/. Every module that reads a knowledge file asks `knowledge_path(...)`; nothing else
computes the location."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

SHIPPED_DIR = "_knowledge"  # the folder inside the installed `core` package that holds knowledge/


class ResourceError(RuntimeError):
    """The package was installed in a form whose data cannot be read as files (e.g. zipped)."""


def _knowledge_root() -> Path:
    package = files("core")
    if not isinstance(package, Path):  # pip always unpacks a wheel; a zipped copy is not supported
        raise ResourceError(f"slime-assistant's data cannot be read from {package}: install it with pip "
                            "(not as a zip file), or run it from a checkout of the repository")
    shipped = package / SHIPPED_DIR
    return shipped if shipped.is_dir() else package.parent / "knowledge"


_KNOWLEDGE_ROOT = _knowledge_root()


def knowledge_path(*parts: str) -> Path:
    """The path of a file or folder under knowledge/, e.g. `knowledge_path("catalog", "arguments.json")`."""
    return _KNOWLEDGE_ROOT.joinpath(*parts)
