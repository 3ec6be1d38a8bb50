"""Check a prompt-data file the way slime's loader reads it, streaming, and report every row it would drop
or crash on.

The reader mirrors slime/utils/data.py at the pinned commit: JSON Lines read as UTF-8 text, blank lines
skipped, each line parsed with Python's json (a decode error is printed and the line dropped), or parquet
read batch by batch. Lines are read in binary blocks with a per-line size cap, so memory stays flat however
big the file is. orjson parses the common case quickly; any line where orjson and Python's json could
disagree (NaN, duplicate keys, huge integers, odd bytes) is parsed again exactly as slime does, and slime's
behaviour decides the verdict. The rules themselves live in core/data/rules.py.
"""

from __future__ import annotations

import codecs
import json
import os
import stat
import time
from collections import Counter, deque
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import orjson
from pydantic import BaseModel, Field

from core.data.rules import (
    CODE_BY_NAME,
    KNOWN_ROLES,
    MISSING,
    RULES,
    DataKeys,
    Problem,
    Verdict,
    check_extension,
    check_key_names,
    check_label,
    check_magic,
    check_metadata,
    check_multimodal,
    check_multimodal_config,
    check_prompt,
    check_row_count,
    check_row_is_object,
    check_tools,
    split_row_slice,
)
from core.findings import Finding, Severity, findings_json, render_text, sort_and_dedupe
from core.paths import NotRegularFile, open_regular

CARD = "data-formats"
MAX_LINE_BYTES = 8 * 1024 * 1024  # lines longer than this are reported, not parsed
BLOCK_BYTES = 64 * 1024
MAX_LISTED_PER_CODE = 20
SAMPLE_ROWS = 5
SAMPLE_CHARS = 600
MAX_KEY_SHAPES = 1000
MAX_KEYS = 200
PARQUET_BATCH_ROWS = 1024
JSON_FIELDS = ("code", "severity", "message", "line", "fix", "source")

ProgressFn = Callable[[float, str], None]


class CheckError(ValueError):
    """The file cannot be checked at all (missing, a directory, unreadable); the message says why."""


class HistogramBin(BaseModel):
    low: int
    high: int
    rows: int


class PromptLengths(BaseModel):
    """Prompt length in characters (a chat prompt counts its text contents)."""

    rows: int = 0
    min: int | None = None
    max: int | None = None
    mean: float | None = None
    histogram: list[HistogramBin] = Field(default_factory=list)


class SampleRow(BaseModel):
    line: int
    text: str


class DataSummary(BaseModel):
    """What the check found, in numbers. Rows are counted the way slime counts them."""

    name: str
    file_format: str  # "jsonl" or "parquet"
    bytes_total: int | None = None
    bytes_read: int = 0
    lines: int = 0
    blank_lines: int = 0
    # Every row is counted once: rows == rows_used + rows_skipped + rows_crash + rows_unchecked
    # + rows_outside_slice. A row is a non-blank line as slime splits them (a lone carriage return ends a
    # line too), whatever it holds, or a parquet row.
    rows: int = 0
    rows_used: int = 0
    rows_skipped: int = 0  # lines slime prints a decode error for and drops
    rows_crash: int = 0
    rows_unchecked: int = 0  # lines over the size cap
    rows_outside_slice: int = 0  # rows the `@[start:end]` row slice leaves out (or that slime never reaches)
    object_rows: int = 0  # rows read as JSON objects: the rows whose keys are counted
    rows_with_warnings: int = 0
    prompt_format: str = "none"  # "text", "chat", "mixed", "none"
    prompt_formats: dict[str, int] = Field(default_factory=dict)
    keys: dict[str, int] = Field(default_factory=dict)
    other_keys: int = 0
    label_types: dict[str, int] = Field(default_factory=dict)
    prompt_chars: PromptLengths = Field(default_factory=PromptLengths)
    samples: list[SampleRow] = Field(default_factory=list)
    crlf_lines: int = 0
    findings_by_code: dict[str, int] = Field(default_factory=dict)
    omitted_by_code: dict[str, int] = Field(default_factory=dict)
    max_listed_per_code: int = MAX_LISTED_PER_CODE
    flags_to_add: list[str] = Field(default_factory=list)
    settings: DataKeys = Field(default_factory=DataKeys)
    launch_flags: list[str] = Field(default_factory=list)
    row_slice: str | None = None
    max_line_bytes: int = MAX_LINE_BYTES
    complete: bool = True
    # Set when slime would stop at start-up whatever the rows hold (a name it refuses, a binary or non-UTF-8
    # file, no row at all): the message of the file-level finding that says why. The row counts then say
    # what each row would meet once that is fixed.
    stops_at_start: str | None = None
    stops_at_line: int | None = None  # the line slime stops at, when it is one line's fault
    would_fail: bool = False
    seconds: float = 0.0


class DataReport(BaseModel):
    findings: list[Finding]
    summary: DataSummary

    def to_json(self) -> dict[str, Any]:
        """The CLI's JSON: findings shaped as the launch checker's, then the summary."""
        return {"findings": findings_json(self.findings, JSON_FIELDS),
                "summary": self.summary.model_dump(mode="json")}


def finding_for(problem: Problem, line: int | None) -> Finding:
    rule = RULES[CODE_BY_NAME[problem.rule]]
    return Finding(code=rule.code, severity=rule.severity, message=problem.detail, line=line,
                   column=problem.column, fix=rule.fix, source=rule.source, card=CARD)


# ---------------------------------------------------------------- row tally (with slime's row slice) ------

