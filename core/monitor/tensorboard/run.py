"""TensorBoard runs: a directory's event files found, each read (through the cache, appended bytes only
when a file has grown), stitched into a run, and tbparse's frame rebuilt from the scans.

A run is a directory that directly holds event files (files whose name contains "tfevents", the test
TensorBoard uses), as in TensorBoard. slime writes one run per `--tb-experiment-name` under
`tensorboard_log/<project>/<experiment>`, or into $TENSORBOARD_DIR
(slime/observability/tensorboard_utils.py:34-47@624b824a), and every logging process (rollout manager,
training actor) opens its own writer, so a run normally has several event files at once.
"""

from __future__ import annotations

import os
import struct
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from core.monitor.cache import batched, store_blob
from core.monitor.runs import (
    MAX_DEPTH,
    MAX_DIRS_WALKED,
    MAX_RUNS,
    FileReport,
    ProgressFn,
    RunData,
    cached_run,
    files_key,
    iter_dirs,
    stitch,
)
from core.monitor.scan import FileScan, accumulator_keep_mask, merge_appended
from core.monitor.stream import Format, read_cached
from core.monitor.tensorboard.crc import masked_crc32c
from core.monitor.tensorboard.events import FOOTER, HEADER, MAX_RECORD, scan_event_bytes

EVENT_FILE_MARK = "tfevents"
# slime's processes write a few event files per run, one more per restart; a folder with hundreds is many runs
# or copies in one place. Past this many, the newest (by name, which starts with the time) are read.
MAX_EVENT_FILES_PER_RUN = 200


def is_event_file(name: str) -> bool:
    return EVENT_FILE_MARK in name


def list_event_files(run_dir: Path, notes: list[str] | None = None, *, limit: int | None = None) -> list[Path]:
    """Event files directly in `run_dir`, in name order (the order TensorBoard reads them): regular files, not
    links; at most `limit` (MAX_EVENT_FILES_PER_RUN), the newest by name, the others said in `notes`."""
    limit = MAX_EVENT_FILES_PER_RUN if limit is None else limit
    try:
        names = sorted(name for name in os.listdir(run_dir) if is_event_file(name))
    except OSError:
        return []
    out: list[Path] = []
    at = len(names)
    while at > 0 and len(out) < limit:  # from the newest, so only the files kept are looked at
        at -= 1
        p = Path(run_dir) / names[at]
        if p.is_file() and not p.is_symlink():
            out.append(p)
    if at > 0 and notes is not None:
        notes.append(f"{at:,} older event file(s) of this folder were left out: at most {limit} are read per run, "
                     "the newest by name (a run writes a few; are many runs or copies in one folder?)")
    return out[::-1]


def discover_runs(root: Path, *, max_dirs: int = MAX_DIRS_WALKED) -> list[Path]:
    """Directories under `root` (itself included) that directly hold event files; links are not followed."""
    return walk_runs(root, max_dirs=max_dirs)[0]


def walk_runs(root: Path, *, max_dirs: int = MAX_DIRS_WALKED, max_depth: int = MAX_DEPTH,
              max_runs: int = MAX_RUNS) -> tuple[list[Path], list[str]]:
    """Run directories under `root`, and what the walk left out (a message each; empty when nothing was).

    The walk is `iter_dirs`'s (iterative, bounded, links never followed); it also stops once `max_runs`
    runs are found, and says so.
    """
    runs: list[Path] = []
    notes: list[str] = []
    for directory, file_names in iter_dirs(root, max_dirs=max_dirs, max_depth=max_depth, notes=notes):
        if any(is_event_file(f) for f in file_names):
            runs.append(directory)
            if len(runs) >= max_runs:
                notes.append(f"{root}: stopped at {max_runs} runs; narrow the path to read the others")
                break
    return sorted(runs), notes


def _scan_window(data: bytes, *, prior=None, **kw) -> FileScan:
    return scan_event_bytes(data, **kw)


def _record_pending(data: bytes, start: int) -> bool:
    """Whether `data` begins, at `start`, a record whose length checks out but runs past the window."""
    if len(data) < start + HEADER:
        return True
    (length,) = struct.unpack_from("<Q", data, start)
    (want,) = struct.unpack_from("<I", data, start + 8)
    return length <= MAX_RECORD and masked_crc32c(data[start:start + 8]) == want


EVENTS = Format(name="tensorboard", kind=FileScan, scan=_scan_window, merge=merge_appended,
                max_window=MAX_RECORD + HEADER + FOOTER, record_pending=_record_pending)


def read_scan(path: str | Path, cache=None, *, on_progress=None) -> tuple[FileScan, str]:
    """The scan of one event file and how it was obtained: "cached", "appended" or "read" (core.monitor.stream)."""
    return read_cached(path, cache, EVENTS, on_progress=on_progress)


