"""What a path holds for the monitor: TensorBoard runs, W&B runs, or both, found without reading any file.

A path may be a TensorBoard event file, a W&B run file (`run-<id>.wandb`), a run directory of either kind,
or a directory holding many (`tensorboard_log/<project>`, a `wandb/` directory, or a folder with both).
`find_runs` lists them as `FoundRun`s (plain data, kept in the page's session state); `open_run` reads one.
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel

from core.monitor.runs import ProgressFn, RunData, run_label
from core.monitor.scan import FileScan
from core.monitor.stream import Format
from core.monitor.tensorboard.run import (
    EVENTS,
    list_event_files,
    read_run,
    read_scan,
    walk_runs,
)
from core.monitor.wandb.log import WandbRunInfo
from core.monitor.wandb.proto import WandbProtoUnavailable
from core.monitor.wandb.run import (
    RUN_FILES,
    discover_wandb_runs,
    is_wandb_file,
    merge_info,
    read_wandb_run,
    read_wandb_scan,
)

SOURCE_NAMES = {"tensorboard": "TensorBoard", "wandb": "W&B"}
UNREADABLE_SOURCE = (WandbProtoUnavailable,)  # what open_run raises, besides OSError, when a kind cannot be read here


class FoundRun(BaseModel):
    """One run found under a path: its kind, how it is labelled, where it is, and (W&B, single files) its files."""

    kind: str  # "tensorboard" | "wandb"
    label: str
    path: str
    files: list[str] = []


def find_runs(root: Path, notes: list[str] | None = None) -> list[FoundRun]:
    """Every TensorBoard and W&B run at `root` (a file or a directory; links below it are not followed).

    Directories are walked iteratively and within bounds (core.monitor.runs.iter_dirs); what the walk left
    out is added to `notes`."""
    root = Path(root)
    if root.is_file():
        if is_wandb_file(root.name):
            return [FoundRun(kind="wandb", label=root.name, path=str(root.parent), files=[str(root)])]
        return [FoundRun(kind="tensorboard", label=root.name, path=str(root.parent), files=[str(root)])]
    tb_dirs, walk_notes = walk_runs(root)
    if notes is not None:
        notes.extend(walk_notes)
    found = [FoundRun(kind="tensorboard", label=run_label(root, d), path=str(d)) for d in tb_dirs]
    for group in discover_wandb_runs(root, notes=notes):
        files = [str(f.path) for f in group]
        found.append(FoundRun(kind="wandb", label=_wandb_label(root, group[0].path, group[0].run_id),
                              path=str(group[0].path.parent), files=files))
    return found


def _wandb_label(root: Path, first: Path, run_id: str) -> str:
    """`<folder>/<id>` where the folder says where the run was found (the id alone at the top)."""
    rel = os.path.relpath(first.parent, root)
    parts = [p for p in Path(rel).parts if p not in (".",)]
    # drop the run directory itself (run-<time>-<id>): the id names the run across its directories
    if parts and run_id in parts[-1]:
        parts = parts[:-1]
    if parts and parts[-1] == "wandb":
        parts = parts[:-1]
    return "/".join([*parts, run_id]) if parts else run_id


def open_run(found: FoundRun, *, cache=None, on_progress: ProgressFn | None = None) -> RunData:
    """Read one found run (with the cache when given)."""
    if found.kind == "wandb":
        run = read_wandb_run([Path(f) for f in found.files], cache=cache, on_progress=on_progress)
        if run.wandb is not None and (run.wandb.display_name or run.wandb.group):
            shown = run.wandb.display_name or run.wandb.group
            run.name = found.label if shown in found.label else f"{found.label} ({shown})"
        else:
            run.name = found.label
        return run
    files = [Path(f) for f in found.files] or None
    return read_run(found.path, name=found.label, cache=cache, on_progress=on_progress, files=files)


def describe_found(found: list[FoundRun]) -> str:
    """'2 TensorBoard runs and 1 W&B run (3 run files)' for what a path held."""
    parts = []
    for kind in ("tensorboard", "wandb"):
        runs = [f for f in found if f.kind == kind]
        if not runs:
            continue
        text = f"{len(runs)} {SOURCE_NAMES[kind]} run{'s' if len(runs) != 1 else ''}"
        if kind == "wandb":
            n_files = sum(len(f.files) for f in runs)
            text += f" ({n_files} run file{'s' if n_files != 1 else ''})"
        parts.append(text)
    return " and ".join(parts) if parts else "no TensorBoard event files and no W&B run files"


# -- what following a run needs of each source (core.monitor.follow) -----------------------------------------

def file_format(kind: str) -> Format:
    """How a source's files are scanned from an offset (core.monitor.stream). GPU logs (nvidia-smi CSVs, job
    logs) are lines, not records: they are followed by `read_gpu_files` with its cursors instead."""
    return RUN_FILES if kind == "wandb" else EVENTS


def list_run_files(found: FoundRun) -> list[Path]:
    """The files a found run is made of now: a TensorBoard run directory is listed again (a restart adds a
    file); a W&B run and files named one by one keep the files found."""
    if found.files:
        return [Path(f) for f in found.files]
    return list_event_files(Path(found.path))


def list_gpu_files(run: RunData, named: list[str | Path] = ()) -> list[Path]:
    """The GPU logs of a run now (core.monitor.gpu): the files the user named, the nvidia-smi CSVs and job logs
    found in the run's folders (found again each time: a node that starts logging adds a file) and, for W&B,
    the run files whose system metrics are GPU data. Following a run watches these beside its scalar files."""
    from core.monitor.gpu import discover_gpu_logs
    from core.monitor.gpu.runs import run_wandb_files, search_dirs

    found = [p for d in search_dirs(run) if d.is_dir() for p in discover_gpu_logs(d)]
    return list(dict.fromkeys([*(Path(p) for p in named), *found, *run_wandb_files(run)]))


def read_gpu_files(run: RunData, named: list[str | Path] = (), cursors: dict | None = None):
    """A run's GPU data (`RunGpus`); with `cursors` kept between calls, each GPU log that only grew is read
    from its saved offset (a line or record still being written waits for the next read)."""
    from core.monitor.gpu import read_run_gpus

    return read_run_gpus(run, list(named), cursors=cursors)


def read_file_scan(kind: str, path: Path, cache=None) -> tuple[FileScan, str]:
    """One file's scan through the cache, by its source."""
    return read_wandb_scan(path, cache) if kind == "wandb" else read_scan(path, cache)


def merge_file_infos(scans: list[FileScan]) -> WandbRunInfo:
    """A W&B run's metadata from the scans of its files (in the run's file order)."""
    return merge_info([s.info for s in scans if hasattr(s, "info")])