USED_WITH_WARNINGS = "used-with-warnings"  # a tally entry: used, with warnings (counted in rows_used too)
Tallied = Verdict | str


class _RowTally:
    """Counts row verdicts, only for the rows slime's `path@[start:end]` slice selects.

    Negative bounds need the final row count; rows are held back in a window just long enough to decide.
    """

    def __init__(self, row_slice: slice | None) -> None:
        self.slice = row_slice
        self.counts: dict[Tallied, int] = dict.fromkeys([*Verdict, USED_WITH_WARNINGS], 0)
        self.rows = 0
        start = row_slice.start if row_slice else None
        stop = row_slice.stop if row_slice else None
        self.start, self.stop = start, stop
        self.window_size = max(-(start or 0), -(stop or 0), 0)
        self.window: deque[Tallied] = deque()
        self.outside = 0  # rows the slice leaves out

    def add(self, verdict: Tallied) -> None:
        index = self.rows
        self.rows += 1
        if self.slice is None:
            self.counts[verdict] += 1
            return
        if not self.window_size:
            if self._selected_early(index):
                self.counts[verdict] += 1
            else:
                self.outside += 1
            return
        self.window.append(verdict)
        if len(self.window) > self.window_size:
            oldest = self.window.popleft()
            if self._selected_early(index - self.window_size):
                self.counts[oldest] += 1
            else:
                self.outside += 1

    def _selected_early(self, index: int) -> bool:
        """For a row at least window_size rows from the end (a negative start excludes it; a negative
        stop includes it)."""
        start, stop = self.start, self.stop
        after_start = start is None or (start >= 0 and index >= start)
        before_stop = stop is None or stop < 0 or index < stop
        return after_start and before_stop

    def line_is_read(self) -> bool:
        """Does slime still read the next line? islice stops after the stop-th row (data.py:72)."""
        return self.stop is None or self.stop < 0 or self.rows < self.stop

    def finish(self) -> dict[Tallied, int]:
        if self.slice is not None and self.window:
            first = self.rows - len(self.window)
            lo, hi, _ = self.slice.indices(self.rows)
            for offset, verdict in enumerate(self.window):
                if lo <= first + offset < hi:
                    self.counts[verdict] += 1
                else:
                    self.outside += 1
            self.window.clear()
        return self.counts


# ---------------------------------------------------------------- the checker -----------------------------

