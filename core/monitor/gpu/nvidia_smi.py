"""nvidia-smi CSV logs: `nvidia-smi --query-gpu=timestamp,index,utilization.gpu,memory.used,memory.total,...
--format=csv[,noheader][,nounits] -l N`, one file per node.

The header names the columns (`utilization.gpu [%]`; with `nounits` the header keeps the unit, the values
drop it). Without a header the columns are taken in the order of `RECOMMENDED_QUERY` (whose first five are
the issue's query), when the count fits. Values `[N/A]` and `[Not Supported]` are missing values. A file may
hold several headers (a log appended to by a restarted nvidia-smi); each one applies to the lines after it.
nvidia-smi writes the node's local time without a zone (`2026/12/03 07:25:15.123`); it is read as UTC, and
`align.shift_to_run` moves it by whole half-hours when the run's own clock says the node was elsewhere.
"""

from __future__ import annotations

import calendar
import time
from array import array
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from core.monitor.gpu.models import MAX_SAMPLES_PER_SERIES, GpuFileReport, GpuSeries, time_order
from core.monitor.gpu.reading import LineStats, iter_lines

RECOMMENDED_QUERY = ("timestamp", "index", "utilization.gpu", "memory.used", "memory.total", "power.draw",
                     "temperature.gpu")
RECORD_COMMAND = ("nvidia-smi --query-gpu=" + ",".join(RECOMMENDED_QUERY)
                  + " --format=csv -l 5 > gpu-$(hostname).csv")
FIELDS = {"timestamp": "time", "index": "index", "name": "name", "utilization.gpu": "utilization",
          "memory.used": "memory_used", "memory.total": "memory_total", "power.draw": "power",
          "power.draw.instant": "power", "power.draw.average": "power", "temperature.gpu": "temperature",
          "uuid": "uuid", "pci.bus_id": "bus"}
NUMERIC = ("utilization", "memory_used", "memory_total", "power", "temperature")
NAN = float("nan")
MISSING = {"", "[N/A]", "N/A", "[Not Supported]", "[Unknown Error]", "[GPU is lost]", "[Insufficient Permissions]"}
UNIT_FACTORS = {"MiB": 1.0, "GiB": 1024.0, "KiB": 1 / 1024, "MB": 1e6 / 2**20, "GB": 1e9 / 2**20}
# What a GPU can report: a reading outside these (or memory used above the GPU's total) is not a sample; it is
# counted, named in the file's notes, and kept as a missing value. The largest GPUs have 288 GB and draw 1.4 kW.
POSSIBLE = {"utilization": (0.0, 100.0), "memory_used": (0.0, 1_048_576.0), "memory_total": (0.0, 1_048_576.0),
            "power": (0.0, 5_000.0), "temperature": (-40.0, 150.0)}
READING_NAMES = {"utilization": "utilization (0-100 %)", "memory_used": "memory used (0 to the GPU's total)",
                 "memory_total": "memory total (up to 1 TiB)", "power": "power (0-5,000 W)",
                 "temperature": "temperature (-40 to 150 C)"}


def _column_names(header: list[str]) -> list[str | None]:
    names = []
    for cell in header:
        name = cell.strip().split(" [", 1)[0].strip().lower()
        names.append(FIELDS.get(name))
    return names


def looks_like_header(cells: list[str]) -> bool:
    first = cells[0].strip().lower() if cells else ""
    return bool(cells) and (first in FIELDS or first.split(" [", 1)[0] in FIELDS) and not first[:1].isdigit()


def _number(text: str) -> float:
    text = text.strip()
    if text in MISSING:
        return float("nan")
    value, _, unit = text.partition(" ")
    try:
        out = float(value)
    except ValueError:
        return float("nan")
    return out * UNIT_FACTORS.get(unit.strip(), 1.0)


