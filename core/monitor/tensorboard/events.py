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

from core.monitor.scan import KIND_START, KIND_SUMMARY, Damage, FileScan
from core.monitor.tensorboard.crc import crc_table, mask, masked_crc32c_many
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
    from tensorboard.compat.proto import event_pb2

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

    tag_index: dict[str, int] = {}
    tags: list[str] = []
    steps: list[int] = []
    tag_ids: list[int] = []
    values: list[float] = []
    walls: list[float] = []
    ev_steps = np.zeros(len(offs), np.int64)
    ev_kinds = np.zeros(len(offs), np.int8)
    ev_first = np.zeros(len(offs), np.int64)
    ev_counts = np.zeros(len(offs), np.int32)
    from_string = event_pb2.Event.FromString
    start_status = event_pb2.SessionLog.START
    compat_limit = first_damage_at if first_damage_at is not None else n + 1
    compat_events = 0
    compat_scalars = 0
    bad_proto = 0
    kept = 0
    non_scalar = 0
    total = len(offs)
    report_every = max(1, total // 20)
    for idx, (o, length) in enumerate(zip(offs.tolist(), lens.tolist(), strict=True)):
        try:
            event = from_string(data[o + HEADER:o + HEADER + length])
        except Exception:  # noqa: BLE001 - protobuf raises DecodeError (and others on garbage)
            bad_proto += 1
            if o < compat_limit:
                scan.tbparse_would_raise = True
                compat_limit = o
            scan.damage.append(Damage(kind="bad_proto", offset=base + o, length=HEADER + length + FOOTER,
                                      message=f"record at byte {base + o} has valid checksums but is not an Event; "
                                              "dropped it"))
            continue
        if o < compat_limit:
            compat_events = kept + 1
        what = event.WhichOneof("what")
        first = len(steps)
        ev_steps[kept] = event.step
        ev_first[kept] = first
        if what == "summary":
            ev_kinds[kept] = KIND_SUMMARY
            step = event.step
            wall = event.wall_time
            for value in event.summary.value:
                if value.WhichOneof("value") == "simple_value":
                    tag = value.tag
                    tid = tag_index.get(tag)
                    if tid is None:
                        tid = tag_index[tag] = len(tags)
                        tags.append(tag)
                    steps.append(step)
                    tag_ids.append(tid)
                    values.append(value.simple_value)
                    walls.append(wall)
                else:
                    non_scalar += 1
        elif what == "file_version":
            if scan.file_version_text is None:
                scan.file_version_text = event.file_version
            scan.file_version = _parse_file_version(event.file_version)
        elif what == "session_log" and event.session_log.status == start_status:
            ev_kinds[kept] = KIND_START
        ev_counts[kept] = len(steps) - first
        if o < compat_limit:
            compat_scalars = len(steps)
        kept += 1
        if on_progress is not None and idx % report_every == 0:
            on_progress(scan.clean_end - base, n)
    scan.tags = tags
    scan.steps = np.asarray(steps, dtype=np.int64)
    scan.tag_ids = np.asarray(tag_ids, dtype=np.int32)
    scan.values = np.asarray(values, dtype=np.float64)
    scan.wall_times = np.asarray(walls, dtype=np.float64)
    scan.event_steps = ev_steps[:kept]
    scan.event_kinds = ev_kinds[:kept]
    scan.event_first = ev_first[:kept]
    scan.event_counts = ev_counts[:kept]
    scan.compat_events = compat_events
    scan.compat_scalars = compat_scalars
    scan.non_scalar_values = non_scalar
    if kept and scan.file_version_text is None:
        scan.looks_like_events = scan.looks_like_events and bool(len(steps))
    if bad_proto and not kept:
        scan.looks_like_events = False
    return scan


def _parse_file_version(text: str) -> float:
    """The number after 'brain.Event:' (TensorBoard's rule), or -1 when it is not in that form."""
    prefix = "brain.Event:"
    if not text.startswith(prefix):
        return -1.0
    try:
        return float(text[len(prefix):])
    except ValueError:
        return -1.0


def scan_event_file(path: str | Path, *, on_progress=None) -> FileScan:
    """Read one event file from disk (see `scan_event_bytes`)."""
    p = Path(path)
    with open_regular(p) as fh:  # regular files only, opened without blocking
        st = os.fstat(fh.fileno())
        data = fh.read()
    return scan_event_bytes(data, path=str(p), size=st.st_size, mtime_ns=st.st_mtime_ns, on_progress=on_progress)