class _Checker:
    """One pass over one file. Public entry points are check_path and check_stream."""

    fast_path = True  # tests turn it off to compare the fast route with the validators

    def __init__(self, name: str, keys: DataKeys, *, row_slice: slice | None, max_line_bytes: int,
                 max_listed: int, progress: ProgressFn | None) -> None:
        self.name = name
        self.keys = keys
        self.max_line_bytes = max_line_bytes
        self.max_listed = max_listed
        self.progress = progress
        self.findings: list[Finding] = []
        self.code_counts: dict[str, int] = {}
        self.tally = _RowTally(row_slice)
        self.row_slice = row_slice
        self.summary = DataSummary(name=name, file_format="jsonl", max_line_bytes=max_line_bytes,
                                   max_listed_per_code=max_listed, settings=keys,
                                   launch_flags=keys.launch_flags())
        self.lines_skipped = 0
        self.lines_skipped_unread = 0  # dropped lines after the slice's last row: slime never reads them
        self.records = 0  # every row, whatever its verdict (see DataSummary)
        self.object_rows = 0
        self.key_shapes: dict[tuple, int] = {}
        self.key_counts: dict[str, int] = {}
        self.label_types: dict[str, int] = {}
        self.formats: dict[str, int] = {}
        self.length_bins = [0] * 64
        self.length_min: int | None = None
        self.length_max = 0
        self.length_sum = 0
        self.length_rows = 0
        self.chat_without_template = 0
        self.chat_without_template_line: int | None = None
        self.first_crlf_line: int | None = None
        self.first_non_utf8: tuple[Problem, int] | None = None  # reported once, at the end
        self.non_utf8_lines = 0
        self.last_non_utf8_line = 0  # lines arrive in order, so counting distinct lines needs only the last

    # -- findings -----------------------------------------------------------------------------------
    def emit(self, problem: Problem, line: int | None) -> None:
        code = CODE_BY_NAME[problem.rule]
        count = self.code_counts.get(code, 0) + 1
        self.code_counts[code] = count
        if count <= self.max_listed:
            self.findings.append(finding_for(problem, line))

    def non_utf8(self, problem: Problem, line: int) -> None:
        """Bytes that are not UTF-8: slime's text-mode read stops the run there, so only the first such line
        is reported (with a count of the others), as the start-up stop."""
        if self.first_non_utf8 is None:
            self.first_non_utf8 = (problem, line)
        if line != self.last_non_utf8_line:
            self.non_utf8_lines += 1
            self.last_non_utf8_line = line

    def stop_at_start(self, problem: Problem, line: int | None, *, whole_file: bool = False) -> None:
        """Report a problem that stops slime at start-up whatever the rows hold; the first is the headline."""
        self.emit(problem, line)
        if self.summary.stops_at_start is None:
            self.summary.stops_at_start = problem.detail
            self.summary.stops_at_line = None if whole_file else line

    # -- rows -----------------------------------------------------------------------------------------
    def check_row(self, row: Any, line: int, raw: bytes | None, problems: list[Problem] | None) -> None:
        """Apply every row rule to one parsed row, record its verdict and its numbers."""
        keys = self.keys
        self.records += 1
        if row.__class__ is not dict:
            problem = check_row_is_object(row)
            self.emit(problem, line)
            for p in problems or ():
                self.emit(p, line)
            self.tally.add(Verdict.CRASH)
            return
        problems = problems or []
        self.object_rows += 1
        self._count_keys(row)
        fmt, chars, prompt_problems = check_prompt(row, keys)
        if prompt_problems:
            problems.extend(prompt_problems)
        self.formats[fmt] = self.formats.get(fmt, 0) + 1
        if fmt == "chat" or (fmt == "text" and keys.multimodal_keys is not None):
            if not keys.apply_chat_template:
                self.chat_without_template += 1
                if self.chat_without_template_line is None:
                    self.chat_without_template_line = line
                problems.append(_CHAT_WITHOUT_TEMPLATE)
        if fmt == "text" or fmt == "chat":
            self._count_length(chars)
        if keys.label_key is not None:
            label = row.get(keys.label_key, MISSING)
            type_name = "missing" if label is MISSING else _JSON_TYPE_NAMES.get(label.__class__, "other")
            self.label_types[type_name] = self.label_types.get(type_name, 0) + 1
            problem = check_label(row, keys)
            if problem:
                problems.append(problem)
        if keys.tool_key is not None and keys.tool_key in row:
            problems.extend(check_tools(row, keys))
        if keys.metadata_key in row:
            problem = check_metadata(row, keys)
            if problem:
                problems.append(problem)
        if keys.multimodal_keys:
            problems.extend(check_multimodal(row, keys))
        verdict = Verdict.USED
        warned = False
        if problems:
            for p in problems:
                rule = RULES[CODE_BY_NAME[p.rule]]
                if rule.verdict is Verdict.CRASH:
                    verdict = Verdict.CRASH
                elif rule.severity is not Severity.INFO:
                    warned = True
                if p is not _CHAT_WITHOUT_TEMPLATE:
                    self.emit(p, line)
        self.tally.add(USED_WITH_WARNINGS if warned and verdict is Verdict.USED else verdict)
        if verdict is Verdict.USED and len(self.summary.samples) < SAMPLE_ROWS:
            self._add_sample(row, line, raw)

    def _count_keys(self, row: dict) -> None:
        if len(row) <= 64:
            shape = tuple(row)
            count = self.key_shapes.get(shape)
            if count is not None:
                self.key_shapes[shape] = count + 1
                return
            if len(self.key_shapes) < MAX_KEY_SHAPES:
                self.key_shapes[shape] = 1
                return
        self._add_keys(row, 1)

    def _add_keys(self, names: Any, count: int) -> None:
        counts = self.key_counts
        for name in names:
            key = str(name)
            if key in counts:
                counts[key] += count
            elif len(counts) < MAX_KEYS:
                counts[key] = count
            else:
                self.summary.other_keys += count

    def _count_length(self, chars: int) -> None:
        self.length_bins[min(chars.bit_length(), 63)] += 1
        self.length_rows += 1
        self.length_sum += chars
        if chars > self.length_max:
            self.length_max = chars
        if self.length_min is None or chars < self.length_min:
            self.length_min = chars

    # -- JSON Lines -----------------------------------------------------------------------------------
    def scan_jsonl(self, stream: IO[bytes], total: int | None) -> None:
        """Read the stream in blocks, split lines on b'\\n', check each; lines over the cap are skipped.

        Speed matters here (the benchmark wants this within 2x of a bare orjson loop), so the loop keeps
        its state in locals and counts a row itself only when it is plainly fine: an object, no tool key,
        no media keys, a non-blank string prompt (or, with --apply-chat-template, messages with a known
        role and non-blank string content), a non-blank label when one is read, metadata absent or an
        object. Every other row goes to check_row, where the validators decide. tests/test_data_check.py
        checks that both routes give the same report.
        """
        summary = self.summary
        loads, dumps = orjson.loads, orjson.dumps
        parse_errors = (orjson.JSONDecodeError, orjson.JSONEncodeError)
        check_row, slow = self.check_row, self.slow_line
        cap = self.max_line_bytes
        block_size = min(BLOCK_BYTES, cap)  # so a line inside one block never passes the cap
        carry: list[bytes] = []
        carry_len = 0
        long_line: _LongLine | None = None
        lineno = done = next_report = 0
        keys = self.keys
        fast = self.fast_path and keys.multimodal_keys is None
        input_key, label_key, tool_key, metadata_key = (keys.input_key, keys.label_key, keys.tool_key,
                                                        keys.metadata_key)
        template, roles = keys.apply_chat_template, KNOWN_ROLES
        tally, sliced = self.tally, self.row_slice is not None
        # Rows holding exactly the prompt key, the label key (when read) and maybe metadata are counted
        # without building a key tuple: their keys are known. -1 turns that off.
        known_keys = len({input_key, label_key} - {None})
        known_keys_with_metadata = known_keys + 1
        if metadata_key in (input_key, label_key):
            known_keys = known_keys_with_metadata = -1
        if not fast:
            input_key = _NO_SUCH_KEY
        rows_known_keys = rows_known_keys_metadata = 0
        text_lengths: list[int] = []
        chat_lengths: list[int] = []
        add_text_length, add_chat_length = text_lengths.append, chat_lengths.append
        other_labels: list[type] = []
        count_keys = self._count_keys
        samples = summary.samples
        per_row_extras = sliced or len(samples) < SAMPLE_ROWS
        while True:
            try:
                block = stream.read(block_size)
            except OSError as exc:
                self.emit(Problem("read-error", f"Reading stopped after {done} bytes: {exc}."), None)
                summary.complete = False
                break
            if not block:
                break
            done += len(block)
            if self.progress is not None and done >= next_report:
                next_report = done + 8 * 1024 * 1024
                self.progress(min(done / total, 1.0) if total else 0.0, f"{done / 1e6:.0f} MB, {lineno} lines")
            if long_line is not None:
                cut = block.find(b"\n")
                if cut < 0:
                    long_line.feed(block)
                    continue
                long_line.feed(block[:cut])
                self.finish_long_line(long_line, terminated=True)
                long_line = None
                block = block[cut + 1:]
            lines = block.split(b"\n")
            tail = lines.pop()
            has_cr = b"\r" in block
            if carry and lines:
                carry.append(lines[0])
                first = lines[0] = b"".join(carry)
                carry, carry_len = [], 0
                has_cr = has_cr or b"\r" in first
                if len(first) > cap:  # only a line carried over blocks can pass the cap
                    lineno += 1
                    self.finish_long_line(_LongLine.of(lineno, first), terminated=True)
                    del lines[0]
            for line in lines:
                lineno += 1
                if has_cr and b"\r" in line:
                    slow(line, lineno, True)
                    continue
                try:
                    row = loads(line)
                    text = dumps(row)
                except parse_errors:  # blank lines land here too
                    slow(line, lineno, True)
                    continue
                # Could Python's json read this line differently, or hide a duplicate key? `text` is
                # orjson's compact re-serialisation: equal to the line, nothing to fear. Otherwise colons
                # outside strings count key/value pairs, so a duplicate key leaves the line with more
                # colons than `text`; an escaped colon (\u003a) in a string could hide that, so such lines
                # take the exact path. (Integers beyond 64 bits, which orjson turns into floats, change
                # no verdict and no number in the report; those beyond a float's range make orjson
                # fail and take the exact path.)
                if text != line and (line.count(b":") != text.count(b":")
                                     or (b"\\" in line and b"\\u003" in line)):
                    slow(line, lineno, True)
                    continue
                # Fast path: a row that is plainly fine under every rule is only counted; anything else
                # goes through check_row and the validators, which decide. (With the fast path off,
                # input_key is a key no row can have, so every row goes to check_row.)
                if row.__class__ is not dict or tool_key in row:
                    check_row(row, lineno, line, None)
                    continue
                prompt = row.get(input_key)
                if prompt.__class__ is str:
                    if not prompt or prompt.isspace():
                        check_row(row, lineno, line, None)
                        continue
                    add_length = add_text_length
                    chars = len(prompt)
                elif prompt.__class__ is list and template and prompt:
                    chars = 0
                    for message in prompt:
                        if message.__class__ is not dict or message.get("role") not in roles:
                            break
                        content = message.get("content")
                        if content.__class__ is not str or not content or content.isspace():
                            break
                        chars += len(content)
                    else:
                        message = None  # every message is plain
                    if message is not None:
                        check_row(row, lineno, line, None)
                        continue
                    add_length = add_chat_length
                else:
                    check_row(row, lineno, line, None)
                    continue
                metadata = row.get(metadata_key)
                if metadata is not None and metadata.__class__ is not dict:
                    check_row(row, lineno, line, None)
                    continue
                if label_key is not None:
                    label = row.get(label_key, MISSING)
                    if label.__class__ is str:
                        if not label or label.isspace():
                            check_row(row, lineno, line, None)
                            continue
                    elif label is None or label is MISSING:
                        check_row(row, lineno, line, None)
                        continue
                    else:
                        other_labels.append(label.__class__)
                # The row is used as is: its numbers are its length, and its keys (counted without a
                # key tuple when they are just the known ones).
                if metadata is None:
                    if len(row) == known_keys:
                        rows_known_keys += 1
                    else:
                        count_keys(row)
                elif len(row) == known_keys_with_metadata:
                    rows_known_keys_metadata += 1
                else:
                    count_keys(row)
                add_length(chars)
                if per_row_extras:
                    if sliced:
                        tally.add(Verdict.USED)
                    if len(samples) < SAMPLE_ROWS:
                        self._add_sample(row, lineno, line)
                    per_row_extras = sliced or len(samples) < SAMPLE_ROWS
            if text_lengths or chat_lengths:
                self._add_fast_rows(text_lengths, chat_lengths, other_labels)
                text_lengths.clear()
                chat_lengths.clear()
                other_labels.clear()
            if tail:
                carry.append(tail)
                carry_len += len(tail)
                if carry_len > cap:
                    lineno += 1
                    long_line = _LongLine(lineno)
                    for part in carry:
                        long_line.feed(part)
                    carry, carry_len = [], 0
        if rows_known_keys + rows_known_keys_metadata:
            self._add_keys(sorted({input_key, label_key} - {None}), rows_known_keys + rows_known_keys_metadata)
        if rows_known_keys_metadata:
            self._add_keys((metadata_key,), rows_known_keys_metadata)
        if long_line is not None:
            self.finish_long_line(long_line, terminated=False)
        elif carry:
            lineno += 1
            slow(b"".join(carry), lineno, False)
        summary.lines = lineno
        summary.bytes_read = done
        if total is not None and done != total and summary.complete:
            self.emit(Problem("file-changed", f"The file was {total} bytes when the check started and "
                                              f"{done} bytes were read."), None)

    def _add_fast_rows(self, text_lengths: list[int], chat_lengths: list[int], other_labels: list[type]) -> None:
        """Fold one block's plainly fine rows (counted by the fast path) into the checker's numbers."""
        rows = len(text_lengths) + len(chat_lengths)
        self.records += rows
        self.object_rows += rows
        if self.row_slice is None:
            self.tally.counts[Verdict.USED] += rows
            self.tally.rows += rows
        for name, lengths in (("text", text_lengths), ("chat", chat_lengths)):
            if not lengths:
                continue
            self.formats[name] = self.formats.get(name, 0) + len(lengths)
            self.length_rows += len(lengths)
            self.length_sum += sum(lengths)
            self.length_max = max(self.length_max, max(lengths))
            low = min(lengths)
            self.length_min = low if self.length_min is None else min(self.length_min, low)
            for bin_index, count in Counter(map(int.bit_length, lengths)).items():
                self.length_bins[bin_index] += count
        if self.keys.label_key is not None:
            others = Counter(other_labels)
            others[str] += rows - len(other_labels)
            for label_class, count in others.items():
                if count:
                    name = _JSON_TYPE_NAMES.get(label_class, "other")
                    self.label_types[name] = self.label_types.get(name, 0) + count

    def _add_sample(self, row: Any, line: int, raw: bytes | None) -> None:
        text = raw.decode("utf-8", "replace") if raw is not None else orjson.dumps(
            row, default=str, option=orjson.OPT_NON_STR_KEYS).decode("utf-8", "replace")
        if len(text) > SAMPLE_CHARS:
            text = text[:SAMPLE_CHARS] + f"... ({len(text) - SAMPLE_CHARS} more characters)"
        self.summary.samples.append(SampleRow(line=line, text=text))

    def finish_long_line(self, long_line: _LongLine, *, terminated: bool) -> None:
        self.records += 1
        self.tally.add(Verdict.UNCHECKED)
        size_mb = long_line.size / (1024 * 1024)
        cap_mb = self.max_line_bytes / (1024 * 1024)
        self.emit(Problem("line-too-long", f"This line is {size_mb:.1f} MiB, over the {cap_mb:g} MiB this "
                                           "checker parses; it was not checked."), long_line.lineno)
        if long_line.bad_utf8 is not None:
            self.non_utf8(Problem("non-utf8", f"Bytes that are not UTF-8 at byte {long_line.bad_utf8 + 1} of "
                                              "this line."), long_line.lineno)

    def slow_line(self, line: bytes, lineno: int, terminated: bool) -> None:
        """Parse one line exactly as slime does (decode, strip, json.loads) and say what slime does with it."""
        if line.endswith(b"\r"):
            line = line[:-1]
            self.summary.crlf_lines += 1
            if self.first_crlf_line is None:
                self.first_crlf_line = lineno
        pieces = line.split(b"\r") if b"\r" in line else [line]
        if len(pieces) > 1:
            self.emit(Problem("lone-cr", f"This line holds {len(pieces) - 1} lone carriage return(s); slime "
                                         f"reads it as {len(pieces)} lines."), lineno)
        for index, piece in enumerate(pieces):
            self._slow_piece(piece, lineno, terminated or index < len(pieces) - 1)

    def _slow_piece(self, piece: bytes, lineno: int, terminated: bool) -> None:
        try:
            text = piece.decode("utf-8")
        except UnicodeDecodeError as exc:
            if not terminated and exc.end == len(piece) and exc.reason == "unexpected end of data":
                detail = "The file stops in the middle of a UTF-8 character (a cut-short copy?)."
            else:
                detail = f"Byte 0x{piece[exc.start]:02x} at column {exc.start + 1} is not valid UTF-8 ({exc.reason})."
            self.non_utf8(Problem("non-utf8", detail, exc.start + 1), lineno)
            self.records += 1
            self.tally.add(Verdict.CRASH)
            return
        stripped = text.strip()
        if not stripped:
            self.summary.blank_lines += 1
            return
        duplicates: list[str] = []
        constants: list[str] = []
        try:
            row = json.loads(stripped, object_pairs_hook=_pairs_hook(duplicates),
                             parse_constant=_constant_hook(constants))
        except json.JSONDecodeError as exc:
            self._skipped(exc, stripped, text, lineno, terminated)
            return
        except RecursionError:
            self.emit(Problem("too-deep", "Python's json hit its recursion limit on this line."), lineno)
            self.records += 1
            self.tally.add(Verdict.CRASH)
            return
        except ValueError as exc:
            self.emit(Problem("int-too-long", f"Python's json refuses this line: {exc}."), lineno)
            self.records += 1
            self.tally.add(Verdict.CRASH)
            return
        problems = [Problem("duplicate-key", f"Key {name!r} appears more than once in one object; the last "
                                             "value wins.") for name in duplicates[:3]]
        if constants:
            problems.append(Problem("nan-literal", f"{', '.join(sorted(set(constants)))} in this line: Python's "
                                                   "json reads it as a float."))
        try:
            orjson.dumps(row)
        except orjson.JSONEncodeError as exc:
            if "surrogate" in str(exc):
                problems.append(Problem("lone-surrogate", "A \\ud800-\\udfff escape without its pair."))
        self.check_row(row, lineno, piece, problems)

    def _skipped(self, exc: json.JSONDecodeError, stripped: str, text: str, lineno: int,
                 terminated: bool) -> None:
        self.records += 1
        if self.tally.line_is_read():
            self.lines_skipped += 1
        else:
            self.lines_skipped_unread += 1
        where = f"column {exc.colno}" if exc.lineno == 1 else f"position {exc.pos}"
        if text.startswith("\ufeff"):
            where = "The file starts" if lineno == 1 else "This line starts (files joined together?)"
            self.emit(Problem("byte-order-mark", f"{where} with a UTF-8 byte order mark; json.loads rejects "
                                                 "it, so slime drops the line."), lineno)
        elif not terminated:
            self.emit(Problem("truncated-last-line", f"The last line has no newline and is not valid JSON "
                                                     f"({exc.msg} at {where})."), lineno)
        elif lineno == self.summary.blank_lines + 1 and stripped.startswith("["):
            self.emit(Problem("json-array", "The file starts a JSON array ('['): this is a .json document, "
                                            "not JSON Lines; slime would drop every line."), lineno)
        else:
            self.emit(Problem("invalid-json", f"Not valid JSON: {exc.msg} at {where}.", exc.colno), lineno)

    # -- parquet ------------------------------------------------------------------------------------
    def scan_parquet(self, source: Any) -> None:
        """Read parquet the way slime does (pyarrow ParquetFile, batch by batch, rows as dicts)."""
        self.summary.file_format = "parquet"
        try:
            import pyarrow.parquet as pq
        except ImportError:
            self.emit(Problem("parquet-unavailable", "pyarrow is not installed here, so this .parquet file "
                                                     "was not checked."), None)
            self.summary.complete = False
            return
        import pyarrow as pa

        native = None
        parquet = None
        try:
            native = arrow_native_file(source)
            parquet = pq.ParquetFile(native, pre_buffer=False)
            total = parquet.metadata.num_rows
            rowno = 0
            for batch in parquet.iter_batches(batch_size=PARQUET_BATCH_ROWS, use_threads=False):
                for row in batch.to_pylist():
                    rowno += 1
                    self.check_row(row, rowno, None, None)
                if self.progress is not None:
                    self.progress(min(rowno / total, 1.0) if total else 1.0, f"{rowno} of {total} rows")
            self.summary.lines = rowno
        except (OSError, ValueError, TypeError, pa.ArrowException) as exc:  # every pyarrow error
            self.stop_at_start(Problem("parquet-unreadable", f"pyarrow cannot read it: {exc}"), None)
        finally:
            for handle in (parquet, native):
                if handle is not None:
                    handle.close()


    # -- summary ----------------------------------------------------------------------------------------
    def finish(self, started: float) -> DataReport:
        summary = self.summary
        counts = self.tally.finish()
        summary.rows = self.records
        summary.rows_used = counts[Verdict.USED] + counts[USED_WITH_WARNINGS]
        summary.rows_with_warnings = counts[USED_WITH_WARNINGS]
        summary.rows_crash = counts[Verdict.CRASH]
        summary.rows_unchecked = counts[Verdict.UNCHECKED]
        summary.rows_skipped = self.lines_skipped
        summary.rows_outside_slice = self.tally.outside + self.lines_skipped_unread
        summary.object_rows = self.object_rows
        for shape, count in self.key_shapes.items():
            self._add_keys(shape, count)
        summary.keys = dict(sorted(self.key_counts.items(), key=lambda kv: (-kv[1], kv[0])))
        summary.label_types = dict(sorted(self.label_types.items(), key=lambda kv: (-kv[1], kv[0])))
        summary.prompt_formats = dict(sorted(self.formats.items(), key=lambda kv: (-kv[1], kv[0])))
        text, chat = self.formats.get("text", 0), self.formats.get("chat", 0)
        summary.prompt_format = "mixed" if text and chat else "text" if text else "chat" if chat else "none"
        summary.prompt_chars = self._lengths()
        if self.chat_without_template:
            what = ("message lists" if not self.keys.multimodal_keys
                    else "turned into message lists by --multimodal-keys")
            self.emit(Problem("chat-without-template",
                              f"{self.chat_without_template} row(s) have prompts that are {what} (first at line "
                              f"{self.chat_without_template_line}) but --apply-chat-template is not set; slime's "
                              "default rollout hands the list to tokenizer.encode, which fails. Only a custom "
                              "rollout that reads message lists can use them."), self.chat_without_template_line)
            summary.flags_to_add.append("--apply-chat-template")
        if summary.crlf_lines:
            self.emit(Problem("crlf", f"{summary.crlf_lines} line(s) end in CRLF (first at line "
                                      f"{self.first_crlf_line}); slime reads them correctly."), self.first_crlf_line)
        if self.first_non_utf8 is not None:
            problem, line = self.first_non_utf8
            others = self.non_utf8_lines - 1
            if others:
                problem = problem._replace(detail=f"{problem.detail} {others} later line(s) also hold bytes that "
                                                  "are not UTF-8; slime stops at this first one.")
            self.stop_at_start(problem, line)
        # Whole-file verdicts on the keys and the row count describe the dataset slime builds; with bytes
        # that stop its UTF-8 read, it builds none and never reads the rows after them, so they are left out.
        dataset_is_built = self.first_non_utf8 is None
        for problem, flag in check_key_names(summary.keys, self.object_rows, self.keys) if dataset_is_built else ():
            self.emit(problem, None)
            if flag and flag not in summary.flags_to_add:
                summary.flags_to_add.append(flag)
        for problem in check_multimodal_config(self.keys):
            self.emit(problem, None)
        if summary.complete and dataset_is_built:
            count_problem = check_row_count(summary.rows_used, summary.rows_crash)
            if count_problem and count_problem.rule == "no-rows":
                if summary.stops_at_start is None and summary.lines:  # else an earlier stop says it
                    self.stop_at_start(count_problem, None)
            elif count_problem:
                self.emit(count_problem, None)
        if self.row_slice is not None:
            shown = f"[{_bound(self.row_slice.start)}:{_bound(self.row_slice.stop)}]"
            summary.row_slice = shown
            self.emit(Problem("row-slice", f"slime reads only rows {shown} of the {self.tally.rows} rows: "
                                           f"{summary.rows_used + summary.rows_crash + summary.rows_unchecked} "
                                           f"row(s) counted in the summary, {summary.rows_outside_slice} "
                                           "left out."), None)
        summary.findings_by_code = dict(sorted(self.code_counts.items()))
        summary.omitted_by_code = {c: n - self.max_listed for c, n in sorted(self.code_counts.items())
                                   if n > self.max_listed}
        summary.would_fail = bool(summary.rows_skipped or summary.rows_crash or summary.stops_at_start
                                  or any(f.severity is Severity.ERROR and RULES[f.code].verdict in
                                         (Verdict.CRASH, Verdict.SKIPPED) and f.line is None
                                         for f in self.findings))
        summary.seconds = round(time.perf_counter() - started, 3)
        return DataReport(findings=sort_and_dedupe(self.findings), summary=summary)

    def _lengths(self) -> PromptLengths:
        if not self.length_rows:
            return PromptLengths()
        bins = [HistogramBin(low=0 if b == 0 else 1 << (b - 1), high=0 if b == 0 else (1 << b) - 1, rows=n)
                for b, n in enumerate(self.length_bins) if n]
        return PromptLengths(rows=self.length_rows, min=self.length_min, max=self.length_max,
                             mean=round(self.length_sum / self.length_rows, 1), histogram=bins)


