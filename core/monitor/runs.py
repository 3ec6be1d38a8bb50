"""Runs of any source: what was read (RunData, Series, FileReport), the bounded directory walk, and the
stitching of restarts. The readers of each source (core.monitor.tensorboard.run, core.monitor.wandb.run)
build a RunData from their files and stitch it here.

Stitching follows TensorBoard's data server: files are read in name order (which is start-time order),
and within one tag a value at step s replaces every earlier value at a step >= s (a restart re-logs the
steps after its checkpoint, and the newer values win). Each replacement is reported as a restart mark.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from pydantic import BaseModel

from core.monitor.cache import load_blob, run_key
from core.monitor.scan import Damage, FileScan

if TYPE_CHECKING:
    from core.monitor.wandb.log import WandbRunInfo

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
    source: str = "tensorboard"  # "tensorboard" | "wandb" (read by core.monitor.wandb.run)
    wandb: WandbRunInfo | None = None  # a W&B run's name, config, summary and exit
    notes: list[str] = field(default_factory=list)  # what reading it left out (files past the run's limit)

    @property
    def tags(self) -> list[str]:
        return list(self.series)

    def scalar_count(self) -> int:
        return int(sum(len(s.steps) for s in self.series.values()))


MAX_DEPTH = 32  # slime writes tensorboard_log/<project>/<experiment>: a few levels, never dozens


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


def cached_run(cache, key: str, name: str | None, label: str, on_progress: ProgressFn | None,
               path: str | None = None) -> RunData | None:
    """A run read before from exactly these files, renamed when a name is given and marked cached; None on a
    miss. The key names the files by their real paths: `path` is where this caller found the run."""
    hit = load_blob(cache, key, RunData) if cache is not None else None
    if hit is None:
        return None
    hit.name = name or hit.name
    hit.path = path or hit.path
    for f in hit.files:
        f.how = "cached"
    if on_progress is not None:
        on_progress(1.0, label)
    return hit


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
