"""Turning an event file's records into columns: a vectorized path for slime's scalar events, protobuf for the rest.

slime logs one scalar per `Event` through torch's SummaryWriter (slime/observability/tensorboard_utils.py:49-57@624b824a),
and tensorboardX writes the same shape: wall_time (field 1, 8 bytes), step (field 2, a varint, left out at
step 0), then a summary (field 5) of one value: its tag (field 1) and its simple_value (field 2, 4 bytes).
Records of exactly that shape, with lengths that agree to the byte, are decoded for the whole file at once
with numpy; their tags are grouped by length and compared byte for byte. Every other record (the
file_version record, session logs, histograms, several values in one event, odd field orders, a tag that is
not UTF-8) goes through protobuf as before, so the result is the same as parsing every record with protobuf.
"""

from __future__ import annotations

import numpy as np

from core.monitor.scan import KIND_START, KIND_SUMMARY, Damage, FileScan

HEADER = 12
FOOTER = 4
MIN_FAST = 21  # wall (9) + summary header (2) + value header (2) + tag header (2) + tag (>= 1) + value (5)


def _gather(buf: np.ndarray, at: np.ndarray, width: int) -> np.ndarray:
    """`width` bytes at each position, as rows."""
    return buf[at[:, None] + np.arange(width, dtype=np.int64)[None, :]]


def fast_scalars(buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray):
    """For payloads at `starts` with `lengths`: which are single-scalar events, with their wall time, step,
    value, tag length and tag position. Positions read are always inside each payload."""
    n = len(starts)
    ok = lengths >= MIN_FAST
    last = starts + np.maximum(lengths, 1) - 1  # the last byte of each payload: reads are clamped to it

    def at(pos: np.ndarray) -> np.ndarray:
        return buf[np.minimum(pos, last)]

    ok &= at(starts) == 0x09
    walls = np.ascontiguousarray(_gather(buf, np.where(ok, starts + 1, 0), 8)).view("<f8").ravel()
    s = starts + 9
    has_step = ok & (at(s) == 0x10)
    step = np.zeros(n, dtype=np.uint64)
    vlen = np.zeros(n, dtype=np.int64)
    going = has_step.copy()
    for k in range(10):
        b = at(s + 1 + k).astype(np.uint64)
        step[going] |= (b[going] & np.uint64(0x7F)) << np.uint64(7 * k)
        vlen[going] += 1
        going &= (b & np.uint64(0x80)) != 0
    ok &= ~going  # a varint longer than 10 bytes is not a step
    q = np.where(has_step, s + 1 + vlen, s)
    summary_len = at(q + 1).astype(np.int64)
    ok &= (at(q) == 0x2A) & (summary_len < 0x80) & (q + 2 + summary_len == starts + lengths)
    value_len = at(q + 3).astype(np.int64)
    ok &= (at(q + 2) == 0x0A) & (value_len < 0x80) & (value_len == summary_len - 2)
    tag_len = at(q + 5).astype(np.int64)
    ok &= (at(q + 4) == 0x0A) & (tag_len < 0x80) & (tag_len >= 1) & (tag_len == value_len - 7)
    ok &= at(q + 6 + tag_len) == 0x15
    values = np.ascontiguousarray(_gather(buf, np.where(ok, q + 7 + tag_len, 0), 4)).view("<f4").ravel()
    return ok, walls, step.view(np.int64), values.astype(np.float64), tag_len, q + 6


