"""W&B system metrics: the `stats` records of a run file (`run-<id>.wandb`), read without the history.

The W&B SDK samples the machine it runs on (every 15 s by default) and writes each sample as a `stats`
record: a timestamp and items such as `gpu.0.gpu` (utilization, %), `gpu.0.memoryAllocated` (% of the
device's memory), `gpu.0.memoryAllocatedBytes`, `gpu.0.powerWatts`, `gpu.0.temp`, `cpu` and
`memory_percent`; in W&B's shared mode a key may end in `/l:<label>`, the writer's label. slime opens a
W&B writer in the driver, the rollout manager and the main Megatron rank, each on its own machine
(`init_wandb_secondary`, slime/observability/wandb_utils.py:123-165@624b824a), so a run's files together
cover the nodes those processes ran on; several writers on one node report the same GPUs (kept once).

The file is walked block by block (32 KiB, W&B's LevelDB-style framing, see `core.monitor.wandb.log`) with
bounded memory; only `stats` and `run` records are decoded: every other record is recognised by its
first field tag and skipped without parsing. A chunk that fails its checksum costs the rest of its block.
"""

from __future__ import annotations

import os
import re
import struct
import zlib
from array import array
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from core.monitor.gpu.models import MAX_SAMPLES_PER_SERIES, GpuFileReport, GpuSeries, HostSeries, time_order
from core.paths import open_regular

FILE_IDENT = b":W&B"
HEADER_LEN = 7
BLOCK = 32768
CHUNK_HEADER = 7
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4
MAX_KEY = 200
READ_BLOCKS = 64  # 2 MiB at a time
MAX_KEPT_RECORD = 4 * 1024 * 1024  # a stats or run record is a few KiB; longer records are not assembled
STATS_TAG = b"\x3a"  # field 7, length-delimited
RUN_TAG = b"\x8a\x01"  # field 17, length-delimited
GPU_KEY = re.compile(r"^gpu\.(?P<index>\d{1,4})\.(?P<metric>[A-Za-z]+)(?:/l:(?P<label>.{1,80}))?$")
HOST_KEY = re.compile(r"^(?P<metric>cpu|memory_percent|proc\.memory\.rssMB|cpu\.\d{1,4}\.cpu_percent)"
                      r"(?:/l:(?P<label>.{1,80}))?$")
GPU_METRICS = {"gpu": "utilization", "memoryAllocatedBytes": "memory_bytes", "memoryAllocated": "memory_percent",
               "powerWatts": "power", "temp": "temperature"}
SETTINGS_HINT = ("W&B samples system metrics on its own (every 15 s; `x_stats_sampling_interval` sets it) unless "
                 "`x_disable_stats` is set; slime's --use-wandb keeps the default")
SRC_WANDB_WRITERS = "slime/observability/wandb_utils.py:123-165@624b824a"


@lru_cache(maxsize=1)
def _classes():
    from google.protobuf.message_factory import GetMessageClass

    from core.monitor.wandb.proto import record_class

    fields = record_class().DESCRIPTOR.fields_by_name
    return (GetMessageClass(fields["stats"].message_type), GetMessageClass(fields["run"].message_type))


def _varint_end(data: bytes, pos: int) -> int:
    for i in range(pos, min(len(data), pos + 10)):
        if not data[i] & 0x80:
            return i + 1
    return -1


def _body(payload: bytes, tag: bytes) -> bytes | None:
    """The bytes of the record's field with this tag when it is the record's kind (after the optional
    `num`, field 1), else None: records are written in field order, so the kind is the next field."""
    pos = 0
    if payload[:1] == b"\x08":
        pos = _varint_end(payload, 1)
        if pos < 0:
            return None
    if payload[pos:pos + len(tag)] != tag:
        return None
    start = pos + len(tag)
    end = _varint_end(payload, start)
    if end < 0:
        return None
    length = 0
    for shift, byte in enumerate(payload[start:end]):
        length |= (byte & 0x7F) << (7 * shift)
    return payload[end:end + length] if end + length <= len(payload) else None