def read_run(run_dir: str | Path, *, name: str | None = None, cache=None, on_progress: ProgressFn | None = None,
             files: list[Path] | None = None) -> RunData:
    """Read every event file of a run (with the cache when given), then stitch each tag."""
    run_dir = Path(run_dir)
    notes: list[str] = []
    paths = files if files is not None else list_event_files(run_dir, notes)
    stats, key = files_key(paths)
    hit = cached_run(cache, key, name or run_dir.name, run_dir.name, on_progress, path=str(run_dir))
    if hit is not None:
        hit.notes = notes
        return hit
    run = RunData(name=name or run_dir.name, path=str(run_dir), notes=notes)
    sizes = [max(1, st.st_size) for st in stats]
    total = float(sum(sizes)) or 1.0
    done = 0.0
    with batched(cache) as writes:  # the run's cache writes, made together
        for p, size in zip(paths, sizes, strict=True):
            def progress(pos: int, n: int, base=done, size=size, label=p.name) -> None:
                if on_progress is not None:
                    on_progress(min(1.0, (base + size * (pos / max(n, 1))) / total), label)

            scan, how = read_scan(p, writes, on_progress=progress)
            done += size
            run.scans.append(scan)
            run.files.append(file_report(p.name, scan, how))
            if on_progress is not None:
                on_progress(done / total, p.name)
        stitch(run)
        if writes is not None:
            store_blob(writes, key, replace(run, scans=[]))
    return run


def file_report(name: str, scan: FileScan, how: str) -> FileReport:
    """What was read from one event file, as a run lists it."""
    compat_kept = int(accumulator_keep_mask(scan, compatible=True).sum())
    return FileReport(
        name=name, size=scan.size, scalars=len(scan.steps), tags=len(scan.tags), how=how,
        damage=scan.damage, lost_vs_tbparse=max(0, len(scan.steps) - compat_kept),
        looks_like_events=scan.looks_like_events, tbparse_would_raise=scan.tbparse_would_raise,
        non_scalar_values=scan.non_scalar_values)


# -- tbparse's DataFrame, rebuilt exactly from scans ------------------------------------------------------

def _file_frame(scan: FileScan | None) -> pd.DataFrame:
    """The frame tbparse builds for one file (SummaryReader(..., extra_columns={'wall_time'}))."""
    if scan is None or not scan.compat_scalars:
        return pd.DataFrame.from_dict({"wall_time": []})
    keep = accumulator_keep_mask(scan, compatible=True)
    n = scan.compat_scalars
    tag_ids = scan.tag_ids[:n][keep]
    order = np.argsort(tag_ids, kind="stable")  # tags grouped in first-seen order, then record order
    tags = np.array(scan.tags, dtype=object)
    return pd.DataFrame.from_dict({
        "step": scan.steps[:n][keep][order],
        "tag": list(tags[tag_ids[order]]),
        "value": scan.values[:n][keep][order],
        "wall_time": scan.wall_times[:n][keep][order],
    })


def tbparse_frame(path: str | Path, scans: dict[str, FileScan] | None = None, cache=None) -> pd.DataFrame:
    """What `tbparse.SummaryReader(path, extra_columns={'wall_time'}).scalars` returns, built from our reader.

    Mirrors tbparse's walk: every entry of a directory in name order (subdirectories recursively), one frame
    per file (files whose name lacks "tfevents" contribute an empty frame), concatenated, then sorted by
    tag and step. Raises ValueError where tbparse would raise (a checksum-valid record that is no Event).
    """
    p = Path(path)
    if p.is_file():
        return _finish([_leaf(p, scans, cache)])
    frames = []
    for name in sorted(os.listdir(p)):
        child = p / name
        frames.append(tbparse_frame(child, scans, cache) if child.is_dir() else _finish([_leaf(child, scans, cache)]))
    return _finish(frames)


def _leaf(p: Path, scans: dict[str, FileScan] | None, cache) -> pd.DataFrame:
    if not is_event_file(p.name):
        return _file_frame(None)
    scan = scans.get(str(p)) if scans else None
    if scan is None:
        scan, _ = read_scan(p, cache)
    if scan.tbparse_would_raise:
        raise ValueError(f"tbparse would raise on {p}: a record passes its checksums but is not an Event")
    return _file_frame(scan)


def _finish(frames: list[pd.DataFrame]) -> pd.DataFrame:
    frames = [f for f in frames if f is not None]
    if not frames:
        return pd.DataFrame()
    stacked = pd.concat(frames, ignore_index=True)
    if stacked.empty:
        return pd.DataFrame()
    by = [c for c in ("tag", "step") if c in stacked.columns]
    return stacked.sort_values(by, ignore_index=True)
