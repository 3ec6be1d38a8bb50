"""Lazy public names for a capability's package root: `from core.monitor import find_runs` imports the module
that defines `find_runs` on first use, so importing a package root stays cheap (the command line's start-up
depends on it).

A root declares `_EXPORTS = {"name": "core.pkg.module"}` (or `"core.pkg.module:other_name"` where the public
name differs from the module's own) and sets `__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())`.
A public name never equals one of the package's submodules: importing that submodule would shadow it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_exports(package: str, exports: dict[str, str], namespace: dict[str, Any]
                 ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module-level `__getattr__` and `__dir__` of a package root whose `exports` load on first use."""

    def __getattr__(name: str) -> Any:
        target = exports.get(name)
        if target is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attr = target.partition(":")
        value = getattr(importlib.import_module(module), attr or name)
        namespace[name] = value  # later look-ups are plain attribute reads
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *exports})

    return __getattr__, __dir__
