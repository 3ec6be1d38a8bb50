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
from pathlib import Path

import numpy as np

from core.monitor.gpu.models import MAX_SAMPLES_PER_SERIES, GpuFileReport, GpuSeries
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


def read_nvidia_smi(path: str | Path, node: str, budget: list[int]) -> tuple[list[GpuSeries], GpuFileReport]:
    """Every GPU of one nvidia-smi CSV log, as series; `budget` is the samples still allowed in this read
    (one int in a list, decreased here)."""
    stats = LineStats()
    report = GpuFileReport(path=str(path), kind="nvidia-smi")
    names: list[str | None] | None = None
    assumed = False
    gpus: dict[int, _Gpu] = {}
    clock = _Clock()
    skipped = 0
    full = False
    first_bad: str | None = None
    layout: tuple = ()  # (columns, time column, index column, [(key, column, suffix)], name column)
    for line in iter_lines(path, stats):
        cells = line.split(",")
        if len(cells) != len(layout and layout[0] or ()) or not layout:
            if not line.strip():
                continue
            if looks_like_header(cells):
                names = _column_names(cells)
                if "time" not in names or "index" not in names:
                    report.notes.append("a header without a timestamp or an index column: lines after it cannot "
                                        "be placed in time or on a GPU (query timestamp and index too)")
                    names = []
                layout = _layout(names, _units(cells)) if names else ()
                continue
            if names is None:
                if len(cells) in (5, len(RECOMMENDED_QUERY)):
                    names = [FIELDS[f] for f in RECOMMENDED_QUERY[:len(cells)]]
                    layout = _layout(names, [""] * len(names))
                    assumed = True
                else:
                    names = []
                    report.notes.append(f"no header line and {len(cells)} column(s): the columns cannot be told "
                                        "apart; record without `noheader`, or in the order "
                                        + ",".join(RECOMMENDED_QUERY))
            if not layout or len(cells) != len(layout[0]):
                skipped += 1
                first_bad = first_bad or line
                continue
        _, at_time, at_index, numeric, at_name = layout
        t = clock(cells[at_time])
        text = cells[at_index].strip()
        if t is None or not text.isdigit() or len(text) > 4:
            skipped += 1
            first_bad = first_bad or line
            continue
        ident = int(text)
        gpu = gpus.get(ident)
        if gpu is None:
            gpu = gpus[ident] = _Gpu()
        columns = gpu.columns
        if len(columns["time"]) >= MAX_SAMPLES_PER_SERIES or budget[0] <= 0:
            full = True
            continue
        budget[0] -= 1
        columns["time"].append(t)
        for key, at, suffix in numeric:
            if at < 0:
                columns[key].append(NAN)
                continue
            cell = cells[at]
            try:
                columns[key].append(float(cell[:-len(suffix)] if suffix and cell.endswith(suffix) else cell))
            except ValueError:
                columns[key].append(_number(cell))
        if at_name >= 0 and not gpu.name:
            gpu.name = cells[at_name].strip()[:80]
    if assumed:
        report.notes.append("no header line: the columns were read in the order " + ",".join(
            RECOMMENDED_QUERY[:len(names or [])]))
    if full:
        report.notes.append("more samples than this reader keeps; the later ones were left out")
    if skipped:
        shown = first_bad if len(first_bad or "") <= 80 else (first_bad or "")[:77] + "..."
        report.notes.append(f"{skipped} line(s) are not nvidia-smi samples and were skipped (the first: {shown!r})")
    report.notes.extend(stats.describe())
    report.skipped_lines = skipped + stats.too_long + stats.not_utf8
    out = []
    for index in sorted(gpus):
        gpu = gpus[index]
        cols = {k: np.frombuffer(v, dtype=np.float64) if len(v) else np.zeros(0) for k, v in gpu.columns.items()}
        if not len(cols["time"]):
            continue
        order = np.argsort(cols["time"], kind="stable")
        out.append(GpuSeries(source="nvidia-smi", node=node, gpu=index, name=gpu.name, files=[str(path)],
                             times=cols["time"][order], utilization=cols["utilization"][order],
                             memory_used=cols["memory_used"][order], memory_total=cols["memory_total"][order],
                             power=cols["power"][order], temperature=cols["temperature"][order]))
    report.samples = sum(s.samples for s in out)
    report.gpus = len(out)
    if not out:
        report.kind = "none"
    return out, report


def _layout(names: list[str | None], units: list[str]) -> tuple:
    """Where each field is in a line of this header: (columns, time, index, [(field, column, unit)], name)."""
    at = {name: i for i, name in reversed(list(enumerate(names))) if name}
    numeric = [(key, at.get(key, -1), units[at[key]] if key in at else "") for key in NUMERIC]
    return (names, at["time"], at["index"], numeric, at.get("name", -1))
