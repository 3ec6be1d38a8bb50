"""Check a prompt-data file the way slime's loader reads it, streaming, and report every row it would drop
or crash on.

The reader mirrors slime/utils/data.py at the pinned commit: JSON Lines read as UTF-8 text, blank lines
skipped, each line parsed with Python's json (a decode error is printed and the line dropped), or parquet
read batch by batch. Lines are read in binary blocks with a per-line size cap, so memory stays flat however
big the file is. orjson parses the common case quickly; any line where orjson and Python's json could
disagree (NaN, duplicate keys, huge integers, odd bytes) is parsed again exactly as slime does, and slime's
behaviour decides the verdict (core/data/lines.py). The rules themselves live in core/data/rules.py; a large
file is read in parts, one process per core, into the same report (core/data/parallel.py).
"""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path
from typing import IO, Any

import orjson

from core.data.judge import SAMPLE_ROWS, ProgressFn
from core.data.lines import _LineReader, _LongLine
from core.data.parallel import PartReader, plan_parts, scan_in_parts
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
    CODE_BY_NAME,
    EMPTY_DATASET,
    LABEL_STATE_RULES,
    MISSING,
    DataKeys,
    LabelState,
    Problem,
    RowSliceError,
    Verdict,
    check_extension,
    check_label,
    check_magic,
    is_blank,
    label_state,
    plain_messages_chars,
    plain_metadata,
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