class _Clock:
    """nvidia-smi's `YYYY/MM/DD HH:MM:SS.mmm` as seconds since the epoch (read as UTC), fast: the minute is
    converted once and cached."""

    def __init__(self) -> None:
        self.minutes: dict[str, float] = {}

    def __call__(self, text: str) -> float | None:
        text = text.strip()
        if len(text) < 19 or text[4] not in "/-" or text[16] != ":":
            return None
        head = text[:16]
        base = self.minutes.get(head)
        if base is None:
            try:
                base = float(calendar.timegm(time.strptime(head.replace("-", "/"), "%Y/%m/%d %H:%M")))
            except ValueError:
                return None
            if len(self.minutes) > 100_000:
                self.minutes.clear()
            self.minutes[head] = base
        try:
            seconds = float(text[17:])
        except ValueError:
            return None
        return base + seconds if 0 <= seconds < 61 else None


class _Gpu:
    def __init__(self) -> None:
        self.columns = {k: array("d") for k in ("time", *NUMERIC)}
        self.name = ""


def _units(header: list[str]) -> list[str]:
    """Each column's value suffix as the header names it (`memory.used [MiB]` -> " MiB"), "" when none."""
    out = []
    for cell in header:
        _, sep, unit = cell.strip().partition(" [")
        out.append(" " + unit.rstrip("]") if sep else "")
    return out


@dataclass
class SmiState:
    """What reading a log so far left: the header in force, the samples per GPU, and where to resume."""

    names: list | None = None
    layout: tuple = ()  # (columns, time column, index column, [(field, column, unit)], name column)
    assumed: bool = False
    clock: _Clock = field(default_factory=_Clock)
    gpus: dict = field(default_factory=dict)
    skipped: int = 0
    bad_text: int = 0  # lines too long or not UTF-8
    first_bad: str | None = None
    full: bool = False
    notes: list = field(default_factory=list)
    impossible: dict = field(default_factory=dict)  # field -> [count, the first such cell]
    offset: int = 0  # just past the last whole line read
    head_left_out: list = field(default_factory=list)


def read_nvidia_smi(path: str | Path, node: str, budget: list[int], state: SmiState | None = None, *,
                    keep_partial: bool = True) -> tuple[list[GpuSeries], GpuFileReport]:
    """Every GPU of one nvidia-smi CSV log, as series; `budget` is the samples still allowed in this read
    (one int in a list, decreased here). With a `state` from an earlier read of the same file, only the lines
    appended since are read (and the state moves on)."""
    st = state if state is not None else SmiState()
    stats = LineStats()
    report = GpuFileReport(path=str(path), kind="nvidia-smi")
    for line in iter_lines(path, stats, resume=st.offset, keep_partial=keep_partial):
        _feed(st, line, budget)
    st.offset = stats.end
    st.bad_text += stats.too_long + stats.not_utf8
    described = stats.describe()
    if stats.start:
        st.head_left_out = [n for n in described if "only its last" in n]
    if st.assumed:
        report.notes.append("no header line: the columns were read in the order " + ",".join(
            RECOMMENDED_QUERY[:len(st.names or [])]))
    report.notes += st.notes
    if st.full:
        report.notes.append("more samples than this reader keeps; the later ones were left out")
    if st.impossible:
        parts = [f"{n:,} {READING_NAMES[key]}, such as {first!r}" for key, (n, first) in st.impossible.items()]
        report.notes.append("readings no GPU can give were not taken as samples: " + "; ".join(parts))
    if st.skipped:
        shown = st.first_bad if len(st.first_bad or "") <= 80 else (st.first_bad or "")[:77] + "..."
        report.notes.append(f"{st.skipped} line(s) are not nvidia-smi samples and were skipped (the first: "
                            f"{shown!r})")
    report.notes += st.head_left_out + [n for n in described if "only its last" not in n]
    report.skipped_lines = st.skipped + st.bad_text
    out = []
    for index in sorted(st.gpus):
        gpu = st.gpus[index]
        if not len(gpu.columns["time"]):
            continue
        cols = {k: np.frombuffer(v, dtype=np.float64).copy() if len(v) else np.zeros(0)
                for k, v in gpu.columns.items()}
        order = time_order(cols["time"])
        out.append(GpuSeries(source="nvidia-smi", node=node, gpu=index, name=gpu.name, files=[str(path)],
                             times=cols["time"][order], utilization=cols["utilization"][order],
                             memory_used=cols["memory_used"][order], memory_total=cols["memory_total"][order],
                             power=cols["power"][order], temperature=cols["temperature"][order]))
    report.samples = sum(s.samples for s in out)
    report.gpus = len(out)
    if not out:
        report.kind = "none"
    return out, report


