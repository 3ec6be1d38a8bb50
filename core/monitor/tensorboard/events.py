"""Reading one TensorBoard event file into columnar scalars, with damage found, reported and read past.

An event file is a sequence of TFRecords: 8-byte little-endian length, masked CRC-32C of those 8 bytes,
the payload (a serialized `Event` proto), masked CRC-32C of the payload. slime writes one `Event` per
scalar through torch's SummaryWriter (slime/observability/tensorboard_utils.py:49-57@624b824a).

Two views come out of one pass:
- the *compatible* view stops where tbparse (through TensorBoard's Python record reader and
  EventAccumulator) stops: at the first record that is truncated or fails a checksum. It also applies the
  accumulator's purge rules, so that `events_to_tbparse_frame` can rebuild tbparse's DataFrame exactly.
- the *recovered* view keeps reading: a record whose payload fails its checksum is dropped alone (its
  length was intact, so the next record is where the length says); a damaged length is skipped by scanning
  forward to the next offset where both checksums hold, which is how the framing is found again.
Every skipped byte range is reported as a `Damage` with what it cost.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

import numpy as np

from core.monitor.scan import Damage, FileScan
from core.monitor.tensorboard.crc import crc_table, mask, masked_crc32c_many
from core.monitor.tensorboard.decode import decode_records
from core.paths import open_regular

HEADER = 12  # 8 length bytes + 4 CRC bytes
FOOTER = 4
MAX_RECORD = 256 * 1024 * 1024  # a scalar event is ~100 bytes; anything this large is not a record we read
RESYNC_CHUNK = 1 << 20


def _u32_le(buf: np.ndarray, positions: np.ndarray) -> np.ndarray:
    b = [buf[positions + i].astype(np.uint32) for i in range(4)]
    return b[0] | (b[1] << np.uint32(8)) | (b[2] << np.uint32(16)) | (b[3] << np.uint32(24))


def _frame(data: bytes, start: int, end: int) -> tuple[list[int], list[int], int]:
    """Walk the lengths from `start`, trusting them; stop where a record would run past `end`."""
    unpack = struct.Struct("<Q").unpack_from
    offsets: list[int] = []
    lengths: list[int] = []
    append_o = offsets.append
    append_l = lengths.append
    pos = start
    limit = end - HEADER
    while pos <= limit:
        (length,) = unpack(data, pos)
        stop = pos + HEADER + length + FOOTER
        if stop > end:
            break
        append_o(pos)
        append_l(length)
        pos = stop
    return offsets, lengths, pos


def _find_resync(data: bytes, buf: np.ndarray, start: int, end: int) -> int | None:
    """First offset >= start where a whole valid record begins (header and payload checksums hold)."""
    table = crc_table()
    pos = start
    while pos + HEADER <= end:
        stop = min(end - HEADER, pos + RESYNC_CHUNK)
        cand = np.arange(pos, stop + 1, dtype=np.int64)
        crc = np.full(len(cand), 0xFFFFFFFF, dtype=np.uint32)
        for j in range(8):
            crc = table[(crc ^ buf[cand + j]) & np.uint32(0xFF)] ^ (crc >> np.uint32(8))
        crc ^= np.uint32(0xFFFFFFFF)
        hits = cand[mask(crc) == _u32_le(buf, cand + 8)]
        for p in hits.tolist():
            (length,) = struct.unpack_from("<Q", data, p)
            if length > MAX_RECORD or p + HEADER + length + FOOTER > end:
                continue
            got = masked_crc32c_many(buf, np.array([p + HEADER]), np.array([length]))[0]
            (want,) = struct.unpack_from("<I", data, p + HEADER + length)
            if int(got) == want:
                return p
        pos = stop + 1
    return None


def scan_event_bytes(data: bytes, *, path: str = "", size: int | None = None, mtime_ns: int = 0,
                     start: int = 0, base: int = 0, on_progress=None) -> FileScan:
    """Read every record of an event file held in `data` (from byte `start`), in record order.

    `data` may be a window of the file that begins at file offset `base` (core.monitor.stream reads files
    that way): every offset reported (damage, `clean_end`) is a file offset."""

    n = len(data)
    scan = FileScan(path=path, size=n if size is None else size, mtime_ns=mtime_ns)
    buf = np.frombuffer(data, dtype=np.uint8)
    good_offsets: list[np.ndarray] = []
    good_lengths: list[np.ndarray] = []
    first_damage_at: int | None = None  # offset of the first damaged record (tbparse stops there)
    pos = start
    while pos < n:
        offsets, lengths, framed_to = _frame(data, pos, n)
        offs = np.asarray(offsets, dtype=np.int64)
        lens = np.asarray(lengths, dtype=np.int64)
        if len(offs):
            header_ok = masked_crc32c_many(buf, offs, np.full(len(offs), 8), use_c=False) == _u32_le(buf, offs + 8)
            bad_header = np.flatnonzero(~header_ok)
            cut = int(bad_header[0]) if len(bad_header) else len(offs)
            offs, lens = offs[:cut], lens[:cut]
            payload_ok = masked_crc32c_many(buf, offs + HEADER, lens) == _u32_le(buf, offs + HEADER + lens)
            for i in np.flatnonzero(~payload_ok).tolist():
                o = int(offs[i])
                length = int(lens[i])
                if first_damage_at is None:
                    first_damage_at = o
                scan.damage.append(Damage(kind="bad_payload_crc", offset=base + o, length=HEADER + length + FOOTER,
                                          message=f"record at byte {base + o} failed its payload checksum; dropped "
                                                  "that one record and read on"))
            good_offsets.append(offs[payload_ok])
            good_lengths.append(lens[payload_ok])
            if cut < len(offsets):
                pos = int(offsets[cut])
            else:
                pos = framed_to
        if on_progress is not None:
            on_progress(pos, n)
        if pos >= n:
            break
        # pos is where a record is damaged (bad length checksum) or the bytes left do not hold a record
        if first_damage_at is None:
            first_damage_at = pos
        resync = _find_resync(data, buf, pos + 1, n)
        if resync is None:
            left = n - pos
            scan.damage.append(Damage(
                kind="truncated", offset=base + pos, length=left,
                message=(f"the last {left} byte(s) from byte {base + pos} are not a whole record: the file ends "
                         "inside a record (a run still being written, or a copy cut short), or they are "
                         "damaged")))
            break
        scan.damage.append(Damage(
            kind="bad_length", offset=base + pos, length=resync - pos,
            message=(f"bytes {base + pos}-{base + resync - 1} ({resync - pos} bytes) do not frame valid records "
                     f"(a damaged length); reading resumed at byte {base + resync}")))
        pos = resync
    scan.clean_end = base + (pos if pos <= n else n)
    offs = np.concatenate(good_offsets) if good_offsets else np.zeros(0, np.int64)
    lens = np.concatenate(good_lengths) if good_lengths else np.zeros(0, np.int64)
    scan.records = len(offs)
    if scan.damage and not scan.records and scan.damage[0].offset == start == base == 0:
        scan.looks_like_events = False
        scan.damage = [Damage(kind="not_event_file", offset=0, length=n,
                              message=(f"no valid record in {n} bytes: this is not a TensorBoard event file "
                                       "(or it is damaged beyond reading)"))]

    decode_records(scan, data, buf, offs, lens, base=base, first_damage_at=first_damage_at,
                   on_progress=on_progress)
    return scan


def scan_event_file(path: str | Path, *, on_progress=None) -> FileScan:
    """Read one event file from disk (see `scan_event_bytes`)."""
    p = Path(path)
    with open_regular(p) as fh:  # regular files only, opened without blocking
        st = os.fstat(fh.fileno())
        data = fh.read()
    return scan_event_bytes(data, path=str(p), size=st.st_size, mtime_ns=st.st_mtime_ns, on_progress=on_progress)
