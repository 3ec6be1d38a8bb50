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
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import orjson

from core.data.judge import SAMPLE_ROWS, ProgressFn, _RowJudge
from core.data.report import (
    MAX_LINE_BYTES,
    MAX_LISTED_PER_CODE,
    CheckError,
    DataReport,
    DataSummary,
    PromptLengths,
    finding_for,
    render_report_text,
    startup_headline,
)
from core.data.rules import (
    EMPTY_DATASET,
    KNOWN_ROLES,
    MISSING,
    DataKeys,
    Problem,
    RowSliceError,
    Verdict,
    check_extension,
    check_label,
    check_magic,
    split_row_slice,
    strip_row_slice,
)
from core.data.tokens import LengthSettings, LoadedTokenizer, TokenCounter
from core.paths import NotRegularFile, no_such_file, open_regular

__all__ = ["MAX_LINE_BYTES", "MAX_LISTED_PER_CODE", "CheckError", "DataReport", "DataSummary", "PromptLengths",
           "check_bytes", "check_path", "check_stream", "render_report_text", "startup_headline"]

BLOCK_BYTES = 64 * 1024
PARQUET_BATCH_ROWS = 1024
_NO_SUCH_KEY = object()  # a dict key no parsed row can have
_LABEL_CODES = ("DATA006", "DATA007", "DATA007")  # label-missing; label-empty (null, blank)


class _Checker(_RowJudge):
    """One pass over one file: the reading. Public entry points are check_path and check_stream."""

    fast_path = True  # tests turn it off to compare the fast route with the validators

    # -- JSON Lines -----------------------------------------------------------------------------------
    def scan_jsonl(self, stream: IO[bytes], total: int | None) -> None:
        """Read the stream in blocks, split lines on b'\\n', check each; lines over the cap are skipped.

        Speed matters here (the benchmark wants this within 2x of a bare orjson loop), so the loop keeps
        its state in locals and counts a row itself only when it is plainly fine: an object, no tool key,
        no media keys, a non-blank string prompt (or, with --apply-chat-template, messages with a known
        role and non-blank string content), a non-blank label when one is read, metadata absent or an
        object. Every other row goes to check_row, where the validators decide. tests/data/test_data_check.py
        checks that both routes give the same report.
        """
        summary = self.summary
        loads, dumps = orjson.loads, orjson.dumps
        parse_errors = (orjson.JSONDecodeError, orjson.JSONEncodeError)
        check_row, slow, label_row = self.check_row, self.slow_line, self.label_problem_row
        cap = self.max_line_bytes
        block_size = min(BLOCK_BYTES, cap)  # so a line inside one block never passes the cap
        carry: list[bytes] = []
        carry_len = 0
        long_line: _LongLine | None = None
        lineno = done = next_report = 0
        keys = self.keys
        fast = self.fast_path and keys.multimodal_keys is None and self.tokens is None
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
        rows_without_label = [0, 0]  # rows holding only the prompt key (and the metadata key), no label
        text_lengths: list[int] = []
        chat_lengths: list[int] = []
        add_text_length, add_chat_length = text_lengths.append, chat_lengths.append
        other_labels: list[type] = []
        label_faults = [0, 0, 0]  # rows of this block whose only problem is a missing, null or blank label
        code_counts, findings, max_listed = self.code_counts, self.findings, self.max_listed
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
                fault = -1  # a label finding (0 missing, 1 null, 2 blank) that many rows may repeat
                if label_key is not None:
                    label = row.get(label_key, MISSING)
                    if label.__class__ is str:
                        if not label or label.isspace():
                            fault = 2
                    elif label is None:
                        fault = 1
                    elif label is MISSING:
                        fault = 0
                    else:
                        other_labels.append(label.__class__)
                    if fault >= 0:  # counted here, its first rows listed, as check_row would
                        if per_row_extras:
                            label_row(row, lineno, line, add_length is add_chat_length, chars, label)
                            continue
                        code = _LABEL_CODES[fault]
                        listed = code_counts.get(code, 0) + 1
                        code_counts[code] = listed
                        if listed <= max_listed:
                            findings.append(finding_for(check_label(row, keys), lineno))
                        label_faults[fault] += 1
                        if fault == 0:  # no label key: its keys are the prompt's (and metadata), or others
                            if len(row) == known_keys - 1 + (metadata is not None) and known_keys > 0:
                                rows_without_label[metadata is not None] += 1
                            else:
                                count_keys(row)
                            add_length(chars)
                            continue
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
                self._add_fast_rows(text_lengths, chat_lengths, other_labels, label_faults)
                text_lengths.clear()
                chat_lengths.clear()
                other_labels.clear()
                label_faults[:] = (0, 0, 0)
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
        if sum(rows_without_label):
            self._add_keys((input_key,), sum(rows_without_label))
        if rows_without_label[1]:
            self._add_keys((metadata_key,), rows_without_label[1])
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
                                            "not JSON Lines. slime drops every line that is not one whole JSON "
                                            "value: the brackets and each element followed by a comma; an "
                                            "element on a line of its own without a comma (the last one) is "
                                            "kept."), lineno)
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