_CHAT_WITHOUT_TEMPLATE = Problem("chat-without-template", "")
_NO_SUCH_KEY = object()  # a dict key no parsed row can have
_JSON_TYPE_NAMES = {str: "string", int: "number", float: "number", bool: "boolean", list: "list", dict: "object",
                    type(None): "null"}


class _LongLine:
    """A line over the size cap: counted and checked for UTF-8 as it streams past, never held in memory."""

    def __init__(self, lineno: int) -> None:
        self.lineno = lineno
        self.size = 0
        self.bad_utf8: int | None = None
        self._decoder = codecs.getincrementaldecoder("utf-8")()

    @classmethod
    def of(cls, lineno: int, first_chunk: bytes) -> _LongLine:
        long_line = cls(lineno)
        long_line.feed(first_chunk)
        return long_line

    def feed(self, chunk: bytes) -> None:
        if self.bad_utf8 is None:
            try:
                self._decoder.decode(chunk)
            except UnicodeDecodeError as exc:
                self.bad_utf8 = self.size + exc.start
        self.size += len(chunk)


def _pairs_hook(duplicates: list[str]) -> Callable[[list[tuple[str, Any]]], dict]:
    def hook(pairs: list[tuple[str, Any]]) -> dict:
        row = dict(pairs)
        if len(row) != len(pairs):
            seen: set[str] = set()
            for name, _ in pairs:
                if name in seen:
                    duplicates.append(name)
                seen.add(name)
        return row
    return hook


