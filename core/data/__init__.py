"""Dataset checking, by concern: the streaming reader that mirrors slime's loader (`scan`, with the entry
points check_path / check_stream), the row judge that applies the rules and keeps the numbers (`judge`), the
per-row and per-file rules (`rules`), the report models and their text rendering (`report`), and the frames
the data page charts (`charts`).

May import: the shared vocabulary (core.findings, core.pins, core.paths).
"""