# ---------------------------------------------------------------- entry points ----------------------------

def check_stream(stream: IO[bytes], name: str, keys: DataKeys | None = None, *, size: int | None = None,
                 row_slice: slice | None = None, max_line_bytes: int = MAX_LINE_BYTES,
                 max_listed: int = MAX_LISTED_PER_CODE, progress: ProgressFn | None = None,
                 tokenizer: LoadedTokenizer | None = None, lengths: LengthSettings | None = None,
                 tokenizer_problem: str | None = None) -> DataReport:
    """Check an open binary stream (an upload, or a file opened by check_path) named `name`.

    With `tokenizer` (core.data.tokens.load_tokenizer), prompts are also rendered and counted the way
    slime's Dataset does, under `lengths`; `tokenizer_problem` is why a requested tokenizer could not be
    loaded (reported as a finding; the row check still runs).
    """
    started = time.perf_counter()
    keys = keys or DataKeys()
    checker = _Checker(name, keys, row_slice=row_slice, max_line_bytes=max_line_bytes, max_listed=max_listed,
                       progress=progress)
    checker.summary.bytes_total = size
    if tokenizer is not None and keys.apply_chat_template and not tokenizer.info.chat_template:
        checker.stop_at_start(Problem("template-error", "The tokenizer has no chat template, and the run passes "
                                                        "--apply-chat-template: slime's apply_chat_template call "
                                                        "fails on the first row. Prompts were not rendered or "
                                                        "counted."), None, whole_file=True)
        tokenizer = None
    if tokenizer is not None:
        checker.tokens = TokenCounter(tokenizer, keys, lengths or LengthSettings())
        checker.tokens.tally = checker.tally
        checker.summary.launch_flags += (lengths or LengthSettings()).launch_flags()
    if tokenizer_problem:
        checker.emit(Problem("tokenizer-unusable", tokenizer_problem), None)
    ext_problem = check_extension(name)
    if ext_problem:
        checker.stop_at_start(ext_problem, None)
    head = _peek(stream)
    if size == 0 or (size is None and not head):
        checker.stop_at_start(Problem("empty-file", "The file is empty (0 bytes). " + EMPTY_DATASET), None)
        return checker.finish(started)
    is_parquet_name = strip_row_slice(name).endswith(".parquet")
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
               progress: ProgressFn | None = None, tokenizer: LoadedTokenizer | None = None,
               lengths: LengthSettings | None = None, tokenizer_problem: str | None = None) -> DataReport:
    """Check a file on this machine. A trailing `@[start:end]` is slime's row slice.

    `name` is the path as the user wrote it (slime checks the ending of that string, not of a link's
    target); it defaults to `path`. The caller decides whether the path may be read (the page passes it
    through core.paths first). Raises CheckError when the path is not a readable regular file.
    """
    try:
        real, row_slice = split_row_slice(str(path))
    except RowSliceError as exc:
        raise CheckError(str(exc)) from None
    target = Path(real)
    try:
        info = target.stat()
    except FileNotFoundError:
        raise CheckError(no_such_file(real) + ".") from None
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
                            max_line_bytes=max_line_bytes, max_listed=max_listed, progress=progress,
                            tokenizer=tokenizer, lengths=lengths, tokenizer_problem=tokenizer_problem)


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