def _constant_hook(constants: list[str]) -> Callable[[str], float]:
    def hook(name: str) -> float:
        constants.append(name)
        return float(name.replace("Infinity", "inf"))
    return hook


def _bound(value: int | None) -> str:
    return "" if value is None else str(value)


# ---------------------------------------------------------------- entry points ----------------------------

def check_stream(stream: IO[bytes], name: str, keys: DataKeys | None = None, *, size: int | None = None,
                 row_slice: slice | None = None, max_line_bytes: int = MAX_LINE_BYTES,
                 max_listed: int = MAX_LISTED_PER_CODE, progress: ProgressFn | None = None) -> DataReport:
    """Check an open binary stream (an upload, or a file opened by check_path) named `name`."""
    started = time.perf_counter()
    keys = keys or DataKeys()
    checker = _Checker(name, keys, row_slice=row_slice, max_line_bytes=max_line_bytes, max_listed=max_listed,
                       progress=progress)
    checker.summary.bytes_total = size
    ext_problem = check_extension(name)
    if ext_problem:
        checker.stop_at_start(ext_problem, None)
    head = _peek(stream)
    if size == 0 or (size is None and not head):
        checker.stop_at_start(Problem("empty-file", "The file is empty (0 bytes)."), None)
        return checker.finish(started)
    is_parquet_name = split_row_slice(name)[0].endswith(".parquet")
    if is_parquet_name or head.startswith(b"PAR1"):
        if not is_parquet_name and not ext_problem:
            checker.stop_at_start(Problem("binary", "This is a parquet file under another name: slime would read "
                                                    "it as UTF-8 text and stop. Its rows were checked as parquet; "
                                                    "rename it to .parquet."), None)
        checker.scan_parquet(stream)
        return checker.finish(started)
    magic_problem = check_magic(head)
    if magic_problem:
        checker.stop_at_start(magic_problem, 1, whole_file=True)
        checker.summary.complete = False
        return checker.finish(started)
    checker.scan_jsonl(stream, size)
    return checker.finish(started)