class _Walk:
    """Whole records of a W&B log, block by block; damage counted."""

    def __init__(self) -> None:
        self.damaged_chunks = 0
        self.truncated = False
        self.pieces: list[bytes] | None = None
        self.piece_bytes = 0
        self.stop = 0  # where in the last block walked a later read goes on (BLOCK: at the next block)

    def block_records(self, block: bytes, start: int):
        """The whole records of one block from byte `start` of it (a block the file ends in may be partial)."""
        pos = start
        n = len(block)
        self.truncated = False
        self.stop = BLOCK
        while BLOCK - pos >= CHUNK_HEADER and pos + CHUNK_HEADER <= n:
            checksum, length, kind = struct.unpack_from("<IHB", block, pos)
            end = pos + CHUNK_HEADER + length
            if kind == 0 and length == 0 and checksum == 0:
                self.stop = pos if n < BLOCK else BLOCK
                return  # zero padding or a preallocated tail
            if end > n and n < BLOCK:
                self.truncated = True  # the file ends inside this chunk (a run still being written)
                self.stop = pos
                return
            if kind not in (FULL, FIRST, MIDDLE, LAST) or end > BLOCK or zlib.crc32(block[pos + 6:end]) != checksum:
                self.damaged_chunks += 1
                self.pieces = None
                return
            data = block[pos + CHUNK_HEADER:end]
            pos = end
            if kind == FULL:
                self.pieces = None
                yield data
            elif kind == FIRST:
                self.pieces, self.piece_bytes = [data], len(data)
            elif self.pieces is not None:
                self.piece_bytes += len(data)
                if self.piece_bytes <= MAX_KEPT_RECORD:
                    self.pieces.append(data)
                else:
                    self.pieces.clear()  # a long record (a big history row): counted, not kept
                if kind == LAST:
                    whole = b"".join(self.pieces) if self.piece_bytes <= MAX_KEPT_RECORD else b""
                    self.pieces = None
                    if whole:
                        yield whole
        if n < BLOCK:
            self.stop = pos  # the block is still being filled


class _Gpu:
    def __init__(self) -> None:
        self.cols = {k: array("d") for k in ("time", "utilization", "memory_bytes", "memory_percent", "power",
                                             "temperature")}


class _Host:
    def __init__(self) -> None:
        self.cols = {k: array("d") for k in ("time", "cpu", "memory_percent", "rss")}


@dataclass
class WandbState:
    """What reading a run file's system metrics so far left, and where to go on."""

    walk: _Walk = field(default_factory=_Walk)
    host_name: str = ""
    gpus: dict = field(default_factory=dict)
    hosts: dict = field(default_factory=dict)
    records: int = 0
    bad: int = 0
    full: bool = False
    offset: int = 0  # just past the last chunk read


def read_wandb_stats(path: str | Path, budget: list[int], node_hint: str = "", state: WandbState | None = None,
                     ) -> tuple[list[GpuSeries], list[HostSeries], GpuFileReport]:
    """The system metrics of one run file: one series per (node, GPU), one host series per node. With a
    `state` from an earlier read of the same file, only what was appended since is read."""
    report = GpuFileReport(path=str(path), kind="wandb")
    stats_class, run_class = _classes()
    st = state if state is not None else WandbState()
    walk = st.walk
    gpus, hosts = st.gpus, st.hosts
    with open_regular(path) as fh:
        size = os.fstat(fh.fileno()).st_size
        block_start = st.offset // BLOCK * BLOCK
        fh.seek(block_start)
        left = size - block_start
        while left > 0:
            data = fh.read(min(BLOCK * READ_BLOCKS, left))
            if not data:
                break
            left -= len(data)
            if block_start == 0 and data[:4] != FILE_IDENT:
                report.kind = "none"
                report.notes.append("not a W&B run file (no ':W&B' header); nothing read from it")
                return [], [], report
            for offset in range(0, len(data), BLOCK):
                here = block_start + offset
                start = st.offset - here if here <= st.offset < here + BLOCK else 0
                if here == 0:
                    start = max(start, HEADER_LEN)
                for payload in walk.block_records(data[offset:offset + BLOCK], start):
                    body = _body(payload, STATS_TAG)
                    if body is None:
                        run_body = _body(payload, RUN_TAG) if not st.host_name else None
                        if run_body is not None:
                            try:
                                st.host_name = run_class.FromString(run_body).host[:80]
                            except Exception:  # noqa: BLE001 - protobuf raises DecodeError (and others) on garbage
                                st.bad += 1
                        continue
                    try:
                        record = stats_class.FromString(body)
                    except Exception:  # noqa: BLE001 - as above
                        st.bad += 1
                        continue
                    st.records += 1
                    t = record.timestamp.seconds + record.timestamp.nanos / 1e9
                    if not t or budget[0] <= 0:
                        st.full = st.full or budget[0] <= 0
                        continue
                    st.full |= _add_sample(record.item, t, st.host_name or node_hint, gpus, hosts, budget)
                st.offset = here + walk.stop
            block_start += len(data)
    bad, full, records = st.bad, st.full, st.records
    if walk.damaged_chunks:
        report.notes.append(f"{walk.damaged_chunks} damaged block(s): what they held was dropped")
    if walk.truncated:
        report.notes.append("the file ends inside a record (a run still being written); the rest is read next time")
    if bad:
        report.notes.append(f"{bad} record(s) with valid checksums could not be decoded; dropped")
    if full:
        report.notes.append("more samples than this reader keeps; the later ones were left out")
    if not records:
        report.notes.append("no system-metrics records: " + SETTINGS_HINT)
    series = [_gpu_series(node, index, gpu, path) for (node, index), gpu in sorted(gpus.items())]
    series = [s for s in series if s.samples]
    host_series = [_host_series(node, h) for node, h in sorted(hosts.items())]
    report.samples = sum(s.samples for s in series)
    report.gpus = len(series)
    if not series and not host_series:
        report.kind = "none"
    return series, host_series, report


