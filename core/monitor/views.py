"""What a curve is plotted against, and the table of what is shown (for CSV download, safe to open in a
spreadsheet)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import numpy as np
import pandas as pd

from core.monitor.runs import RunData, Series
from core.monitor.slime_metrics import ROLLOUT_STEPPED, first_present, infer_steps_per_rollout
from core.monitor.smoothing import smooth


class XAxis(str, Enum):
    STEP = "step"
    ROLLOUT = "rollout"
    RELATIVE = "relative"
    WALL = "wall"


X_AXIS_LABELS = {
    XAxis.STEP: "Step (as logged)",
    XAxis.ROLLOUT: "Rollout index (lines up rollout/, train/ and eval/)",
    XAxis.RELATIVE: "Relative time (hours)",
    XAxis.WALL: "Wall time",
}


@dataclass
class RolloutAlignment:
    stride: int  # rollout/* steps per rollout (1, or the train-step stride)
    steps_per_rollout: int  # optimizer steps per rollout (train/* points per rollout)
    how: str


def rollout_alignment(run: RunData, override_steps_per_rollout: int | None = None) -> RolloutAlignment:
    """How this run's steps map to rollout indices (inferred, or the user's number of steps per rollout)."""
    rollout_tag = first_present(run.tags, ("rollout/raw_reward", "rollout/rewards")) or next(
        (t for t in run.tags if t.startswith("rollout/")), None)
    train_tag = first_present(run.tags, ("train/grad_norm", "train/loss")) or next(
        (t for t in run.tags if t.startswith("train/")), None)
    r = run.series[rollout_tag].steps if rollout_tag else np.zeros(0)
    t = run.series[train_tag].steps if train_tag else np.zeros(0)
    stride, k, how = infer_steps_per_rollout(r, t)
    if override_steps_per_rollout and override_steps_per_rollout > 0:
        k = int(override_steps_per_rollout)
        how = f"{k} optimizer step(s) per rollout, as you set it"
    return RolloutAlignment(stride=stride, steps_per_rollout=k, how=how)


def rollout_index(tag: str, steps: np.ndarray, alignment: RolloutAlignment) -> np.ndarray:
    """The rollout each point belongs to: train/* steps divide by steps-per-rollout, the rest by the stride."""
    if tag.startswith("train/"):
        return steps // max(1, alignment.steps_per_rollout if alignment.stride == 1 else alignment.stride)
    if ROLLOUT_STEPPED.match(tag):
        return steps // max(1, alignment.stride)
    return steps


def x_values(series: Series, axis: XAxis, run: RunData, alignment: RolloutAlignment) -> np.ndarray:
    if axis == XAxis.STEP:
        return series.steps
    if axis == XAxis.ROLLOUT:
        if series.tag.startswith("train/"):
            # several optimizer steps per rollout: spread them inside the rollout so the shape stays visible
            k = max(1, alignment.steps_per_rollout if alignment.stride == 1 else alignment.stride)
            return series.steps / k
        return rollout_index(series.tag, series.steps, alignment).astype(np.float64)
    start = run.start_time or 0.0
    if axis == XAxis.RELATIVE:
        return (series.wall_times - start) / 3600.0
    return pd.to_datetime(series.wall_times, unit="s", utc=True).to_numpy()


def shown_table(runs: list[RunData], tags: list[str], axis: XAxis, weight: float,
                alignments: dict[str, RolloutAlignment]) -> pd.DataFrame:
    """Long table of every point shown: run, tag, step, x, value, smoothed, wall time."""
    frames = []
    for run in runs:
        for tag in tags:
            s = run.series.get(tag)
            if s is None or not len(s.steps):
                continue
            frames.append(pd.DataFrame({
                "run": run.name, "tag": tag, "step": s.steps, "x": x_values(s, axis, run, alignments[run.name]),
                "value": s.values, "smoothed": smooth(s.values, weight), "wall_time": s.wall_times,
            }))
    if not frames:
        return pd.DataFrame(columns=["run", "tag", "step", "x", "value", "smoothed", "wall_time"])
    return pd.concat(frames, ignore_index=True)


# A text cell starting with one of these is a formula to a spreadsheet (OWASP, "CSV Injection")
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(cell: str) -> str:
    """A text cell as a spreadsheet shows it and never runs it: one that starts like a formula
    (`=HYPERLINK(...)`, `+cmd|...`, `-1+1`, `@SUM(...)`, a tab or a carriage return) gets a leading `'`."""
    return "'" + cell if cell.startswith(FORMULA_STARTS) else cell


def table_csv(table: pd.DataFrame) -> bytes:
    """The table as UTF-8 CSV for download: run and tag names (text cells) made `spreadsheet_safe`; numbers,
    negative ones included, are written as they are."""
    safe = table.copy()
    for column in safe.columns:
        if not pd.api.types.is_numeric_dtype(safe[column]):
            safe[column] = safe[column].map(lambda c: spreadsheet_safe(c) if isinstance(c, str) else c)
    return safe.to_csv(index=False).encode("utf-8")