def check_path(path: str | os.PathLike[str], keys: DataKeys | None = None, *, name: str | None = None,
               max_line_bytes: int = MAX_LINE_BYTES, max_listed: int = MAX_LISTED_PER_CODE,
               progress: ProgressFn | None = None) -> DataReport:
    """Check a file on this machine. A trailing `@[start:end]` is slime's row slice.

    `name` is the path as the user wrote it (slime checks the ending of that string, not of a link's
    target); it defaults to `path`. The caller decides whether the path may be read (the page passes it
    through core.paths first). Raises CheckError when the path is not a readable regular file.
    """
    real, row_slice = split_row_slice(str(path))
    target = Path(real)
    try:
        info = target.stat()
    except FileNotFoundError:
        raise CheckError(f"Nothing exists at {real}.") from None
    except OSError as exc:
        raise CheckError(f"{real} cannot be read: {exc.strerror or exc}.") from None
    except ValueError:
        raise CheckError("That path contains a NUL byte; no file has such a name.") from None
    if stat.S_ISDIR(info.st_mode):
        raise CheckError(f"{real} is a directory; give the data file inside it.")
    if not stat.S_ISREG(info.st_mode):
        raise CheckError(f"{real} is not a regular file (a device, pipe or socket); give a data file.")
    try:
        stream = open_regular(target)  # the one rule: regular files only, opened without blocking
    except NotRegularFile as exc:
        raise CheckError(f"{real} is {exc.strerror}.") from None
    except OSError as exc:
        raise CheckError(f"{real} cannot be opened: {exc.strerror or exc}.") from None
    with stream:
        return check_stream(stream, name or str(path), keys, size=info.st_size, row_slice=row_slice,
                            max_line_bytes=max_line_bytes, max_listed=max_listed, progress=progress)


