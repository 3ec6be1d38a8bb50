"""W&B runs: finding their run files, reading them (with the cache) and stitching them like TensorBoard runs.

W&B writes every run, online or offline, to `<dir>/wandb/run-<time>-<id>/run-<id>.wandb` (offline:
`offline-run-<time>-<id>/`; a second directory started in the same second gets a `-1` suffix). slime's
`--wandb-dir` sets `<dir>` and `--wandb-mode offline` picks offline (slime/utils/arguments.py:1161-1200@624b824a).
One slime run is several files with the same id: the driver opens the run and the rollout manager and each
Megatron actor join it (slime/observability/wandb_utils.py:22-165@624b824a), and a resumed run appends a new
directory with the same id. So files are grouped by run id, put in start-time order, and stitched as a
TensorBoard run's event files are: within a tag a value at step s replaces earlier values at steps >= s.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, replace
from pathlib import Path

from core.monitor.cache import get_json, load_blob, path_id, scan_key, set_json, store_blob
from core.monitor.runs import (
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
from core.monitor.scan import accumulator_keep_mask
from core.monitor.wandb.log import WandbRunInfo, WandbScan, merge_wandb, scan_wandb_bytes
from core.paths import open_regular

WANDB_SUFFIX = ".wandb"
RUN_FILE = re.compile(r"^run-(?P<id>.+)\.wandb$")
RUN_DIR = re.compile(r"^(?P<offline>offline-)?run-(?P<stamp>\d{8}_\d{6})-(?P<rest>.+)$")
MAX_FILES_PER_RUN = 200
TAIL_CHECK = 4096
LATEST_PREFIX = "monitor:wandb-latest:v3:"


@dataclass
class WandbFile:
    """One run file found on disk, with what its names say (read before any byte of it)."""

    path: Path
    run_id: str
    stamp: str  # the directory's start time (YYYYMMDD_HHMMSS), "" when the file is not in a run directory
    seq: int  # the directory's `-N` suffix (two processes starting in the same second)
    offline: bool | None


def is_wandb_file(name: str) -> bool:
    return name.endswith(WANDB_SUFFIX)


def describe_file(path: Path) -> WandbFile:
    m = RUN_FILE.match(path.name)
    run_id = m.group("id") if m else path.stem
    d = RUN_DIR.match(path.parent.name)
    stamp, seq, offline = "", 0, None
    if d:
        rest = d.group("rest")
        if rest == run_id:
            stamp = d.group("stamp")
        elif rest.startswith(run_id + "-") and rest[len(run_id) + 1:].isdigit():
            stamp, seq = d.group("stamp"), int(rest[len(run_id) + 1:])
        offline = bool(d.group("offline")) if stamp else None
    return WandbFile(path=path, run_id=run_id, stamp=stamp, seq=seq, offline=offline)


def discover_wandb_runs(root: Path, *, max_dirs: int = MAX_DIRS_WALKED,
                        notes: list[str] | None = None) -> list[list[WandbFile]]:
    """The W&B runs under `root` (itself included): run files grouped by run id, each group in start order.

    A run's files sit in sibling directories (`wandb/run-*-<id>/`), so the id is taken together with the
    directory above them: two copies of a run in two folders stay two runs. Links are not followed (W&B's own
    `latest-run` link would count a run twice)."""
    groups: dict[tuple[str, str], list[WandbFile]] = {}
    walked = 0
    for dirpath, filenames in iter_dirs(root, max_dirs=max_dirs, notes=notes):  # iterative and bounded
        walked += 1
        for name in filenames:
            p = Path(dirpath) / name
            if not is_wandb_file(name) or p.is_symlink() or not p.is_file():
                continue
            found = describe_file(p)
            group = groups.setdefault((str(p.parent.parent), found.run_id), [])
            if len(group) < MAX_FILES_PER_RUN:
                group.append(found)
        if walked >= max_dirs or len(groups) >= MAX_RUNS:
            break
    return [sorted(files, key=_file_order) for _, files in sorted(groups.items())]


def _file_order(f: WandbFile) -> tuple:
    return (f.stamp or "99999999_999999", f.seq, str(f.path))


def run_location(files: list[Path]) -> Path:
    """The directory a run is shown under: its run directory, or the one holding all its run directories."""
    parents = {p.parent for p in files}
    if len(parents) == 1:
        return next(iter(parents))
    return Path(os.path.commonpath([str(p) for p in parents]))


def read_wandb_scan(path: Path, cache=None, *, on_progress=None) -> tuple[WandbScan, str]:
    """The scan of one run file and how it was obtained: "cached", "appended" or "read" (as `cache.read_scan`).

    A file that has only grown since it was cached (a run still being written) is read from where the cached
    scan ended, after checking that the bytes before that point are unchanged."""
    with open_regular(path) as fh:  # regular files only, opened without blocking
        st = os.fstat(fh.fileno())
        key = scan_key(str(path), st.st_size, st.st_mtime_ns)
        if cache is not None:
            hit = load_blob(cache, key, WandbScan)
            if hit is not None:
                return hit, "cached"
        data = fh.read()
    how = "read"
    scan: WandbScan | None = None
    if cache is not None:
        latest = get_json(cache, LATEST_PREFIX + path_id(str(path)))
        if isinstance(latest, dict) and latest.get("size", 0) < len(data):
            old = load_blob(cache, latest.get("key", ""), WandbScan)
            end = old.clean_end if old is not None else 0
            lo = max(0, end - TAIL_CHECK)
            if old is not None and 0 < end <= len(data) and _digest(data[lo:end]) == latest.get("tail_digest"):
                tail = scan_wandb_bytes(data, path=str(path), size=st.st_size, mtime_ns=st.st_mtime_ns, start=end,
                                        prior=old, on_progress=on_progress)
                scan = merge_wandb(old, tail)
                how = "appended"
    if scan is None:
        scan = scan_wandb_bytes(data, path=str(path), size=st.st_size, mtime_ns=st.st_mtime_ns,
                                on_progress=on_progress)
    if cache is not None:
        store_blob(cache, key, scan)
        lo = max(0, scan.clean_end - TAIL_CHECK)
        set_json(cache, LATEST_PREFIX + path_id(str(path)), {"key": key, "size": st.st_size,
                                              "tail_digest": _digest(data[lo:scan.clean_end])})
    return scan, how


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def read_wandb_run(files: list[Path], *, name: str | None = None, cache=None,
                   on_progress: ProgressFn | None = None) -> RunData:
    """Read the run files of one W&B run (with the cache when given), order them by start time, stitch."""
    paths = [Path(p) for p in files]
    location = run_location(paths)
    stats, key = files_key(paths)
    hit = cached_run(cache, key, name, location.name, on_progress)
    if hit is not None:
        return hit
    sizes = [max(1, st.st_size) for st in stats]
    total = float(sum(sizes)) or 1.0
    done = 0.0
    read: list[tuple[WandbScan, str, Path]] = []
    for p, size in zip(paths, sizes, strict=True):
        def progress(pos: int, n: int, base=done, size=size, label=p.name) -> None:
            if on_progress is not None:
                on_progress(min(1.0, (base + size * (pos / max(n, 1))) / total), label)

        scan, how = read_wandb_scan(p, cache, on_progress=progress)
        done += size
        read.append((scan, how, p))
    # start-time order (what the files say), falling back to the order their directory names give
    order = sorted(range(len(read)), key=lambda i: (read[i][0].info.start_time is None,
                                                     read[i][0].info.start_time or 0.0, i))
    info = merge_info([read[i][0].info for i in order])
    run = RunData(name=name or run_name(info, paths), path=str(location), source="wandb", wandb=info)
    for i in order:
        scan, how, p = read[i]
        run.scans.append(scan)
        run.files.append(FileReport(
            name=_relative(p, location), size=scan.size, scalars=len(scan.steps), tags=len(scan.tags), how=how,
            damage=scan.damage, lost_vs_tbparse=max(0, len(scan.steps) - int(
                accumulator_keep_mask(scan, compatible=True).sum())),
            looks_like_events=scan.looks_like_events, non_scalar_values=scan.non_scalar_values))
    if on_progress is not None:
        on_progress(1.0, location.name)
    stitch(run)
    if cache is not None:
        store_blob(cache, key, replace(run, scans=[]))
    return run


def _relative(p: Path, location: Path) -> str:
    try:
        return str(p.relative_to(location))
    except ValueError:
        return p.name


def run_name(info: WandbRunInfo, paths: list[Path]) -> str:
    """How a W&B run is named in the app: its W&B name with its id, or the id alone."""
    run_id = info.run_id or describe_file(paths[0]).run_id
    shown = info.display_name or info.group
    return f"{shown} ({run_id})" if shown and shown != run_id else run_id


def merge_info(infos: list[WandbRunInfo]) -> WandbRunInfo:
    """One run's metadata from its files, in start order: later values win, the config keys add up."""
    out = WandbRunInfo()
    for info in infos:
        for field_name in ("run_id", "project", "entity", "display_name", "group", "job_type", "host",
                           "cli_version"):
            value = getattr(info, field_name)
            if value and not getattr(out, field_name):
                setattr(out, field_name, value)
        if info.start_time is not None and (out.start_time is None or info.start_time < out.start_time):
            out.start_time = info.start_time
        for field_name in ("exit_code", "runtime_s", "offline"):
            if getattr(info, field_name) is not None:
                setattr(out, field_name, getattr(info, field_name))
        out.resumed = out.resumed or info.resumed
        out.config = {**out.config, **info.config}
        out.summary = {**out.summary, **info.summary}
        out.config_truncated = out.config_truncated or info.config_truncated
        out.skipped_values = out.skipped_values + info.skipped_values
    return out
