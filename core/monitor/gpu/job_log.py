"""slime's "Memory-Usage" lines in a job log, as Ray prints them.

`print_memory` logs, on every rank, `[Rank <r>] Memory-Usage <what>: <dict>` where the dict holds the device's
total, free and used memory, PyTorch's allocated and reserved memory, and the host's memory, in GiB rounded to
two decimals (slime/utils/memory_utils.py:43-51@624b824a, the dict built by `available_memory` at
slime/utils/memory_utils.py:21-36@624b824a). slime's log format puts the local time first,
`[%Y-%m-%d %H:%M:%S] file.py:line - message` (`configure_logger`, slime/observability/logging_utils.py:12-24@624b824a),
and Ray prefixes what an actor prints with `(ActorName pid=..., ip=...)`, often in colour. The Megatron
actor prints these lines around offloads, wake-ups and weight updates (`update_weights`,
slime/backends/megatron_utils/actor.py:639-641@624b824a), so they mark those phases too.

The device index in the dict is the actor's own (Ray gives each actor one GPU, so it is 0 everywhere): a
series is one rank on one node (the `ip` of the prefix). These lines give memory, not utilization.
"""

from __future__ import annotations

import calendar
import re
import time
from array import array
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from core.monitor.gpu.models import (
    MAX_SAMPLES_PER_SERIES,
    GpuFileReport,
    GpuSeries,
    HostSeries,
    PhaseMark,
    time_order,
)
from core.monitor.gpu.reading import LineStats, iter_lines
from core.pins import slime_source

SRC_PRINT_MEMORY = slime_source("slime/utils/memory_utils.py", 43)
SRC_LOG_FORMAT = slime_source("slime/observability/logging_utils.py", 19)
SRC_UPDATE_WEIGHTS_MEMORY = slime_source("slime/backends/megatron_utils/actor.py", 639)
MARKER = "Memory-Usage"
MAX_MARKS = 20_000
NAN = float("nan")
GIB = 1024.0  # slime's "_GB" values are GiB (bytes / 1024**3); series are in MiB

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
RAY_PREFIX = re.compile(r"^\s*\((?:(?P<actor>[\w.\-]+) )?pid=(?P<pid>\d+)(?:, ip=(?P<ip>[0-9A-Za-z.:\-]+))?\)\s*")
LOG_TIME = re.compile(r"\[(?P<ts>\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})")
MEMORY_LINE = re.compile(r"\[Rank (?P<rank>\d{1,6})\] Memory-Usage (?P<what>[^:\[\]{}]{0,200}?)"
                         r"(?: \(cleared before print\))?: \{(?P<info>[^{}]{0,2000})\}")
PAIR = re.compile(r"'(?P<key>\w{1,40})': (?:'(?P<text>[^']{0,80})'|(?P<num>-?[0-9.]+(?:e[-+]?\d+)?))")


def _feed(st: JobLogState, line: str, budget: list[int]) -> None:
    """One line that mentions Memory-Usage: a sample of its rank and a mark, or a line counted as skipped."""
    line = ANSI.sub("", line)
    prefix = RAY_PREFIX.match(line)
    node = (prefix.group("ip") or "driver") if prefix else "local"
    m = MEMORY_LINE.search(line)
    if m is None:
        st.unreadable += 1
        return
    stamp = LOG_TIME.search(line, prefix.end() if prefix else 0, m.start() + 1)
    t = _epoch(stamp.group("ts"), st.clock) if stamp else None
    if t is None:
        st.undated += 1
        return
    info: dict[str, float] = {}
    for p in PAIR.finditer(m.group("info")):
        if p.group("num"):
            try:
                info[p.group("key")] = float(p.group("num"))
            except ValueError:  # a number that is not one ('1.2.3', '.'): this line only is skipped
                st.malformed += 1
                st.first_malformed = st.first_malformed or f"{p.group('key')}: {p.group('num')[:40]}"
                return
    if "used_GB" not in info and "total_GB" not in info:
        st.unreadable += 1
        return
    rank = int(m.group("rank"))
    series = st.ranks.get((node, rank))
    if series is None:
        series = st.ranks[(node, rank)] = _Rank()
    if len(series.cols["time"]) >= MAX_SAMPLES_PER_SERIES or budget[0] <= 0:
        st.full = True
        return
    budget[0] -= 1
    series.cols["time"].append(t)
    series.cols["used"].append(info.get("used_GB", NAN) * GIB)
    series.cols["total"].append(info.get("total_GB", NAN) * GIB)
    series.cols["host_used"].append(info.get("host_used_GB", NAN) * GIB)
    series.cols["host_total"].append(info.get("host_total_GB", NAN) * GIB)
    if len(st.marks) < MAX_MARKS:
        st.marks.append(PhaseMark(time=t, node=node, rank=rank, what=m.group("what").strip()))


