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
from core.monitor.tensorboard.run import is_event_file, read_run, walk_runs
from core.monitor.wandb.run import discover_wandb_runs, is_wandb_file, read_wandb_run

SOURCE_NAMES = {"tensorboard": "TensorBoard", "wandb": "W&B"}


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
    for group in discover_wandb_runs(root):
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


def holds_run_files(names: list[str]) -> bool:
    return any(is_event_file(n) or is_wandb_file(n) for n in names)
