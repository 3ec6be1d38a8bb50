"""Reading one W&B run file (`run-<id>.wandb`) into the same columnar scalars as a TensorBoard event file.

The file is W&B's transaction log, written by the SDK's service on the machine that trained (online runs
too). Its framing is LevelDB's log format with W&B's own header and checksum (checked on files written
offline by wandb 0.31; online runs go through the same writer):
- a 7-byte file header: ":W&B", magic 0xBEE1 (little-endian), version 0;
- 32 KiB blocks; a block holds chunks of 7-byte header (CRC-32 (IEEE, as zlib computes it) of the type byte
  and the data, 2-byte little-endian length, 1-byte type) and data; type 1 is a whole record, 2/3/4 the
  first, middle and last pieces of a record that spans blocks; fewer than 7 bytes left in a block are
  zero padding;
- each record is a serialized `wandb_internal.Record` protobuf (see `proto`).

A chunk whose checksum fails is dropped with the record it belongs to. When its length still points at a
valid chunk it was the only loss; otherwise reading resumes at the next offset in the block where a chunk
checks out, or at the next block (every block starts with a chunk), so one flipped byte costs one record
and at most one block. Every loss is reported as a `Damage`, as the TensorBoard reader does.

History rows become (tag, step, wall time, value) with the step taken from the row's own step metric, as
declared by the run's `define_metric` records (slime declares `train/*` -> `train/step`; `rollout/*`,
`perf/*`, `passrate/*`, `multi_turn/*` -> `rollout/step`; `eval/*` -> `eval/step`:
slime/observability/wandb_utils.py:167-176@624b824a). The step keys themselves are not curves, as in
slime's TensorBoard output (slime/observability/logging_utils.py:45-51@624b824a); wall time is the row's
`_timestamp`.
"""

from __future__ import annotations

import fnmatch
import json
import math
import re
import struct
import zlib
from dataclasses import dataclass, field, fields

import numpy as np
from pydantic import BaseModel

from core.monitor.scan import Damage, FileScan, merge_appended
from core.pins import slime_source

FILE_HEADER = b":W&B\xe1\xbe\x00"
FILE_IDENT = b":W&B"
BLOCK = 32768
CHUNK_HEADER = 7
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4
MAX_RECORD = 64 * 1024 * 1024  # a history row is a few KiB; anything larger is not read
MAX_CONFIG_KEYS = 5000
SUMMARY_RECORDS_KEPT = 64  # the summary is each curve's last value plus what the last records set
MAX_JSON_DEPTH = 64  # slime's config is flat (its parsed arguments); deeper values are skipped, not parsed
MAX_KEY_SHOWN = 80

# slime's step metrics when a file has lost (or never had) its define_metric records
SLIME_STEP_METRICS = (("train/*", "train/step"), ("rollout/*", "rollout/step"), ("multi_turn/*", "rollout/step"),
                      ("passrate/*", "rollout/step"), ("eval/*", "eval/step"), ("perf/*", "rollout/step"))
SRC_DEFINE_METRIC = slime_source("slime/observability/wandb_utils.py", 167)
SRC_WANDB_LOG = slime_source("slime/observability/logging_utils.py", 45)
SRC_WANDB_ARGS = slime_source("slime/utils/arguments.py", 1161)
SRC_WANDB_CONFIG = slime_source("slime/observability/wandb_utils.py", 82)


class WandbRunInfo(BaseModel):
    """What a run file says about its run (the last value wins where the file repeats itself)."""

    run_id: str = ""
    project: str = ""
    entity: str = ""
    display_name: str = ""
    group: str = ""
    job_type: str = ""
    host: str = ""
    start_time: float | None = None
    resumed: bool = False
    offline: bool | None = None
    cli_version: str = ""
    exit_code: int | None = None
    runtime_s: float | None = None
    config: dict = {}
    summary: dict = {}
    config_truncated: bool = False
    skipped_values: list[str] = []  # config or summary keys whose value was nested too deep to read