def _epoch(text: str, cache: dict[str, float]) -> float | None:
    value = cache.get(text)
    if value is None:
        try:
            value = float(calendar.timegm(time.strptime(text, "%Y-%m-%d %H:%M:%S")))
        except ValueError:
            return None
        if len(cache) > 200_000:
            cache.clear()
        cache[text] = value
    return value


class _Rank:
    def __init__(self) -> None:
        self.cols = {k: array("d") for k in ("time", "used", "total", "host_used", "host_total")}


@dataclass
class JobLogState:
    """What reading a job log so far left: the samples per rank, the marks, and where to resume."""

    ranks: dict = field(default_factory=dict)
    marks: list = field(default_factory=list)
    clock: dict = field(default_factory=dict)
    undated: int = 0
    unreadable: int = 0
    malformed: int = 0  # Memory-Usage lines with a number that does not read as one
    first_malformed: str | None = None
    bad_text: int = 0
    full: bool = False
    offset: int = 0
    head_left_out: list = field(default_factory=list)


def read_job_log(path: str | Path, budget: list[int], state: JobLogState | None = None, *,
                 keep_partial: bool = True) -> tuple[list[GpuSeries], list[HostSeries], list[PhaseMark],
                                                     GpuFileReport]:
    """The Memory-Usage lines of one job log as per-rank memory series, host memory per node, and marks; with
    a `state` from an earlier read of the same file, only the lines appended since are read."""
    st = state if state is not None else JobLogState()
    stats = LineStats()
    report = GpuFileReport(path=str(path), kind="slime-log")
    for line in iter_lines(path, stats, resume=st.offset, keep_partial=keep_partial):
        if MARKER in line:
            _feed(st, line, budget)
    st.offset = stats.end
    st.bad_text += stats.too_long + stats.not_utf8
    described = stats.describe()
    if stats.start:
        st.head_left_out = [n for n in described if "only its last" in n]
    ranks, marks = st.ranks, [m.model_copy() for m in st.marks]  # shifted in time later: copies
    undated, unreadable, full = st.undated, st.unreadable, st.full
    gpus: list[GpuSeries] = []
    hosts: dict[str, list[np.ndarray]] = {}
    for (node, rank), series in sorted(ranks.items()):
        cols = {k: np.frombuffer(v, dtype=np.float64).copy() for k, v in series.cols.items()}
        order = time_order(cols["time"])
        cols = {k: v[order] for k, v in cols.items()}
        n = len(cols["time"])
        gpus.append(GpuSeries(source="slime-log", node=node, gpu=rank, gpu_is_rank=True, files=[str(path)],
                              role="training", role_how="slime's Megatron actors print Memory-Usage lines",
                              times=cols["time"], utilization=np.full(n, np.nan), memory_used=cols["used"],
                              memory_total=cols["total"], power=np.full(n, np.nan),
                              temperature=np.full(n, np.nan)))
        hosts.setdefault(node, []).append(np.stack([cols["time"], cols["host_used"], cols["host_total"]]))
    host_series = []
    for node, parts in sorted(hosts.items()):
        joined = np.concatenate(parts, axis=1)
        joined = joined[:, time_order(joined[0])]
        with np.errstate(invalid="ignore", divide="ignore"):
            percent = joined[1] / joined[2] * 100.0
        host_series.append(HostSeries(source="slime-log", node=node, times=joined[0], memory_used=joined[1],
                                      memory_percent=percent, cpu_percent=np.full(joined.shape[1], np.nan)))
    if undated:
        report.notes.append(f"{undated} Memory-Usage line(s) carry no time ([YYYY-mm-dd HH:MM:SS], slime's log "
                            "format) and were skipped")
    if unreadable:
        report.notes.append(f"{unreadable} line(s) mention Memory-Usage but are not slime's Memory-Usage lines; "
                            "skipped")
    if st.malformed:
        report.notes.append(f"{st.malformed} Memory-Usage line(s) hold a number that does not read as one and "
                            f"were skipped (the first: {st.first_malformed})")
    if full:
        report.notes.append("more samples than this reader keeps; the later ones were left out")
    report.notes += st.head_left_out + [n for n in described if "only its last" not in n]
    report.skipped_lines = undated + unreadable + st.malformed + st.bad_text
    report.samples = sum(s.samples for s in gpus)
    report.gpus = len(gpus)
    if not gpus:
        report.kind = "none"
    return gpus, host_series, marks, report