def _feed(st: SmiState, line: str, budget: list[int]) -> None:
    """One line: a header (the columns from here on), a sample, or a line that is neither (counted)."""
    cells = line.split(",")
    layout = st.layout
    if not layout or len(cells) != len(layout[0]):
        if not line.strip():
            return
        if looks_like_header(cells):
            names = _column_names(cells)
            if "time" not in names or "index" not in names:
                st.notes.append("a header without a timestamp or an index column: lines after it cannot be placed "
                                "in time or on a GPU (query timestamp and index too)")
                names = []
            st.names = names
            st.layout = _layout(names, _units(cells)) if names else ()
            return
        if st.names is None:
            if len(cells) in (5, len(RECOMMENDED_QUERY)):
                st.names = [FIELDS[f] for f in RECOMMENDED_QUERY[:len(cells)]]
                st.layout = _layout(st.names, [""] * len(st.names))
                st.assumed = True
            else:
                st.names = []
                st.notes.append(f"no header line and {len(cells)} column(s): the columns cannot be told apart; "
                                "record without `noheader`, or in the order " + ",".join(RECOMMENDED_QUERY))
        layout = st.layout
        if not layout or len(cells) != len(layout[0]):
            st.skipped += 1
            st.first_bad = st.first_bad or line
            return
    _, at_time, at_index, numeric, at_name = layout
    t = st.clock(cells[at_time])
    text = cells[at_index].strip()
    if t is None or not text.isdigit() or len(text) > 4:
        st.skipped += 1
        st.first_bad = st.first_bad or line
        return
    ident = int(text)
    gpu = st.gpus.get(ident)
    if gpu is None:
        gpu = st.gpus[ident] = _Gpu()
    columns = gpu.columns
    if len(columns["time"]) >= MAX_SAMPLES_PER_SERIES or budget[0] <= 0:
        st.full = True
        return
    budget[0] -= 1
    columns["time"].append(t)
    for key, at, suffix in numeric:
        if at < 0:
            columns[key].append(NAN)
            continue
        cell = cells[at]
        try:
            value = float(cell[:-len(suffix)] if suffix and cell.endswith(suffix) else cell)
        except ValueError:
            value = _number(cell)
        low, high = POSSIBLE[key]
        if not low <= value <= high and value == value:  # NaN (a missing value) is not counted
            _impossible(st, key, cell)
            value = NAN
        columns[key].append(value)
    used, total = columns["memory_used"], columns["memory_total"]
    if used[-1] > total[-1]:  # False when either is missing
        _impossible(st, "memory_used", cells[numeric[1][1]])
        used[-1] = NAN
    if at_name >= 0 and not gpu.name:
        gpu.name = cells[at_name].strip()[:80]


def _impossible(st: SmiState, key: str, cell: str) -> None:
    seen = st.impossible.get(key)
    if seen is None:
        st.impossible[key] = [1, cell.strip()[:40]]
    else:
        seen[0] += 1


def _layout(names: list[str | None], units: list[str]) -> tuple:
    """Where each field is in a line of this header: (columns, time, index, [(field, column, unit)], name)."""
    at = {name: i for i, name in reversed(list(enumerate(names))) if name}
    numeric = [(key, at.get(key, -1), units[at[key]] if key in at else "") for key in NUMERIC]
    return (names, at["time"], at["index"], numeric, at.get("name", -1))