class _Checker(_LineReader):
    """One pass over one file: the reading. Public entry points are check_path and check_stream."""

    fast_path = True  # tests turn it off to compare the fast route with the validators

    # -- JSON Lines -----------------------------------------------------------------------------------
    def scan_jsonl(self, stream: IO[bytes], total: int | None, *, first_byte: int = 0,
                   whole_file: bool = True) -> None:
        """Read the stream in blocks, split lines on b'\\n', check each; lines over the cap are skipped.

        The rules decide every row; this loop only asks their cheap screens (core/data/rules.py) on the
        decoded row: an object without the tool key, a prompt that is a non-blank string (is_blank) or, with
        --apply-chat-template, a plain message list (plain_messages_chars), plain metadata
        (plain_metadata). Such a row is counted here; its label's LabelState decides whether it is simply
        used or carries the label finding (worded by check_label, counted as check_row would). A row any
        screen refuses goes to check_row and the full validators. Speed matters (issue 28), so the loop keeps
        its state in locals. For one part of a file (core/data/parallel.py), `first_byte` is where the part
        starts and `whole_file` False leaves the size check to the caller.
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
        template, tally, sliced = keys.apply_chat_template, self.tally, self.row_slice is not None
        given, missing = LabelState.GIVEN, LabelState.MISSING
        # Plain rows holding only the keys the screens looked at are counted without building a key tuple:
        # the prompt key, the label key unless it is missing, the metadata key when present. By whether the
        # label was read, sizes[metadata present] is the size of such a row (None: no row is taken as one)
        # and rows[metadata present] their count.
        read_keys, unread_keys = tuple(sorted({input_key, label_key} - {None})), (input_key,)
        known = metadata_key not in (input_key, label_key)
        read_sizes = (len(read_keys), len(read_keys) + 1) if known else (None, None)
        unread_sizes = (1, 2) if known else (None, None)
        read_rows, unread_rows = [0, 0], [0, 0]
        if not fast:
            input_key = _NO_SUCH_KEY  # every row goes to check_row
        text_lengths: list[int] = []
        chat_lengths: list[int] = []
        add_text_length, add_chat_length = text_lengths.append, chat_lengths.append
        other_labels: list[type] = []
        label_faults = dict.fromkeys(LabelState, 0)  # rows of this block whose only finding is their label's
        code_counts, findings, max_listed = self.code_counts, self.findings, self.max_listed
        count_keys = self._count_keys
        samples = summary.samples
        per_row_extras = sliced or len(samples) < SAMPLE_ROWS
        while True:
            try:
                block = stream.read(block_size)
            except OSError as exc:
                self.emit(Problem("read-error", f"Reading stopped after {first_byte + done} bytes: {exc}."), None)
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
                # The screens: check_row_is_object and check_tools decide any row that is not an object or
                # has the tool key; then the prompt's screen.
                if row.__class__ is not dict or tool_key in row:
                    check_row(row, lineno, line, None)
                    continue
                prompt = row.get(input_key)
                if prompt.__class__ is str:
                    if is_blank(prompt):
                        check_row(row, lineno, line, None)
                        continue
                    chars = len(prompt)
                    add_length = add_text_length
                else:
                    chars = plain_messages_chars(prompt) if template and prompt.__class__ is list else None
                    if chars is None:
                        check_row(row, lineno, line, None)
                        continue
                    add_length = add_chat_length
                metadata = row.get(metadata_key)
                if not plain_metadata(metadata):
                    check_row(row, lineno, line, None)
                    continue
                state = given
                if label_key is not None:
                    label = row.get(label_key, MISSING)
                    state = label_state(label)
                    if state is given:
                        if label.__class__ is not str:
                            other_labels.append(label.__class__)
                    elif per_row_extras:
                        label_row(row, lineno, line, add_length is add_chat_length, chars, state)
                        continue
                    else:  # counted here, its first rows listed, as check_row would
                        code = CODE_BY_NAME[LABEL_STATE_RULES[state]]
                        listed = code_counts.get(code, 0) + 1
                        code_counts[code] = listed
                        if listed <= max_listed:
                            findings.append(finding_for(check_label(row, keys), lineno))
                        label_faults[state] += 1
                # The row is used (or crashes on its missing label): its numbers are its length and its keys.
                add_length(chars)
                has_metadata = metadata is not None
                if state is missing:
                    if len(row) == unread_sizes[has_metadata]:
                        unread_rows[has_metadata] += 1
                    else:
                        count_keys(row)
                elif len(row) == read_sizes[has_metadata]:
                    read_rows[has_metadata] += 1
                else:
                    count_keys(row)
                if per_row_extras:  # (a label finding took the label_row route above)
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
                label_faults = dict.fromkeys(LabelState, 0)
            if tail:
                carry.append(tail)
                carry_len += len(tail)
                if carry_len > cap:
                    lineno += 1
                    long_line = _LongLine(lineno)
                    for part in carry:
                        long_line.feed(part)
                    carry, carry_len = [], 0
        for names, (without, with_metadata) in ((read_keys, read_rows), (unread_keys, unread_rows)):
            if with_metadata + without:  # in this order, as the reports have always listed them
                self._add_keys(names, with_metadata + without)
            if with_metadata:
                self._add_keys((metadata_key,), with_metadata)
        if long_line is not None:
            self.finish_long_line(long_line, terminated=False)
        elif carry:
            lineno += 1
            slow(b"".join(carry), lineno, False)
        summary.lines = lineno
        summary.bytes_read = done
        if whole_file:
            self.check_size(total)

    def check_size(self, total: int | None) -> None:
        """The file-changed rule: a file read to its end must be as big as it was when the check started."""
        read = self.summary.bytes_read
        if total is not None and read != total and self.summary.complete:
            self.emit(Problem("file-changed", f"The file was {total} bytes when the check started and "
                                              f"{read} bytes were read."), None)

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



# ---------------------------------------------------------------- entry points ----------------------------

def check_stream(stream: IO[bytes], name: str, keys: DataKeys | None = None, *, size: int | None = None,
                 row_slice: slice | None = None, max_line_bytes: int = MAX_LINE_BYTES,
                 max_listed: int = MAX_LISTED_PER_CODE, progress: ProgressFn | None = None,
                 tokenizer: LoadedTokenizer | None = None, lengths: LengthSettings | None = None,
                 tokenizer_problem: str | None = None, processes: int | None = None) -> DataReport:
    """Check an open binary stream (an upload, or a file opened by check_path) named `name`.

    A large regular file is read in parts by `processes` processes (default: one per core) where that gives
    the same report as one pass (core/data/parallel.py); `processes=1` reads it in one pass.

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
    planned = plan_parts(stream, size, processes) if _in_parts_ok(checker) else None
    if planned is not None and scan_in_parts(checker, lambda: _Checker(name, keys, row_slice=None,
                                                                       max_line_bytes=max_line_bytes,
                                                                       max_listed=max_listed, progress=None),
                                             _scan_part, *planned, progress):
        checker.check_size(size)
    else:
        checker.scan_jsonl(stream, size)
    return checker.finish(started)


def _in_parts_ok(checker: _Checker) -> bool:
    """Parts fold into one pass's report without a row slice and without a tokenizer (core/data/parallel.py)."""
    return checker.row_slice is None and checker.tokens is None


def _scan_part(checker: _Checker, reader: PartReader, first_byte: int, end: int | None) -> None:
    checker.scan_jsonl(reader, end, first_byte=first_byte, whole_file=False)


def check_path(path: str | os.PathLike[str], keys: DataKeys | None = None, *, name: str | None = None,
               max_line_bytes: int = MAX_LINE_BYTES, max_listed: int = MAX_LISTED_PER_CODE,
               progress: ProgressFn | None = None, tokenizer: LoadedTokenizer | None = None,
               lengths: LengthSettings | None = None, tokenizer_problem: str | None = None,
               processes: int | None = None) -> DataReport:
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
                            tokenizer=tokenizer, lengths=lengths, tokenizer_problem=tokenizer_problem,
                            processes=processes)


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