def check_bytes(data: bytes, name: str, keys: DataKeys | None = None, **options: Any) -> DataReport:
    """Check content held in memory (tests, small uploads)."""
    import io

    return check_stream(io.BytesIO(data), name, keys, size=len(data), **options)


def _peek(stream: IO[bytes]) -> bytes:
    """The first bytes of the stream, leaving the stream where it was."""
    try:
        position = stream.tell()
        head = stream.read(4096)
        stream.seek(position)
        return head
    except (OSError, ValueError):
        return b""


def startup_headline(summary: DataSummary, *, with_name: bool = False) -> str:
    """'slime would stop at start-up[ on NAME][ at line N]: <why>.' (meaningful when summary.stops_at_start)."""
    where = (f" on {summary.name}" if with_name else "") + (
        f" at line {summary.stops_at_line}" if summary.stops_at_line else "")
    why = (summary.stops_at_start or "").rstrip()
    return f"slime would stop at start-up{where}: {why}" + ("" if why.endswith((".", "?", "!")) else ".")


def render_report_text(report: DataReport) -> str:
    """Plain-text reporter for the CLI: summary lines, then the findings, then what was left out."""
    s = report.summary
    counts = (f"use {s.rows_used}, skip {s.rows_skipped} line(s), crash on {s.rows_crash} row(s)"
              + (f", {s.rows_unchecked} not checked (over {s.max_line_bytes // (1024 * 1024)} MiB)"
                 if s.rows_unchecked else "")
              + (f", {s.rows_outside_slice} outside the row slice" if s.rows_outside_slice else ""))
    lines = [f"{s.name}: {s.file_format}, {s.lines} line(s), {s.rows} row(s)"]
    if s.stops_at_start:
        lines.append(f"  {startup_headline(s)}")
        if s.rows:
            lines.append(f"  row by row, slime would {counts}")
    else:
        lines.append(f"  slime would {counts}")
    lines.append(f"  prompts: {s.prompt_format} {s.prompt_formats}; labels: {s.label_types or 'no --label-key'}")
    if s.prompt_chars.rows:
        pc = s.prompt_chars
        lines.append(f"  prompt characters: min {pc.min}, mean {pc.mean}, max {pc.max}")
    if s.keys:
        lines.append("  keys: " + ", ".join(f"{k} ({n})" for k, n in list(s.keys.items())[:12]))
    if s.flags_to_add:
        lines.append("  flags to add: " + " ".join(s.flags_to_add))
    lines.append("")
    lines.append(render_text(report.findings) or "No findings.")
    for code, n in s.omitted_by_code.items():
        lines.append(f"... and {n} more {code} finding(s) not listed (cap {s.max_listed_per_code} per code)")
    lines.append("")
    lines.append("RESULT: " + ("slime would stop at start-up (exit 1)" if s.stops_at_start
                               else "slime would skip or crash on some rows (exit 1)" if s.would_fail
                               else "no row slime would skip or crash on" if s.complete
                               else "the check could not finish"))
    return "\n".join(lines)


def arrow_native_file(source: Any):
    """A pyarrow file that reads without Python: a damaged parquet file can then never abort the process.

    Handing pyarrow a Python file object makes its I/O threads call back into Python for every read; with
    its default pre-buffering, reads still in flight when an error ends the scan run into the interpreter's
    shutdown and the process dies with SIGABRT ("terminate called without an active exception"). So the
    file is reopened natively (through /proc/self/fd, the very file already opened and checked) or, where
    that is not possible (an in-memory upload), wrapped as a pyarrow buffer; pre-buffering is turned off by
    the caller too.
    """
    import pyarrow as pa

    try:
        fd = source.fileno()
    except (AttributeError, OSError, ValueError):
        fd = None
    if fd is not None and os.path.exists(f"/proc/self/fd/{fd}"):
        return pa.OSFile(f"/proc/self/fd/{fd}")
    getbuffer = getattr(source, "getbuffer", None)
    data = bytes(getbuffer()) if getbuffer is not None else source.read()
    return pa.BufferReader(data)
