"""Dataset checking, by concern: the streaming reader that mirrors slime's loader (`scan`, with the entry
points check_path / check_stream; `lines` reads single lines exactly as slime does, `parallel` reads a large
file in parts, one process per core, into the same report), the row judge that applies the rules and keeps the numbers (`judge`), the
per-row and per-file rules (`rules`), the tokenizer step that renders and counts prompts with the model's own
tokenizer (`tokens`; transformers is imported only there, and only when a tokenizer is used), the report
models and their text rendering (`report`), and the frames and figures the data page charts (`charts`).

May import: the shared vocabulary (core.findings, core.pins, core.paths).
"""

from core.data.rules import RULES, DataKeys, Rule, check_extension, keys_from_launch

__all__ = ["RULES", "DataKeys", "Rule", "check_extension", "keys_from_launch"]
