"""Dataset checking: the streaming reader that mirrors slime's loader (`scan`), the per-row and per-file
rules (`rules`), and the frames the data page charts (`charts`).

May import: the shared vocabulary (core.findings, core.pins, core.paths).
"""

from __future__ import annotations

import importlib
from typing import Any

# What other capabilities use, loaded on first use so that importing the package stays cheap.
_EXPORTS = {"RULES": "core.data.rules", "Rule": "core.data.rules"}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'core.data' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
