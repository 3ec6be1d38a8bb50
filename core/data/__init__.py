"""Dataset checking, by concern: the streaming reader that mirrors slime's loader (`scan`, with the entry
points check_path / check_stream; `lines` reads single lines exactly as slime does, `parallel` reads a large
file in parts, one process per core, into the same report), the row judge that applies the rules and keeps the numbers (`judge`), the
per-row and per-file rules (`rules`), the tokenizer step that renders and counts prompts with the model's own
tokenizer (`tokens`; transformers is imported only there, and only when a tokenizer is used), the report
models and their text rendering (`report`), and the frames and figures the data page charts (`charts`).

May import: the shared vocabulary (core.findings, core.pins, core.paths).

The names below are the package's public face for the front-ends; they load on first use (the tokenizer
and the charts' pandas only when asked for).
"""

from __future__ import annotations

from core.exports import lazy_exports

_EXPORTS = {
    "counts_frame": "core.data.charts",
    "keys_frame": "core.data.charts",
    "prompt_length_figure": "core.data.charts",
    "token_length_figure": "core.data.charts",
    "failure_sentence": "core.data.report",
    "status_summary": "core.data.report",
    "DataKeys": "core.data.rules",
    "RULES": "core.data.rules",
    "RowSliceError": "core.data.rules",
    "Rule": "core.data.rules",
    "check_extension": "core.data.rules",
    "keys_from_launch": "core.data.rules",
    "settings_errors": "core.data.rules",
    "split_row_slice": "core.data.rules",
    "CheckError": "core.data.scan",
    "DataReport": "core.data.scan",
    "MAX_LINE_BYTES": "core.data.scan",
    "MAX_LISTED_PER_CODE": "core.data.scan",
    "check_path": "core.data.scan",
    "check_stream": "core.data.scan",
    "render_report_text": "core.data.scan",
    "startup_headline": "core.data.scan",
    "LengthSettings": "core.data.tokens",
    "LoadedTokenizer": "core.data.tokens",
    "TemplateLimits": "core.data.tokens",
    "TokenizerUnusable": "core.data.tokens",
    "UPLOAD_NAMES": "core.data.tokens",
    "load_tokenizer": "core.data.tokens",
    "tokenizer_from_files": "core.data.tokens",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
