"""Dataset checking: the streaming reader that mirrors slime's loader (`scan`), the per-row and per-file
rules (`rules`), and the frames the data page charts (`charts`).

May import: the shared vocabulary (core.findings, core.pins, core.paths).
"""

from core.data.rules import RULES, DataKeys, Rule, check_extension, keys_from_launch

__all__ = ["RULES", "DataKeys", "Rule", "check_extension", "keys_from_launch"]
