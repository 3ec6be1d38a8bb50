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

import os
import re
from dataclasses import dataclass, replace
from pathlib import Path

from core.monitor.cache import batched, store_blob
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
from core.monitor.stream import Format, read_cached
from core.monitor.wandb.log import BLOCK, MAX_RECORD, WandbRunInfo, WandbScan, merge_wandb, scan_wandb_bytes

WANDB_SUFFIX = ".wandb"
RUN_FILE = re.compile(r"^run-(?P<id>.+)\.wandb$")
RUN_DIR = re.compile(r"^(?P<offline>offline-)?run-(?P<stamp>\d{8}_\d{6})-(?P<rest>.+)$")
MAX_FILES_PER_RUN = 200


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
    dropped_files: dict[tuple[str, str], int] = {}
    runs_left_out = 0
    for dirpath, filenames in iter_dirs(root, max_dirs=max_dirs, notes=notes):  # iterative and bounded
        for name in filenames:
            if not is_wandb_file(name):
                continue
            p = Path(dirpath) / name
            if p.is_symlink() or not p.is_file():
                continue
            found = describe_file(p)
            group_key = (str(p.parent.parent), found.run_id)
            group = groups.get(group_key)
            if group is None:
                if len(groups) >= MAX_RUNS:
                    runs_left_out += 1
                    continue
                group = groups[group_key] = []
            if len(group) < MAX_FILES_PER_RUN:
                group.append(found)
            else:
                dropped_files[group_key] = dropped_files.get(group_key, 0) + 1
        if runs_left_out and len(groups) >= MAX_RUNS:
            break
    if notes is not None:
        for (_, run_id), n in sorted(dropped_files.items()):
            notes.append(f"{root}: W&B run {run_id} has more than {MAX_FILES_PER_RUN} run files; the first "
                         f"{MAX_FILES_PER_RUN} were read and {n} more were left out")
        if runs_left_out:
            notes.append(f"{root}: stopped at {MAX_RUNS} W&B runs; {runs_left_out} run file(s) of further runs "
                         "(and any in folders not walked after that) were left out; narrow the path to read them")
    return [sorted(files, key=_file_order) for _, files in sorted(groups.items())]


def _file_order(f: WandbFile) -> tuple:
    return (f.stamp or "99999999_999999", f.seq, str(f.path))


def run_location(files: list[Path]) -> Path:
    """The directory a run is shown under: its run directory, or the one holding all its run directories."""
    parents = {p.parent for p in files}
    if len(parents) == 1:
        return next(iter(parents))
    return Path(os.path.commonpath([str(p) for p in parents]))


RUN_FILES = Format(name="wandb", kind=WandbScan, scan=scan_wandb_bytes, merge=merge_wandb, align=BLOCK,
                   max_window=MAX_RECORD + 4 * BLOCK)


def read_wandb_scan(path: Path, cache=None, *, on_progress=None) -> tuple[WandbScan, str]:
    """The scan of one run file and how it was obtained: "cached", "appended" or "read" (core.monitor.stream).

    A file that has only grown since it was cached (a run still being written) is read from where the cached
    scan ended, after checking that the bytes before that point are unchanged."""
    return read_cached(path, cache, RUN_FILES, on_progress=on_progress)


def read_wandb_run(files: list[Path], *, name: str | None = None, cache=None,
                   on_progress: ProgressFn | None = None) -> RunData:
    """Read the run files of one W&B run (with the cache when given), order them by start time, stitch."""
    paths = [Path(p) for p in files]
    location = run_location(paths)
    stats, key = files_key(paths)
    hit = cached_run(cache, key, name, location.name, on_progress, path=str(location))
    if hit is not None:
        return hit
    sizes = [max(1, st.st_size) for st in stats]
    total = float(sum(sizes)) or 1.0
    done = 0.0
    read: list[tuple[WandbScan, str, Path]] = []
    with batched(cache) as writes:  # the run's cache writes, made together
        for p, size in zip(paths, sizes, strict=True):
            def progress(pos: int, n: int, base=done, size=size, label=p.name) -> None:
                if on_progress is not None:
                    on_progress(min(1.0, (base + size * (pos / max(n, 1))) / total), label)

            scan, how = read_wandb_scan(p, writes, on_progress=progress)
            done += size
            read.append((scan, how, p))
        run = assemble_run(read, location, name, paths)
        if on_progress is not None:
            on_progress(1.0, location.name)
        if writes is not None:
            store_blob(writes, key, replace(run, scans=[]))
    return run


def assemble_run(read: list[tuple[WandbScan, str, Path]], location: Path, name: str | None,
                 paths: list[Path]) -> RunData:
    """One run from the scans of its files: in start-time order (what the files say, else their directory
    names' order), their metadata merged, stitched."""
    order = sorted(range(len(read)), key=lambda i: (read[i][0].info.start_time is None,
                                                     read[i][0].info.start_time or 0.0, i))
    info = merge_info([read[i][0].info for i in order])
    run = RunData(name=name or run_name(info, paths), path=str(location), source="wandb", wandb=info)
    for i in order:
        scan, how, p = read[i]
        run.scans.append(scan)
        run.files.append(file_report(_relative(p, location), scan, how))
    stitch(run)
    return run


def file_report(name: str, scan: WandbScan, how: str) -> FileReport:
    """What was read from one run file, as a run lists it."""
    return FileReport(
        name=name, size=scan.size, scalars=len(scan.steps), tags=len(scan.tags), how=how,
        damage=scan.damage, lost_vs_tbparse=max(0, len(scan.steps) - int(
            accumulator_keep_mask(scan, compatible=True).sum())),
        looks_like_events=scan.looks_like_events, non_scalar_values=scan.non_scalar_values)


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