@dataclass
class WandbScan(FileScan):
    """A FileScan of a `.wandb` file plus the run's metadata and what a re-read of appended bytes needs."""

    info: WandbRunInfo = field(default_factory=WandbRunInfo)
    step_names: list[str] = field(default_factory=list)  # define_metric names, exact
    step_globs: list[tuple[str, str]] = field(default_factory=list)  # (glob, step metric), in definition order
    last_step_values: dict[str, float] = field(default_factory=dict)
    last_wall: float = math.nan
    history_rows: int = 0


class _Chunks:
    """Walks the chunks of a log from `start`, yielding whole records and recording damage."""

    def __init__(self, data: bytes, start: int, damage: list[Damage], base: int = 0) -> None:
        self.data = data
        self.base = base  # file offset of data[0] (a multiple of BLOCK), for what is reported
        self.view = memoryview(data)
        self.pos = start
        self.damage = damage
        self.record_start = start  # where the record being assembled began
        self.clean_end = start  # just past the last whole record
        self.accounted = start  # just past the last byte read as a record or reported as damage

    def _valid_at(self, pos: int) -> bool:
        n = len(self.data)
        if pos + CHUNK_HEADER > n:
            return False
        checksum, length, kind = struct.unpack_from("<IHB", self.data, pos)
        if kind not in (FULL, FIRST, MIDDLE, LAST) or pos % BLOCK + CHUNK_HEADER + length > BLOCK:
            return False
        end = pos + CHUNK_HEADER + length
        return end <= n and zlib.crc32(self.view[pos + 6:end]) == checksum

    def _resync(self, bad: int) -> int:
        """The next offset after `bad` where a chunk checks out: in the same block, else the next block.

        Candidates are filtered with numpy first (a whole or first piece whose length fits the block), so
        that a block of garbage costs a few checksums, not one per byte."""
        block_end = (bad // BLOCK + 1) * BLOCK
        last = min(block_end - CHUNK_HEADER, len(self.data) - CHUNK_HEADER)
        if last <= bad:
            return block_end
        raw = np.frombuffer(self.data, dtype=np.uint8, count=last + CHUNK_HEADER - (bad + 1), offset=bad + 1)
        cand = np.arange(bad + 1, last + 1, dtype=np.int64)
        kinds = raw[6:6 + len(cand)]
        lengths = raw[4:4 + len(cand)].astype(np.int64) | (raw[5:5 + len(cand)].astype(np.int64) << 8)
        fits = ((kinds == FULL) | (kinds == FIRST)) & (cand + CHUNK_HEADER + lengths <= block_end)
        for pos in cand[fits].tolist():
            if self._valid_at(pos):
                return pos
        return block_end

    def records(self):
        data = self.data
        view = self.view
        n = len(data)
        unpack = struct.Struct("<IHB").unpack_from
        crc32 = zlib.crc32
        pieces: list[memoryview] | None = None
        pos = self.pos
        while True:
            left = BLOCK - pos % BLOCK
            if left < CHUNK_HEADER:
                pos += left
                continue
            if pos + CHUNK_HEADER > n:
                break
            checksum, length, kind = unpack(data, pos)
            end = pos + CHUNK_HEADER + length
            if kind == 0 and length == 0 and checksum == 0:
                # zero fill (a preallocated or padded tail): nothing more was written here
                if not any(data[pos:min(n, pos + left)]):
                    pos = min(n, pos + left)
                    if pos >= n:
                        break
                    continue
            if end > n and length <= left - CHUNK_HEADER:
                break  # the file ends inside this chunk: a run still being written, or a copy cut short
            if length > left - CHUNK_HEADER or kind not in (FULL, FIRST, MIDDLE, LAST) or crc32(
                    view[pos + 6:end]) != checksum:
                nxt, trusted = self._after_damage(pos, end, length, kind, left)
                self._damaged(self.record_start if pieces is not None else pos, min(nxt, n), trusted)
                pieces = None
                pos = self.accounted = nxt
                continue
            if kind == FULL:
                if pieces is not None:
                    self._lost_partial(pos)
                self.record_start = pos
                pieces = None
                pos = end
                self.pos = self.clean_end = self.accounted = pos
                yield self.record_start, view[pos - length:pos]
            elif kind == FIRST:
                if pieces is not None:
                    self._lost_partial(pos)
                self.record_start = pos
                pieces = [view[pos + CHUNK_HEADER:end]]
                pos = end
            else:
                if pieces is None:
                    self.damage.append(Damage(
                        kind="bad_payload_crc", offset=self.base + pos, length=end - pos,
                        message=(f"bytes {self.base + pos}-{self.base + end - 1} are the rest of a record whose beginning was lost; "
                                 "dropped")))
                    pos = self.accounted = end
                    continue
                pieces.append(view[pos + CHUNK_HEADER:end])
                pos = end
                if kind == LAST:
                    total = sum(len(piece) for piece in pieces)
                    payload = b"".join(pieces) if total <= MAX_RECORD else b""
                    pieces = None
                    self.pos = self.clean_end = self.accounted = pos
                    if total <= MAX_RECORD:
                        yield self.record_start, memoryview(payload)
                    else:
                        first = self.base + self.record_start
                        self.damage.append(Damage(
                            kind="too_large", offset=first, length=pos - self.record_start,
                            message=(f"the record at bytes {first}-{self.base + pos - 1} holds {total} bytes, more "
                                     f"than the {MAX_RECORD // 2**20} MiB this reader takes in one record (a "
                                     "history row is a few KiB); skipped it")))
        self.pos = pos
        start = self.record_start if pieces is not None else max(self.accounted, self.clean_end)
        prev = self.damage[-1] if self.damage else None
        if (start < n and prev is not None and prev.kind == "bad_length"
                and prev.offset + prev.length == self.base + start):
            self._damaged(start, n, trusted=False)  # garbage up to the end: one report
        elif start < n and any(data[start:n]):
            self.damage.append(Damage(
                kind="truncated", offset=self.base + start, length=n - start,
                message=(f"the last {n - start} byte(s) from byte {self.base + start} are not a whole record: the file "
                         "ends inside a record (a run still being written, or a copy cut short)")))

    def _after_damage(self, pos: int, end: int, length: int, kind: int, left: int) -> tuple[int, bool]:
        """Where to read on after a chunk that failed: past it when its length leads to a valid chunk (or to
        the end of the file), else the next offset where a chunk checks out."""
        if kind in (FULL, FIRST, MIDDLE, LAST) and length <= left - CHUNK_HEADER:
            after = end
            if BLOCK - after % BLOCK < CHUNK_HEADER:
                after += BLOCK - after % BLOCK
            if after >= len(self.data) or self._valid_at(after):
                return min(after, len(self.data)), True
        return self._resync(pos), False

    def _damaged(self, start: int, end: int, trusted: bool) -> None:
        """Report bytes start..end as lost; runs of damage next to each other are one report."""
        prev = self.damage[-1] if self.damage else None
        start += self.base
        end += self.base
        if prev is not None and prev.kind == "bad_length" and not trusted and prev.offset + prev.length == start:
            start = prev.offset
            self.damage.pop()
        n = self.base + len(self.data)
        self.damage.append(Damage(
            kind="bad_payload_crc" if trusted else "bad_length", offset=start, length=max(1, end - start),
            message=(f"bytes {start}-{end - 1} ({end - start} bytes) fail their checksum (damaged); dropped what "
                     + ("they held" if end >= n else f"they held and read on from byte {end}"))))

    def _lost_partial(self, at: int) -> None:
        self.damage.append(Damage(
            kind="bad_length", offset=self.base + self.record_start, length=at - self.record_start,
            message=(f"bytes {self.base + self.record_start}-{self.base + at - 1} are the start of a record whose end was lost; "
                     "dropped")))


class TooDeep(ValueError):
    """A JSON value nested more than MAX_JSON_DEPTH levels deep (parsing it would exhaust the stack)."""


_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_JSON_BRACKET = re.compile(r"[\[\]{}]")


def _too_deep(text: str) -> bool:
    """Whether a JSON text opens more than MAX_JSON_DEPTH brackets at once (brackets in strings do not count)."""
    if text.count("[") + text.count("{") <= MAX_JSON_DEPTH:
        return False
    depth = 0
    for m in _JSON_BRACKET.finditer(_JSON_STRING.sub("", text)):
        depth += 1 if m.group() in "[{" else -1
        if depth > MAX_JSON_DEPTH:
            return True
    return False


def _json(text: str):
    """A logged JSON value; text that is not JSON stays text; raises TooDeep for a value nested too deep."""
    if _too_deep(text):
        raise TooDeep(text[:40])
    try:
        return json.loads(text)
    except RecursionError as exc:  # a nesting _too_deep missed: still never a crash
        raise TooDeep(text[:40]) from exc
    except ValueError:
        return text


def _shown_key(key: str) -> str:
    key = "".join(ch if ch.isprintable() else "?" for ch in key)
    return key if len(key) <= MAX_KEY_SHOWN else key[:MAX_KEY_SHOWN - 3] + "..."


def _skipped_damage(keys: list[str], where: str, offset: int, length: int) -> Damage:
    shown = ", ".join(f"'{_shown_key(k)}'" for k in keys[:5]) + (f" and {len(keys) - 5} more" if len(keys) > 5 else "")
    return Damage(kind="skipped_value", offset=offset, length=length, message=(
        f"{where} at byte {offset}: the value of {shown} is nested more than {MAX_JSON_DEPTH} levels deep; "
        "it was skipped and the rest of the run was read"))


def _item_key(item) -> str:
    return item.key or ".".join(item.nested_key)


def scan_wandb_bytes(data: bytes, *, path: str = "", size: int | None = None, mtime_ns: int = 0, start: int = 0,
                     base: int = 0, prior: WandbScan | None = None, on_progress=None) -> WandbScan:
    """Read every record of a run file held in `data` from byte `start` (after `prior`, a scan of the bytes
    before it, whose metric definitions and last step values carry over).

    `data` may be a window of the file beginning at file offset `base`, a multiple of BLOCK (chunks never
    cross a block, so the framing holds); every offset reported is a file offset."""
    from core.monitor.wandb.proto import peek_class, record_class

    n = len(data)
    scan = WandbScan(path=path, size=n if size is None else size, mtime_ns=mtime_ns)
    if prior is not None:
        scan.step_names = list(prior.step_names)
        scan.step_globs = list(prior.step_globs)
        scan.last_step_values = dict(prior.last_step_values)
        scan.last_wall = prior.last_wall
    if start == 0 and base == 0:
        if n < len(FILE_HEADER) or data[:4] != FILE_IDENT:
            scan.looks_like_events = False
            scan.damage = [Damage(kind="not_wandb_file", offset=0, length=n, message=(
                f"the file does not start with W&B's ':W&B' header ({n} bytes): this is not a W&B run file"))]
            return scan
        start = len(FILE_HEADER)
    Record = record_class()
    peek = peek_class().FromString
    chunks = _Chunks(data, start, scan.damage, base)
    rows = _Rows()
    info = scan.info
    config: dict = {}
    summaries: list[bytes] = []
    kept = bad_proto = 0
    for rel, payload in chunks.records():
        offset = base + rel
        try:
            record = peek(payload)
            kind = record.WhichOneof("kind")
            full = Record.FromString(payload) if kind in ("config", "metric", "run", "exit") else None
        except Exception:  # noqa: BLE001 - protobuf raises DecodeError (and others on garbage)
            bad_proto += 1
            scan.damage.append(Damage(kind="bad_proto", offset=offset, length=len(payload) + CHUNK_HEADER,
                                      message=f"record at byte {offset} has a valid checksum but is not a W&B "
                                              "record; dropped it"))
            continue
        kept += 1
        if kind == "history":
            columns = record.history.item
            keys = list(columns.nested_key)
            texts = list(columns.value_json)
            if columns.key or len(keys) != len(texts):
                keys, texts = _items_one_by_one(Record.FromString(payload).history.item)
            rows.add(keys, texts)
            if on_progress is not None and rows.count % 4096 == 0:
                on_progress(chunks.pos, n)
        elif kind == "summary":
            summaries.append((offset, bytes(record.summary)))
            del summaries[:-SUMMARY_RECORDS_KEPT]
        elif kind == "metric":
            metric_rec = full.metric
            if metric_rec.step_metric and (metric_rec.glob_name or metric_rec.name):
                scan.step_globs.append((metric_rec.glob_name or metric_rec.name, metric_rec.step_metric))
            elif metric_rec.name:
                scan.step_names.append(metric_rec.name)
        elif kind == "run":
            before = len(info.skipped_values)
            _read_run_record(full.run, info, config)
            if len(info.skipped_values) > before:
                scan.damage.append(_skipped_damage(info.skipped_values[before:], "the run record", offset,
                                                   len(payload) + CHUNK_HEADER))
        elif kind == "config":
            before = len(info.skipped_values)
            _apply_updates(config, full.config.update, full.config.remove, info)
            if len(info.skipped_values) > before:
                scan.damage.append(_skipped_damage(info.skipped_values[before:], "a config record", offset,
                                                   len(payload) + CHUNK_HEADER))
        elif kind == "exit":
            info.exit_code = int(full.exit.exit_code)
            info.runtime_s = float(full.exit.runtime)
    scan.clean_end = base + chunks.clean_end
    scan.records = kept
    scan.history_rows = rows.count
    rows.into(scan)
    info.config = config
    info.summary = _summary(scan, summaries)
    if (scan.damage and not kept and base == 0 and start == len(FILE_HEADER)) or (bad_proto and not kept):
        scan.looks_like_events = False
    if on_progress is not None:
        on_progress(n, n)
    return scan


def _items_one_by_one(items) -> tuple[list[str], list[str]]:
    """Keys and values of a history row whose items do not line up as columns (nested keys, or `key`)."""
    return [item.key or ".".join(item.nested_key) for item in items], [item.value_json for item in items]


class _Rows:
    """History rows gathered as flat columns, turned into scalars at the end in a few numpy passes."""

    def __init__(self) -> None:
        self.keys: list[str] = []
        self.texts: list[str] = []
        self.lengths: list[int] = []
        self.count = 0

    def add(self, keys: list[str], texts: list[str]) -> None:
        self.keys += keys
        self.texts += texts
        self.lengths.append(len(keys))
        self.count += 1

    def into(self, scan: WandbScan) -> None:
        """Fill the scan's scalar columns: data keys only, each stepped by its step metric in its row."""
        import pandas as pd

        codes, unique_keys = pd.factorize(np.asarray(self.keys, dtype=object))
        codes = codes.astype(np.int64, copy=False)
        uniques = [str(k) for k in unique_keys]
        texts = np.asarray(self.texts, dtype=object)
        step_keys = _step_keys(scan)
        metrics = sorted(step_keys)
        col_of_metric = {m: i for i, m in enumerate(metrics)}
        own_col, wall_col = len(metrics), len(metrics) + 1
        media = {k[:-len("._type")] for k in uniques if k.endswith("._type")}
        is_data = np.zeros(len(uniques), dtype=bool)
        is_media = np.zeros(len(uniques), dtype=bool)
        step_col = np.full(len(uniques), own_col, dtype=np.int64)
        special_col = np.full(len(uniques), -1, dtype=np.int64)
        for code, key in enumerate(uniques):
            if key in col_of_metric:
                special_col[code] = col_of_metric[key]
            elif key == "_step":
                special_col[code] = own_col
            elif key == "_timestamp":
                special_col[code] = wall_col
            elif key.startswith("_"):
                continue
            elif media and (key in media or key.split(".", 1)[0] in media or any(
                    key.startswith(m + ".") for m in media)):
                is_media[code] = True
            else:
                is_data[code] = True
                metric = _step_metric(key, scan.step_names, scan.step_globs)
                if metric is not None and metric in col_of_metric:
                    step_col[code] = col_of_metric[metric]
        row_of = np.repeat(np.arange(self.count, dtype=np.int64), np.asarray(self.lengths, dtype=np.int64))
        table = np.full((self.count, len(metrics) + 2), np.nan)
        special = np.flatnonzero(special_col[codes] >= 0) if len(codes) else np.zeros(0, np.int64)
        if len(special):
            table[row_of[special], special_col[codes[special]]] = _floats(texts[special])[0]
        # step_sync: a row without its step metric takes the last value before it (this file, then `prior`)
        carry = [scan.last_step_values.get(m, np.nan) for m in metrics] + [np.nan, scan.last_wall]
        table = _fill_forward(table, np.asarray(carry, dtype=np.float64))
        if self.count:
            scan.last_step_values = {m: float(table[-1, i]) for i, m in enumerate(metrics)
                                     if np.isfinite(table[-1, i])}
            scan.last_wall = float(table[-1, wall_col])
        data_at = np.flatnonzero(is_data[codes]) if len(codes) else np.zeros(0, np.int64)
        values, numeric = _floats(texts[data_at])
        steps = table[row_of[data_at], step_col[codes[data_at]]]
        keep = numeric & np.isfinite(steps)
        scan.non_scalar_values = int(is_media[codes].sum()) + int((~keep).sum()) if len(codes) else 0
        data_at, values, steps = data_at[keep], values[keep], steps[keep]
        tag_codes = codes[data_at]
        used, first_seen = np.unique(tag_codes, return_index=True)
        used = used[np.argsort(first_seen)]
        tag_id_of = np.full(len(uniques), -1, dtype=np.int32)
        tag_id_of[used] = np.arange(len(used), dtype=np.int32)
        scan.tags = [uniques[int(c)] for c in used]
        scan.steps = steps.astype(np.int64)
        scan.tag_ids = tag_id_of[tag_codes]
        scan.values = values
        scan.wall_times = table[row_of[data_at], wall_col]
        scan.compat_scalars = len(scan.steps)


def _floats(texts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """JSON numbers (and NaN/Infinity, which W&B writes for them) as floats; true/false as 1/0; the rest
    is marked as not numeric."""
    try:
        return (np.fromiter(map(float, texts), dtype=np.float64, count=len(texts)),
                np.ones(len(texts), dtype=bool))
    except (ValueError, TypeError):
        out = np.empty(len(texts))
        ok = np.ones(len(texts), dtype=bool)
        for i, text in enumerate(texts):
            try:
                out[i] = float(text)
            except ValueError:
                if text in ("true", "false"):
                    out[i] = 1.0 if text == "true" else 0.0
                else:
                    out[i] = np.nan
                    ok[i] = False
        return out, ok


def _fill_forward(table: np.ndarray, carry: np.ndarray) -> np.ndarray:
    """Each column's missing (NaN) cells take the last value above them, or `carry` above the first row."""
    if not len(table):
        return table
    padded = np.vstack([carry[None, :], table])
    present = ~np.isnan(padded)
    present[0] = True
    idx = np.where(present, np.arange(len(padded))[:, None], 0)
    np.maximum.accumulate(idx, axis=0, out=idx)
    return padded[idx, np.arange(padded.shape[1])[None, :]][1:]


def _summary(scan: WandbScan, summaries: list[bytes]) -> dict:
    """The run's summary: each curve's last value, overlaid with the last summary records the file holds."""
    from core.monitor.wandb.proto import summary_class

    out: dict = {}
    if len(scan.tag_ids):
        reverse = scan.tag_ids[::-1]
        tids, at = np.unique(reverse, return_index=True)
        last = len(reverse) - 1 - at
        out = {scan.tags[int(t)]: float(scan.values[i]) for t, i in zip(tids.tolist(), last.tolist(), strict=True)}
    explicit: dict = {}
    where: dict[str, tuple[int, int]] = {}
    parse = summary_class().FromString
    for offset, raw in summaries:
        try:
            record = parse(raw)
        except Exception:  # noqa: BLE001 - a record that fails to parse adds nothing
            continue
        _apply_updates(explicit, record.update, record.remove, None, parse=False)
        for item in record.update:
            where[_item_key(item)] = (offset, len(raw))
    skipped: dict[tuple[int, int], list[str]] = {}
    for k, v in explicit.items():
        if k.startswith("_"):
            continue
        try:
            out[k] = _json(v)
        except TooDeep:
            skipped.setdefault(where.get(k, (0, 0)), []).append(k)
    for (offset, length), keys in skipped.items():
        scan.info.skipped_values.extend(keys)
        scan.damage.append(_skipped_damage(keys, "a summary record", offset, length))
    return out


def _step_keys(scan: WandbScan) -> set[str]:
    """Keys that are step counters (not curves): the file's defined metrics, else slime's three."""
    globs = scan.step_globs or SLIME_STEP_METRICS
    return set(scan.step_names) | {metric for _, metric in globs}


def _step_metric(key: str, names: list[str], globs: list[tuple[str, str]]) -> str | None:
    """The step metric a history key is plotted against: the file's definitions, else slime's."""
    for pattern, metric in globs or SLIME_STEP_METRICS:
        if pattern == key or fnmatch.fnmatchcase(key, pattern):
            return metric
    return None


def _read_run_record(run, info: WandbRunInfo, config: dict) -> None:
    info.run_id = run.run_id or info.run_id
    info.project = run.project or info.project
    info.entity = run.entity or info.entity
    info.display_name = run.display_name or info.display_name
    info.group = run.run_group or info.group
    info.job_type = run.job_type or info.job_type
    info.host = run.host or info.host
    if run.HasField("start_time"):
        info.start_time = run.start_time.seconds + run.start_time.nanos / 1e9
    info.resumed = bool(run.resumed) or info.resumed  # set when W&B itself resumed the run (online)
    if run.HasField("telemetry"):
        info.offline = bool(run.telemetry.feature.offline)
        info.cli_version = run.telemetry.cli_version or info.cli_version
    _apply_updates(config, run.config.update, run.config.remove, info)


def _apply_updates(target: dict, updates, removes, info: WandbRunInfo | None, parse: bool = True) -> None:
    for item in updates:
        key = _item_key(item)
        if key in target or len(target) < MAX_CONFIG_KEYS:
            try:
                target[key] = _json(item.value_json) if parse else item.value_json
            except TooDeep:
                target.pop(key, None)
                if info is not None:
                    info.skipped_values.append(key)
        elif info is not None:
            info.config_truncated = True
    for item in removes:
        target.pop(_item_key(item), None)


def merge_wandb(old: WandbScan, tail: WandbScan) -> WandbScan:
    """Join a cached scan of a run file's beginning with a scan of the bytes appended since."""
    merged = merge_appended(old, tail)
    base = {f.name: getattr(merged, f.name) for f in fields(FileScan)}
    info = old.info.model_copy(deep=True)
    for name in ("run_id", "project", "entity", "display_name", "group", "job_type", "host", "cli_version"):
        if getattr(tail.info, name):
            setattr(info, name, getattr(tail.info, name))
    for name in ("start_time", "exit_code", "runtime_s", "offline"):
        if getattr(tail.info, name) is not None:
            setattr(info, name, getattr(tail.info, name))
    info.resumed = old.info.resumed or tail.info.resumed
    info.config = {**old.info.config, **tail.info.config}
    info.summary = {**old.info.summary, **tail.info.summary}
    info.config_truncated = old.info.config_truncated or tail.info.config_truncated
    info.skipped_values = old.info.skipped_values + tail.info.skipped_values
    out = WandbScan(**base, info=info, step_names=tail.step_names, step_globs=tail.step_globs,
                    last_step_values=tail.last_step_values, last_wall=tail.last_wall,
                    history_rows=old.history_rows + tail.history_rows)
    out.compat_scalars = len(out.steps)
    out.damage = [d for d in old.damage if d.offset < old.clean_end and d.kind != "truncated"] + tail.damage
    return out


def scan_wandb_file(path, *, on_progress=None) -> WandbScan:
    """Read one `.wandb` file from disk (see `scan_wandb_bytes`)."""
    from pathlib import Path

    p = Path(path)
    st = p.stat()
    return scan_wandb_bytes(p.read_bytes(), path=str(p), size=st.st_size, mtime_ns=st.st_mtime_ns,
                            on_progress=on_progress)
