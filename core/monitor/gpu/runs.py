"""A run's GPU data in one call: its W&B files' system metrics, the GPU logs found in its directory and the ones
the user names, put on the run's clock, with roles, phases, per-GPU numbers and the "GPUs are busy" verdict."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from core.monitor.gpu.collect import discover_gpu_logs, read_gpu_data
from core.monitor.gpu.judge import check_gpus_busy, summarize
from core.monitor.gpu.models import GpuData, GpuSummary
from core.monitor.gpu.phases import Phases, assign_roles, run_phases, shift_to_run
from core.monitor.runs import RunData
from core.monitor.verdicts import Verdict


class RunGpus(BaseModel):
    """What was read about one run's GPUs, and where it was looked for."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    data: GpuData = Field(default_factory=GpuData)
    phases: Phases = Field(default_factory=Phases)
    looked_in: list[str] = Field(default_factory=list)

    def summaries(self) -> list[GpuSummary]:
        return [summarize(s) for s in self.data.series]

    def verdict(self) -> Verdict:
        return check_gpus_busy(self.data, self.phases, self.looked_in)


def run_wandb_files(run: RunData) -> list[Path]:
    """The run files of a W&B run (their system metrics are GPU data)."""
    if run.source != "wandb":
        return []
    paths = [Path(f.path) for f in run.scans if getattr(f, "path", "")]
    return paths or [Path(run.path) / f.name for f in run.files]


def search_dirs(run: RunData) -> list[Path]:
    """Where GPU logs of a run are looked for: its directory, and for W&B the folder holding `wandb/`."""
    where = Path(run.path)
    dirs = [where]
    if run.source == "wandb":
        top = next((p for p in (where, *where.parents) if p.name == "wandb"), None)
        if top is not None:
            dirs = [top.parent]
    return dirs


def read_run_gpus(run: RunData, gpu_logs: list[str | Path] = (), *, discover: bool = True,
                  dirs: list[Path] | None = None, cursors: dict | None = None) -> RunGpus:
    """Everything about the GPUs of `run`: the files in `gpu_logs` (named by the user), the logs found in the
    run's directory or in `dirs` (when `discover`), and the run's own W&B files. `cursors` (kept by the caller
    between calls) lets text logs that only grew be read from where the last call stopped."""
    notes: list[str] = []
    dirs = (search_dirs(run) if dirs is None else dirs) if discover else []
    found: list[Path] = []
    for d in dirs:
        if d.is_dir():
            found += discover_gpu_logs(d, notes)
    named = [Path(p) for p in gpu_logs]
    data = read_gpu_data([*named, *found], run_wandb_files(run), explicit=len(named), cursors=cursors)
    data.notes = notes + data.notes
    data.notes += shift_to_run(data, run_phases(run), _run_span(run))  # the run's curves set the clock
    phases = run_phases(run, data)
    assign_roles(data, run, phases)
    return RunGpus(data=data, phases=phases, looked_in=[str(d) for d in dirs])


def _run_span(run: RunData) -> tuple[float, float] | None:
    lo = hi = None
    for s in run.series.values():
        if len(s.wall_times):
            a, b = float(s.wall_times.min()), float(s.wall_times.max())
            lo = a if lo is None else min(lo, a)
            hi = b if hi is None else max(hi, b)
    return (lo, hi) if lo is not None else None
