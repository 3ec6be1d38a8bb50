"""Finding and reading a run's GPU data: W&B run files (system metrics), nvidia-smi CSV logs and job logs.

`discover_gpu_logs` looks inside a run's directory (bounded: a few levels, a few thousand entries, links not
followed) for CSV files that start like nvidia-smi's output and for text logs (`*.log`, `*.txt`, `*.out`,
`*.err`); `read_gpu_data` reads those, the files given by the user, and the run's own W&B files, and puts
the series together: one series per (source, node, GPU), the same GPU seen by several W&B writers on a
node kept once, a resumed run's later samples appended.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from core.monitor.gpu.job_log import JobLogState, read_job_log
from core.monitor.gpu.models import MAX_SAMPLES_TOTAL, GpuData, GpuSeries, HostSeries, time_order
from core.monitor.gpu.nvidia_smi import SmiState, looks_like_header
from core.monitor.gpu.nvidia_smi import read_nvidia_smi as _read_csv
from core.monitor.gpu.wandb_stats import WandbState, read_wandb_stats
from core.monitor.wandb.proto import WandbProtoUnavailable
from core.paths import open_regular

CSV_SUFFIXES = (".csv",)
LOG_SUFFIXES = (".log", ".txt", ".out", ".err")
MAX_DEPTH = 3
MAX_ENTRIES = 5000
MAX_FILES = 64
SNIFF_BYTES = 4096
HEAD_BYTES = 1024
NODE_PREFIXES = re.compile(r"^(?:nvidia[-_]?smi|gpus?|smi)[-_.]+", re.IGNORECASE)
SMI_DATE = re.compile(r"^\d{4}/\d{2}/\d{2} \d{2}:\d{2}:\d{2}")
DUPLICATE_OVERLAP = 0.1


def sniff_kind(path: Path) -> str | None:
    """"nvidia-smi", "log" or None, from the name and the first bytes only."""
    name = path.name.lower()
    if name.endswith(".wandb"):
        return "wandb"
    if name.endswith(CSV_SUFFIXES):
        try:
            with open_regular(path) as fh:
                head = fh.read(SNIFF_BYTES)
        except OSError:
            return None
        line = head.split(b"\n", 1)[0].decode("utf-8", "replace")
        cells = line.split(",")
        return "nvidia-smi" if looks_like_header(cells) or SMI_DATE.match(line) else None
    if name.endswith(LOG_SUFFIXES):
        return "log"
    return None


def discover_gpu_logs(directory: str | Path, notes: list[str] | None = None) -> list[Path]:
    """nvidia-smi CSV logs and text logs inside `directory` (bounded walk, links not followed)."""
    root = Path(directory)
    found: list[Path] = []
    seen = 0
    stack = [(root, 0)]
    while stack:
        here, depth = stack.pop()
        try:
            entries = sorted(os.scandir(here), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            seen += 1
            if seen > MAX_ENTRIES:
                if notes is not None:
                    notes.append(f"{root}: more than {MAX_ENTRIES} entries; the search for GPU logs stopped there")
                return found
            if entry.is_symlink():
                continue
            if entry.is_dir(follow_symlinks=False):
                if depth < MAX_DEPTH and not entry.name.startswith("."):
                    stack.append((Path(entry.path), depth + 1))
                continue
            if not entry.is_file(follow_symlinks=False):
                continue
            p = Path(entry.path)
            if sniff_kind(p) in ("nvidia-smi", "log"):
                found.append(p)
                if len(found) >= MAX_FILES:
                    if notes is not None:
                        notes.append(f"{root}: more than {MAX_FILES} candidate GPU logs; the first {MAX_FILES} "
                                     "were read")
                    return found
    return found


def node_from_name(path: Path) -> str:
    """The node a per-node log is about, from its name: `gpu-node3.csv` -> `node3`."""
    stem = path.name.rsplit(".", 1)[0]
    return NODE_PREFIXES.sub("", stem) or stem


@dataclass
class Cursor:
    """Where an earlier read of a text log stopped, and what it had read (its parser's state)."""

    ident: tuple[int, int]  # device and inode: a file replaced under the same name is read again
    head: bytes  # its first bytes: a file rewritten in place is read again
    state: SmiState | JobLogState | WandbState


def _held(state: SmiState | JobLogState | WandbState) -> int:
    """Samples a cursor's state already holds (they count against the read's budget)."""
    if isinstance(state, SmiState):
        return sum(len(g.columns["time"]) for g in state.gpus.values())
    if isinstance(state, WandbState):
        return sum(len(g.cols["time"]) for g in state.gpus.values())
    return sum(len(r.cols["time"]) for r in state.ranks.values())


def _cursor_for(path: Path, cursors: dict, key: str, make) -> Cursor:
    """The cursor of a file that only grew since it was read, else a new one (the file is read whole)."""
    with open_regular(path) as fh:
        st = os.fstat(fh.fileno())
        head = fh.read(HEAD_BYTES)
    ident = (st.st_dev, st.st_ino)
    c = cursors.get(key)
    if c is None or c.ident != ident or st.st_size < c.state.offset or head[:len(c.head)] != c.head \
            or not isinstance(c.state, type(make())):
        c = cursors[key] = Cursor(ident=ident, head=head, state=make())
    return c


def _forget(cursors: dict | None, key: str) -> None:
    """A read that failed half-way leaves no cursor behind: the file is read whole next time."""
    if cursors is not None:
        cursors.pop(key, None)


def read_gpu_data(paths: list[str | Path], wandb_files: list[str | Path] = (), *, explicit: int = 0,
                  budget: int = MAX_SAMPLES_TOTAL, cursors: dict | None = None) -> GpuData:
    """Read GPU data from `paths` (nvidia-smi CSVs, job logs, .wandb files) and the run's `wandb_files`.

    The first `explicit` of `paths` were named by the user: a file among them that holds no GPU data, or
    cannot be read, is reported in the notes; files found by `discover_gpu_logs` that hold none are not.
    With `cursors` (a dict kept by the caller between reads, e.g. while a run is followed), a file that only
    grew is read from where the last read stopped; a last line (or record) still being written waits for the
    next read."""
    data = GpuData()
    if cursors is not None:
        wanted = {os.path.realpath(p) for p in [*paths, *wandb_files]}
        for gone in [k for k in cursors if k not in wanted]:
            del cursors[gone]
        budget -= sum(_held(c.state) for c in cursors.values())
    left = [max(0, budget)]
    series: list[GpuSeries] = []
    hosts: list[HostSeries] = []
    csv_nodes: dict[str, int] = {}
    ordered = [(Path(p), i < explicit) for i, p in enumerate(paths)] + [(Path(p), False) for p in wandb_files]
    seen: set[str] = set()
    for path, named in ordered:
        key = os.path.realpath(path)
        if key in seen:
            continue
        seen.add(key)
        kind = sniff_kind(path)
        try:
            if kind == "wandb":
                state = _cursor_for(path, cursors, key, WandbState).state if cursors is not None else None
                got, host, report = read_wandb_stats(path, left, node_hint=path.parent.name, state=state)
                series += got
                hosts += host
            elif kind == "nvidia-smi" or (named and path.name.lower().endswith(CSV_SUFFIXES)):
                node = node_from_name(path)
                csv_nodes[node] = csv_nodes.get(node, 0) + 1
                if csv_nodes[node] > 1:
                    node = f"{path.parent.name}/{node}"
                if cursors is None:
                    got, report = _read_csv(path, node, left)
                else:
                    state = _cursor_for(path, cursors, key, SmiState).state
                    got, report = _read_csv(path, node, left, state, keep_partial=False)
                series += got
            elif cursors is None:
                got, host, marks, report = read_job_log(path, left)
                series += got
                hosts += host
                data.marks += marks
            else:
                state = _cursor_for(path, cursors, key, JobLogState).state
                got, host, marks, report = read_job_log(path, left, state, keep_partial=False)
                series += got
                hosts += host
                data.marks += marks
        except OSError as exc:
            _forget(cursors, key)
            reason = getattr(exc, "strerror", None) or str(exc)
            if named:
                data.notes.append(f"{path}: cannot be read ({reason})")
            continue
        except WandbProtoUnavailable as exc:
            _forget(cursors, key)
            data.notes.append(f"{path}: {exc}")
            continue
        except Exception as exc:  # noqa: BLE001 - protobuf failing on garbage, or any other surprise in a file
            _forget(cursors, key)
            if named or kind == "wandb":
                data.notes.append(f"{path}: no GPU data could be read from it (it stopped the reader with an "
                                  f"unexpected {type(exc).__name__}); the other files were read")
            continue
        if report.kind == "none" and not named and kind != "nvidia-smi":
            continue  # a text log without Memory-Usage lines: nothing to say about it
        if report.kind == "none" and named:
            report.notes.insert(0, "no GPU samples found in this file (not an nvidia-smi CSV log, a W&B run file "
                                   "or a job log with slime's Memory-Usage lines)")
        data.files.append(report)
    if left[0] <= 0:
        data.notes.append(f"more than {budget:,} GPU samples in all: the rest were left out")
    data.series = merge_series(series, data.notes)
    data.host = _merge_hosts(hosts)
    data.marks.sort(key=lambda m: m.time)
    return data


def merge_series(series: list[GpuSeries], notes: list[str]) -> list[GpuSeries]:
    """One series per (source, node, GPU): series that overlap in time are the same GPU seen twice (the
    one with more samples is kept); series that follow each other (a resumed run) are joined."""
    groups: dict[tuple[str, str, int, bool], list[GpuSeries]] = {}
    for s in series:
        groups.setdefault((s.source, s.node, s.gpu, s.gpu_is_rank), []).append(s)
    out = []
    dropped = 0
    for key in sorted(groups, key=lambda k: (k[0], k[1], k[3], k[2])):
        parts = sorted(groups[key], key=lambda s: float(s.times[0]) if s.samples else 0.0)
        kept = parts[0]
        for s in parts[1:]:
            if _overlap(kept, s) > DUPLICATE_OVERLAP:
                dropped += 1
                files = [*kept.files, *(f for f in s.files if f not in kept.files)]
                kept = (s if s.samples > kept.samples else kept).model_copy(update={"files": files})
                continue
            kept = _join(kept, s)
        out.append(kept)
    if dropped:
        notes.append(f"{dropped} series repeat a GPU another file already covers (several W&B writers on one "
                     "node sample the same GPUs); each GPU is counted once")
    return out


def _overlap(a: GpuSeries, b: GpuSeries) -> float:
    if not a.samples or not b.samples:
        return 0.0
    lo = max(a.times[0], b.times[0])
    hi = min(a.times[-1], b.times[-1])
    shorter = min(a.times[-1] - a.times[0], b.times[-1] - b.times[0])
    if hi <= lo:
        return 0.0
    return float((hi - lo) / shorter) if shorter > 0 else 1.0


def _join(a: GpuSeries, b: GpuSeries) -> GpuSeries:
    cols = {}
    for name in ("times", "utilization", "memory_used", "memory_total", "power", "temperature"):
        cols[name] = np.concatenate([getattr(a, name), getattr(b, name)])
    order = time_order(cols["times"])
    return a.model_copy(update={**{k: v[order] for k, v in cols.items()},
                                "files": a.files + [f for f in b.files if f not in a.files]})


def _merge_hosts(hosts: list[HostSeries]) -> list[HostSeries]:
    groups: dict[tuple[str, str], list[HostSeries]] = {}
    for h in hosts:
        groups.setdefault((h.source, h.node), []).append(h)
    out = []
    for (source, node), parts in sorted(groups.items()):
        if len(parts) == 1:
            out.append(parts[0])
            continue
        cols = {name: np.concatenate([getattr(p, name) for p in parts])
                for name in ("times", "cpu_percent", "memory_percent", "memory_used")}
        order = time_order(cols["times"])
        out.append(HostSeries(source=source, node=node, **{k: v[order] for k, v in cols.items()}))
    return out
