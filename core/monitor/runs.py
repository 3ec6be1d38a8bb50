"""Runs: finding them in a directory, reading their event files, stitching restarts, and tbparse's frame.

A run is a directory that directly holds event files (files whose name contains "tfevents", the test
TensorBoard uses), as in TensorBoard. slime writes one run per `--tb-experiment-name` under
`tensorboard_log/<project>/<experiment>`, or into $TENSORBOARD_DIR
(slime/observability/tensorboard_utils.py:34-47@624b824a), and every logging process (rollout manager,
training actor) opens its own writer, so a run normally has several event files at once.

Stitching follows TensorBoard's data server: files are read in name order (which is start-time order),
and within one tag a value at step s replaces every earlier value at a step >= s (a restart re-logs the
steps after its checkpoint, and the newer values win). Each replacement is reported as a restart mark.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd
from pydantic import BaseModel

from core.monitor.cache import load_blob, read_scan, run_key, store_blob
from core.monitor.events import Damage, FileScan, accumulator_keep_mask
from core.monitor.wandb_log import WandbRunInfo

EVENT_FILE_MARK = "tfevents"
MAX_DIRS_WALKED = 5000
MAX_RUNS = 64

ProgressFn = Callable[[float, str], None]


class FileReport(BaseModel):
    """What was read from one event file."""

    name: str
    size: int
    scalars: int
    tags: int
    how: str  # read | cached | appended
    damage: list[Damage] = []
    lost_vs_tbparse: int = 0  # scalars this reader recovered that tbparse would not have returned
    looks_like_events: bool = True
    tbparse_would_raise: bool = False
    non_scalar_values: int = 0


class RestartMark(BaseModel):
    """A place where a tag's step went back: the newer values replaced `replaced` older points."""

    tag: str
    step: int
    file: str
    replaced: int
    wall_time: float


@dataclass
class Series:
    """One tag of one run after stitching, in step order."""

    tag: str
    steps: np.ndarray
    values: np.ndarray
    wall_times: np.ndarray
    files: np.ndarray  # index into RunData.files


@dataclass
class RunData:
    """One run, read and stitched."""

    name: str
    path: str
    files: list[FileReport] = field(default_factory=list)
    series: dict[str, Series] = field(default_factory=dict)
    restarts: list[RestartMark] = field(default_factory=list)
    start_time: float | None = None
    scans: list[FileScan] = field(default_factory=list)
    source: str = "tensorboard"  # "tensorboard" | "wandb" (read by core.monitor.wandb_run)
    wandb: WandbRunInfo | None = None  # a W&B run's name, config, summary and exit

    @property
    def tags(self) -> list[str]:
        return list(self.series)

    def scalar_count(self) -> int:
        return int(sum(len(s.steps) for s in self.series.values()))


def is_event_file(name: str) -> bool:
    return EVENT_FILE_MARK in name


def list_event_files(run_dir: Path) -> list[Path]:
    """Event files directly in `run_dir`, in name order (the order TensorBoard reads them)."""
    try:
        entries = sorted(os.listdir(run_dir))
    except OSError:
        return []
    out = []
    for name in entries:
        p = run_dir / name
        if is_event_file(name) and p.is_file() and not p.is_symlink():
            out.append(p)
    return out


MAX_DEPTH = 32  # slime writes tensorboard_log/<project>/<experiment>: a few levels, never dozens


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


def iter_dirs(root: Path, *, max_dirs: int = MAX_DIRS_WALKED, max_depth: int = MAX_DEPTH,
              notes: list[str] | None = None) -> Iterator[tuple[Path, list[str]]]:
    """(directory, names of the non-directory entries in it) for `root` and the directories below it.

    Every directory walk of the monitor goes through here: iterative (no recursion, whatever the depth),
    in name order, never following links, at most `max_depth` levels below `root` and `max_dirs`
    directories. Each limit reached, and each directory that cannot be listed, is said in `notes`.
    """
    too_deep = unreadable = walked = 0
    stack: list[tuple[Path, int]] = [(Path(root), 0)]
    while stack:
        if walked >= max_dirs:
            if notes is not None:
                notes.append(f"{root}: stopped after {max_dirs} directories; runs further on were not looked for")
            break
        directory, depth = stack.pop()
        walked += 1
        try:
            with os.scandir(directory) as entries:
                listed = sorted(entries, key=lambda e: e.name)
        except OSError:
            unreadable += 1
            continue
        subdirs: list[str] = []
        files: list[str] = []
        for entry in listed:
            try:
                (subdirs if entry.is_dir(follow_symlinks=False) else files).append(entry.name)
            except OSError:
                continue
        yield directory, files
        if subdirs and depth >= max_depth:
            too_deep += 1
            continue
        stack.extend((directory / d, depth + 1) for d in reversed(subdirs))
    if notes is not None and too_deep:
        notes.append(f"{root}: {too_deep} director{'y' if too_deep == 1 else 'ies'} more than {max_depth} levels "
                     "down were not entered (slime writes runs a few levels below its log directory)")
    if notes is not None and unreadable:
        notes.append(f"{root}: {unreadable} director{'y' if unreadable == 1 else 'ies'} could not be listed "
                     "(permissions, or a name too long)")


def run_label(root: Path, run_dir: Path) -> str:
    rel = os.path.relpath(run_dir, root)
    return root.name if rel == "." else rel