@lru_cache(maxsize=16384)
def _parse_key(key: str, default_node: str) -> tuple[str, str, int, str] | None:
    """("gpu", node, index, field) or ("host", node, -1, field) for a system-metrics key; None for the others
    (keys repeat in every record, so each is parsed once)."""
    m = GPU_KEY.match(key)
    if m:
        metric = GPU_METRICS.get(m.group("metric"))
        return ("gpu", m.group("label") or default_node, int(m.group("index")), metric) if metric else None
    h = HOST_KEY.match(key)
    if h:
        name = h.group("metric")
        return ("host", h.group("label") or default_node, -1, "per_cpu" if name.endswith("cpu_percent") else name)
    return None


def _add_sample(items, t: float, default_node: str, gpus: dict, hosts: dict, budget: list[int]) -> bool:
    """One stats record into the per-GPU and per-node columns; True when a series is full."""
    values: dict[tuple[str, int], dict[str, float]] = {}
    host_values: dict[str, dict[str, list[float]]] = {}
    for item in items:
        key = item.key
        if len(key) > MAX_KEY:
            continue  # no system metric has such a name; kept out of the cache of parsed keys
        parsed = _parse_key(key, default_node)
        if parsed is None:
            continue
        try:
            value = float(item.value_json)
        except ValueError:
            continue
        kind, node, index, slot = parsed
        if kind == "gpu":
            values.setdefault((node, index), {})[slot] = value
        else:
            host_values.setdefault(node, {}).setdefault(slot, []).append(value)
    full = False
    for ident, metrics in values.items():
        gpu = gpus.get(ident)
        if gpu is None:
            gpu = gpus[ident] = _Gpu()
        if len(gpu.cols["time"]) >= MAX_SAMPLES_PER_SERIES or budget[0] <= 0:
            full = True
            continue
        budget[0] -= 1
        gpu.cols["time"].append(t)
        for name in ("utilization", "memory_bytes", "memory_percent", "power", "temperature"):
            gpu.cols[name].append(metrics.get(name, float("nan")))
    for node, metrics in host_values.items():
        host = hosts.get(node)
        if host is None:
            host = hosts[node] = _Host()
        if len(host.cols["time"]) >= MAX_SAMPLES_PER_SERIES:
            continue
        per_cpu = metrics.get("per_cpu")
        cpu = float(np.mean(per_cpu)) if per_cpu else metrics.get("cpu", [float("nan")])[0]
        host.cols["time"].append(t)
        host.cols["cpu"].append(cpu)
        host.cols["memory_percent"].append(metrics.get("memory_percent", [float("nan")])[0])
        host.cols["rss"].append(metrics.get("proc.memory.rssMB", [float("nan")])[0])
    return full


def _gpu_series(node: str, index: int, gpu: _Gpu, path) -> GpuSeries:
    cols = {k: np.frombuffer(v, dtype=np.float64).copy() if len(v) else np.zeros(0) for k, v in gpu.cols.items()}
    order = time_order(cols["time"])
    cols = {k: v[order] for k, v in cols.items()}
    used = cols["memory_bytes"] / 2**20
    with np.errstate(invalid="ignore", divide="ignore"):
        total = np.where(cols["memory_percent"] > 0, used / (cols["memory_percent"] / 100.0), np.nan)
    return GpuSeries(source="wandb", node=node, gpu=index, files=[str(path)], times=cols["time"],
                     utilization=cols["utilization"], memory_used=used, memory_total=total, power=cols["power"],
                     temperature=cols["temperature"])


def _host_series(node: str, host: _Host) -> HostSeries:
    cols = {k: np.frombuffer(v, dtype=np.float64).copy() if len(v) else np.zeros(0) for k, v in host.cols.items()}
    order = time_order(cols["time"])
    return HostSeries(source="wandb", node=node, times=cols["time"][order], cpu_percent=cols["cpu"][order],
                      memory_percent=cols["memory_percent"][order], memory_used=cols["rss"][order])
