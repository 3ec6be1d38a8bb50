"""Bounded reading of text logs: regular files only, at most `MAX_FILE_BYTES` (the end of a longer file),
never past the size the file had when opened (a file that grows forever still ends), lines of at most
`MAX_LINE_BYTES`, and bytes that are not UTF-8 counted and skipped, never raised."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from core.paths import open_regular

MAX_FILE_BYTES = 128 * 1024 * 1024  # nvidia-smi -l 5 on 8 GPUs writes about 15 MB a day
MAX_LINE_BYTES = 64 * 1024
BUFFER = 1024 * 1024


@dataclass
class LineStats:
    """What the line reader left out, for the file's report."""

    size: int = 0
    start: int = 0  # the byte reading began at (past a cut line when the file's head was left out)
    end: int = 0  # just past the last whole line (ended by a newline): where a later read resumes
    lines: int = 0
    too_long: int = 0
    not_utf8: int = 0
    notes: list[str] = field(default_factory=list)

    def describe(self) -> list[str]:
        out = list(self.notes)
        if self.start:
            out.append(f"the file holds {self.size:,} bytes; only its last {self.size - self.start:,} were read "
                       f"(the newest samples), to keep reading bounded")
        if self.too_long:
            out.append(f"{self.too_long} line(s) longer than {MAX_LINE_BYTES // 1024} KiB were skipped")
        if self.not_utf8:
            out.append(f"{self.not_utf8} line(s) that are not UTF-8 text were skipped")
        return out


def iter_lines(path: str | Path, stats: LineStats, max_bytes: int = MAX_FILE_BYTES, *, resume: int = 0,
               keep_partial: bool = True):
    """The text lines of a file (without their line ends), within the bounds above, from byte `resume` (a
    previous read's `stats.end`). With `keep_partial` false, a last line without its newline (still being
    written) is left for the next read."""
    with open_regular(path) as fh:
        size = os.fstat(fh.fileno()).st_size
        stats.size = size
        start = max(resume, size - max_bytes)
        if start > resume:
            fh.seek(start - 1)
            if fh.read(1) != b"\n":  # begin at the next whole line
                skipped = 0
                while True:
                    block = fh.read(BUFFER)
                    if not block:
                        break
                    cut = block.find(b"\n")
                    if cut >= 0:
                        skipped += cut + 1
                        fh.seek(start + skipped)
                        break
                    skipped += len(block)
                start += skipped
        stats.start = start if start > resume else 0
        stats.end = start
        fh.seek(start)
        left = size - start
        pending = b""
        pending_too_long = False
        while left > 0:
            block = fh.read(min(BUFFER, left))
            if not block:
                break
            left -= len(block)
            pieces = block.split(b"\n")
            pieces[0] = pending + pieces[0]
            pending = pieces.pop()
            if len(pieces):
                stats.end = size - left - len(pending)
            for raw in pieces:
                if pending_too_long:
                    pending_too_long = False
                    stats.too_long += 1
                    continue
                line = _decode(raw, stats)
                if line is not None:
                    yield line
            if len(pending) > MAX_LINE_BYTES:
                pending = b""
                pending_too_long = True
        if not keep_partial:
            return
        if pending_too_long:
            stats.too_long += 1
        elif pending:
            line = _decode(pending, stats)
            if line is not None:
                yield line


def _decode(raw: bytes, stats: LineStats) -> str | None:
    stats.lines += 1
    if len(raw) > MAX_LINE_BYTES:
        stats.too_long += 1
        return None
    try:
        return raw.decode("utf-8").rstrip("\r")
    except UnicodeDecodeError:
        stats.not_utf8 += 1
        return None