def files_key(paths: list[Path]) -> tuple[list[os.stat_result], str]:
    """The files' stats and the cache key of a run made of them (name, size and modification time of each)."""
    stats = [p.stat() for p in paths]
    return stats, run_key([(str(p), st.st_size, st.st_mtime_ns) for p, st in zip(paths, stats, strict=True)])


def cached_run(cache, key: str, name: str | None, label: str, on_progress: ProgressFn | None) -> RunData | None:
    """A run read before from exactly these files, renamed when a name is given and marked cached; None on a
    miss."""
    hit = load_blob(cache, key, RunData) if cache is not None else None
    if hit is None:
        return None
    hit.name = name or hit.name
    for f in hit.files:
        f.how = "cached"
    if on_progress is not None:
        on_progress(1.0, label)
    return hit


def read_run(run_dir: str | Path, *, name: str | None = None, cache=None, on_progress: ProgressFn | None = None,
             files: list[Path] | None = None) -> RunData:
    """Read every event file of a run (with the cache when given), then stitch each tag."""
    run_dir = Path(run_dir)
    paths = files if files is not None else list_event_files(run_dir)
    stats, key = files_key(paths)
    hit = cached_run(cache, key, name or run_dir.name, run_dir.name, on_progress)
    if hit is not None:
        return hit
    run = RunData(name=name or run_dir.name, path=str(run_dir))
    sizes = [max(1, st.st_size) for st in stats]
    total = float(sum(sizes)) or 1.0
    done = 0.0
    for p, size in zip(paths, sizes, strict=True):
        def progress(pos: int, n: int, base=done, size=size, label=p.name) -> None:
            if on_progress is not None:
                on_progress(min(1.0, (base + size * (pos / max(n, 1))) / total), label)

        scan, how = read_scan(p, cache, on_progress=progress)
        done += size
        run.scans.append(scan)
        compat_kept = int(accumulator_keep_mask(scan, compatible=True).sum())
        run.files.append(FileReport(
            name=p.name, size=scan.size, scalars=len(scan.steps), tags=len(scan.tags), how=how,
            damage=scan.damage, lost_vs_tbparse=max(0, len(scan.steps) - compat_kept),
            looks_like_events=scan.looks_like_events, tbparse_would_raise=scan.tbparse_would_raise,
            non_scalar_values=scan.non_scalar_values))
        if on_progress is not None:
            on_progress(done / total, p.name)
    stitch(run)
    if cache is not None:
        store_blob(cache, key, replace(run, scans=[]))
    return run


def stitch(run: RunData) -> None:
    """Per tag, in file then record order, a value at step s replaces earlier values at steps >= s."""
    tag_order: list[str] = []
    parts: dict[str, list[tuple[int, np.ndarray]]] = {}
    for fi, scan in enumerate(run.scans):
        if not len(scan.steps):
            continue
        order = np.argsort(scan.tag_ids, kind="stable")
        ids_sorted = scan.tag_ids[order]
        bounds = np.flatnonzero(np.diff(ids_sorted)) + 1
        for chunk in np.split(order, bounds):
            tag = scan.tags[int(scan.tag_ids[chunk[0]])]
            if tag not in parts:
                parts[tag] = []
                tag_order.append(tag)
            parts[tag].append((fi, chunk))
    starts = []
    for tag in tag_order:
        steps = np.concatenate([run.scans[fi].steps[idx] for fi, idx in parts[tag]])
        values = np.concatenate([run.scans[fi].values[idx] for fi, idx in parts[tag]])
        walls = np.concatenate([run.scans[fi].wall_times[idx] for fi, idx in parts[tag]])
        files = np.concatenate([np.full(len(idx), fi, dtype=np.int32) for fi, idx in parts[tag]])
        # keep i iff its step is below every later step (the newest value at a step wins)
        later_min = np.minimum.accumulate(steps[::-1])[::-1]
        later_min = np.append(later_min[1:], np.iinfo(np.int64).max)
        keep = steps < later_min
        if not keep.all():
            run.restarts.extend(_restart_marks(tag, steps, walls, files, run.files))
        run.series[tag] = Series(tag=tag, steps=steps[keep], values=values[keep], wall_times=walls[keep],
                                 files=files[keep])
        known = walls[~np.isnan(walls)]  # a tag whose wall times are all NaN says nothing about the start
        if len(known):
            starts.append(float(known.min()))
    run.start_time = min(starts) if starts else None


def _restart_marks(tag: str, steps: np.ndarray, walls: np.ndarray, files: np.ndarray,
                   reports: list[FileReport]) -> list[RestartMark]:
    """Each point where the tag's step went back, with how many live points it replaced."""
    marks = []
    alive: list[int] = []  # steps of the points currently kept, increasing
    for j, step in enumerate(steps.tolist()):
        if alive and step <= alive[-1]:
            cut = len(alive)
            while cut and alive[cut - 1] >= step:
                cut -= 1
            marks.append(RestartMark(tag=tag, step=step, file=reports[int(files[j])].name,
                                     replaced=len(alive) - cut, wall_time=float(walls[j])))
            del alive[cut:]
        alive.append(step)
    return marks


def restart_summary(run: RunData) -> list[dict]:
    """Restarts grouped by (file, step): one line per place the run went back, with what it replaced."""
    groups: dict[tuple[str, int], dict] = {}
    for m in run.restarts:
        g = groups.setdefault((m.file, m.step), {"file": m.file, "step": m.step, "tags": 0, "replaced": 0,
                                                 "wall_time": m.wall_time})
        g["tags"] += 1
        g["replaced"] += m.replaced
    return sorted(groups.values(), key=lambda g: (g["wall_time"], g["step"]))


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
