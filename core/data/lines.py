"""Reading one line exactly as slime does: the lines the fast path in core/data/scan.py cannot vouch for
(a carriage return, a parse orjson refuses or could read differently, a line over the size cap) come here.

slime opens the file as UTF-8 text in universal-newline mode, strips each line and parses it with Python's
json (slime/utils/data.py:34-40); a decode error is printed and the line dropped. Each outcome is named by a
rule of core/data/rules.py and the parsed row goes through the judge's rules like any other.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Callable
from typing import Any

import orjson

from core.data.judge import _RowJudge
from core.data.rules import Problem, Verdict


class _LineReader(_RowJudge):
    """The exact reading of single lines; core/data/scan.py adds the streaming over a whole file."""

    at_file_start = True  # False for a reader of a later part of the file (core/data/parallel.py)

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
            where = ("The file starts" if lineno == 1 and self.at_file_start
                     else "This line starts (files joined together?)")
            self.emit(Problem("byte-order-mark", f"{where} with a UTF-8 byte order mark; json.loads rejects "
                                                 "it, so slime drops the line."), lineno)
        elif not terminated:
            self.emit(Problem("truncated-last-line", f"The last line has no newline and is not valid JSON "
                                                     f"({exc.msg} at {where})."), lineno)
        elif (self.at_file_start and lineno == self.summary.blank_lines + 1  # every line before was blank
              and stripped.startswith("[")):
            self.emit(Problem("json-array", "The file starts a JSON array ('['): this is a .json document, "
                                            "not JSON Lines. slime drops every line that is not one whole JSON "
                                            "value: the brackets and each element followed by a comma; an "
                                            "element on a line of its own without a comma (the last one) is "
                                            "kept."), lineno)
        else:
            self.emit(Problem("invalid-json", f"Not valid JSON: {exc.msg} at {where}.", exc.colno), lineno)


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