def fast_tags(buf: np.ndarray, ok: np.ndarray, tag_len: np.ndarray, tag_at: np.ndarray):
    """(names, name index per record, -1 where not fast). Tags are grouped by length, hashed, then compared
    byte for byte with their group's first; a group that does not check out, or is not UTF-8, is left to
    protobuf (its records are marked not fast in `ok`)."""
    names: list[str] = []
    index = np.full(len(ok), -1, dtype=np.int64)
    for length in np.unique(tag_len[ok]).tolist():
        rows = np.flatnonzero(ok & (tag_len == length))
        raw = _gather(buf, tag_at[rows], length)
        width = -(-length // 8) * 8
        padded = np.zeros((len(rows), width), dtype=np.uint8)
        padded[:, :length] = raw
        words = padded.view("<u8")
        h = np.zeros(len(rows), dtype=np.uint64)
        with np.errstate(over="ignore"):
            for c in range(words.shape[1]):
                h = (h * np.uint64(0x100000001B3)) ^ words[:, c]
        uniq, first, inverse = np.unique(h, return_index=True, return_inverse=True)
        if not np.array_equal(words, words[first][inverse]):
            ok[rows] = False  # two tags with one hash: protobuf decides
            continue
        group_names = []
        try:
            group_names = [bytes(raw[i]).decode("utf-8") for i in first.tolist()]
        except UnicodeDecodeError:
            ok[rows] = False
            continue
        base = len(names)
        names.extend(group_names)
        index[rows] = base + inverse.ravel()
    return names, index


def decode_records(scan: FileScan, data: bytes, buf: np.ndarray, offs: np.ndarray, lens: np.ndarray, *,
                   base: int, first_damage_at: int | None, on_progress=None) -> None:
    """Fill the scan's columns and event arrays from the records at `offs` (record order), as protobuf would."""
    from tensorboard.compat.proto import event_pb2

    n = len(data)
    starts = offs + HEADER
    ok, walls, steps, values, tag_len, tag_at = fast_scalars(buf, starts, lens)
    names, name_index = fast_tags(buf, ok, tag_len, tag_at)
    slow = np.flatnonzero(~ok)

    kept = np.ones(len(offs), dtype=bool)
    ev_steps = np.where(ok, steps, 0).astype(np.int64)
    ev_kinds = np.where(ok, KIND_SUMMARY, 0).astype(np.int8)
    ev_counts = ok.astype(np.int32)
    slow_rec: list[int] = []
    slow_tag: list[str] = []
    slow_step: list[int] = []
    slow_value: list[float] = []
    slow_wall: list[float] = []
    from_string = event_pb2.Event.FromString
    start_status = event_pb2.SessionLog.START
    compat_limit = first_damage_at if first_damage_at is not None else n + 1
    bad_proto = 0
    non_scalar = 0
    report_every = max(1, len(slow) // 20)
    for k, r in enumerate(slow.tolist()):
        o = int(offs[r])
        length = int(lens[r])
        try:
            event = from_string(data[o + HEADER:o + HEADER + length])
        except Exception:  # noqa: BLE001 - protobuf raises DecodeError (and others on garbage)
            bad_proto += 1
            kept[r] = False
            if o < compat_limit:
                scan.tbparse_would_raise = True
                compat_limit = o
            scan.damage.append(Damage(kind="bad_proto", offset=base + o, length=HEADER + length + FOOTER,
                                      message=f"record at byte {base + o} has valid checksums but is not an Event; "
                                              "dropped it"))
            continue
        what = event.WhichOneof("what")
        ev_steps[r] = event.step
        count = 0
        if what == "summary":
            ev_kinds[r] = KIND_SUMMARY
            for value in event.summary.value:
                if value.WhichOneof("value") == "simple_value":
                    slow_rec.append(r)
                    slow_tag.append(value.tag)
                    slow_step.append(event.step)
                    slow_value.append(value.simple_value)
                    slow_wall.append(event.wall_time)
                    count += 1
                else:
                    non_scalar += 1
        elif what == "file_version":
            if scan.file_version_text is None:
                scan.file_version_text = event.file_version
            scan.file_version = parse_file_version(event.file_version)
        elif what == "session_log" and event.session_log.status == start_status:
            ev_kinds[r] = KIND_START
        ev_counts[r] = count
        if on_progress is not None and k % report_every == 0:
            on_progress(o, n)

    # scalars in record order (a record's values in their own order): the fast ones, then the slow ones
    fast_rows = np.flatnonzero(ok)
    slow_names = {t: i for i, t in enumerate(dict.fromkeys(slow_tag))}
    all_names = names + list(slow_names)
    rec = np.concatenate([fast_rows, np.asarray(slow_rec, dtype=np.int64)])
    order = np.argsort(rec, kind="stable")
    name_ids = np.concatenate([name_index[fast_rows],
                               np.asarray([len(names) + slow_names[t] for t in slow_tag], dtype=np.int64)])[order]
    # tag ids in first-seen order, as a record-by-record reader numbers them
    used, first_seen = np.unique(name_ids, return_index=True)
    by_first = used[np.argsort(first_seen)]
    tag_of_name = np.full(len(all_names), -1, dtype=np.int32)
    tag_of_name[by_first] = np.arange(len(by_first), dtype=np.int32)
    scan.tags = [all_names[int(i)] for i in by_first]
    scan.tag_ids = tag_of_name[name_ids] if len(name_ids) else np.zeros(0, np.int32)
    scan.steps = np.concatenate([steps[fast_rows], np.asarray(slow_step, dtype=np.int64)])[order]
    scan.values = np.concatenate([values[fast_rows], np.asarray(slow_value, dtype=np.float64)])[order]
    scan.wall_times = np.concatenate([walls[fast_rows], np.asarray(slow_wall, dtype=np.float64)])[order]
    keep = np.flatnonzero(kept)
    counts = ev_counts[keep]
    scan.event_steps = ev_steps[keep]
    scan.event_kinds = ev_kinds[keep]
    scan.event_counts = counts
    scan.event_first = (np.cumsum(counts, dtype=np.int64) - counts) if len(counts) else np.zeros(0, np.int64)
    before = offs[keep] < compat_limit
    scan.compat_events = int(before.sum())
    scan.compat_scalars = int(counts[before].sum())
    scan.non_scalar_values = non_scalar
    if len(keep) and scan.file_version_text is None:
        scan.looks_like_events = scan.looks_like_events and bool(len(scan.steps))
    if bad_proto and not len(keep):
        scan.looks_like_events = False


def parse_file_version(text: str) -> float:
    """The number after 'brain.Event:' (TensorBoard's rule), or -1 when it is not in that form."""
    prefix = "brain.Event:"
    if not text.startswith(prefix):
        return -1.0
    try:
        return float(text[len(prefix):])
    except ValueError:
        return -1.0
