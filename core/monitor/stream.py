"""Reading a log file in bounded windows, from any saved offset, with or without the cache.

Both sources go through here: a TensorBoard event file and a W&B run file are read in windows of WINDOW
bytes (a record longer than a window grows the window, up to the source's largest record), each window is
scanned by the source's own scanner and joined to what came before. So a large file costs one window of
memory plus its columns, never its whole size, and a file that has grown since it was last read costs only
its new bytes: reading starts at the offset the last scan ended (`clean_end`) after checking that the bytes
just before it are unchanged (a file that shrank or was replaced is read again from the start).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from core.monitor.cache import (
    TAIL_CHECK,
    digest,
    get_json,
    latest_key,
    load_blob,
    scan_key,
    set_json,
    store_blob,
)
from core.monitor.scan import Damage, FileScan
from core.paths import open_regular

WINDOW = 16 * 1024 * 1024


@dataclass(frozen=True)
class Format:
    """How one source's files are scanned: its scanner, its join, and its framing's alignment."""

    name: str  # "tensorboard" | "wandb"
    kind: type  # the scan class (FileScan or a subclass)
    scan: Callable[..., FileScan]  # (data, *, path, size, mtime_ns, start, base, prior, on_progress)
    merge: Callable[[FileScan, FileScan], FileScan]
    align: int = 1  # a window starts at a multiple of this (W&B: its 32 KiB block)
    max_window: int = 256 * 1024 * 1024
    # whether bytes that held nothing whole begin a record too long for the window (not damage)
    record_pending: Callable[[bytes, int], bool] = lambda data, start: True


def scan_stream(fh: BinaryIO, fmt: Format, *, path: str, size: int, mtime_ns: int, pos: int = 0,
                prior: FileScan | None = None, window: int | None = None, on_progress=None) -> FileScan:
    """The scan of bytes `pos`..`size` of an open file, joined to `prior` (the scan of the bytes before)."""
    acc = prior
    window = window or WINDOW
    width = window
    while acc is None or pos < size:
        base = pos - pos % fmt.align
        want = max(0, min(width, size - base))
        fh.seek(base)
        data = fh.read(want)
        final = base + len(data) >= size or len(data) < want

        def progress(done: int, n: int, base=base) -> None:
            if on_progress is not None:
                on_progress(min(size, base + done), max(size, 1))

        part = fmt.scan(data, path=path, size=size, mtime_ns=mtime_ns, start=pos - base, base=base, prior=acc,
                        on_progress=progress)
        stalled = part.clean_end <= pos and not final
        if stalled and width < fmt.max_window and fmt.record_pending(data, pos - base):
            width = min(width * 2, fmt.max_window)  # a record longer than the window
            continue
        rejected = acc is None and base == 0 and not part.looks_like_events  # not this source's file at all
        acc = part if acc is None else fmt.merge(acc, part)
        if final or rejected:
            break
        if stalled:  # nothing whole in the largest window: say so, and read on after it
            end = base + len(data)
            acc.damage = [d for d in acc.damage if not (d.kind == "truncated" and d.offset >= pos)]
            acc.damage.append(Damage(kind="too_large", offset=pos, length=end - pos, message=(
                f"bytes {pos}-{end - 1} hold no record of at most {fmt.max_window // 2**20} MiB (a record "
                "larger than any log record, or damage); skipped them and read on")))
            acc.clean_end = pos = end
        else:
            pos = part.clean_end
        width = window
    acc.size, acc.mtime_ns = size, mtime_ns
    return acc


def tail_digest(fh: BinaryIO, end: int) -> str:
    """Digest of the TAIL_CHECK bytes before `end`: they must be unchanged for a read to resume at `end`."""
    lo = max(0, end - TAIL_CHECK)
    fh.seek(lo)
    return digest(fh.read(end - lo))


def read_cached(path: str | Path, cache, fmt: Format, *, on_progress=None) -> tuple[FileScan, str]:
    """The scan of one file and how it was obtained: "cached", "appended" (only the new bytes read) or "read"."""
    p = Path(path)
    with open_regular(p) as fh:  # regular files only, opened without blocking
        st = os.fstat(fh.fileno())
        key = scan_key(p, st.st_size, st.st_mtime_ns)
        if cache is not None:
            hit = load_blob(cache, key, fmt.kind)
            if hit is not None:
                hit.path = str(p)
                return hit, "cached"
        how = "read"
        scan: FileScan | None = None
        if cache is not None:
            latest = get_json(cache, latest_key(p, fmt.name))
            if isinstance(latest, dict) and isinstance(latest.get("size"), int) and latest["size"] < st.st_size:
                old = load_blob(cache, str(latest.get("key", "")), fmt.kind)
                end = old.clean_end if old is not None else 0
                if old is not None and 0 < end <= st.st_size and tail_digest(fh, end) == latest.get("tail_digest"):
                    scan = scan_stream(fh, fmt, path=str(p), size=st.st_size, mtime_ns=st.st_mtime_ns, pos=end,
                                       prior=old, on_progress=on_progress)
                    how = "appended"
        if scan is None:
            scan = scan_stream(fh, fmt, path=str(p), size=st.st_size, mtime_ns=st.st_mtime_ns,
                               on_progress=on_progress)
        if cache is not None:
            store_blob(cache, key, scan)
            set_json(cache, latest_key(p, fmt.name), {"key": key, "size": st.st_size,
                                                      "tail_digest": tail_digest(fh, scan.clean_end)})
    return scan, how
