"""What the GPU readers return: per-GPU series over time, host series, marks of slime's phases, and per-file reports.

Series hold numpy arrays (seconds since the epoch, then one float per sample; NaN where a sample lacks the
value). Every reader keeps its input bounded (see `reading`), so a series never holds more than
`MAX_SAMPLES_PER_SERIES` samples and a read never more than `MAX_SAMPLES_TOTAL`.
"""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

SOURCES = ("wandb", "nvidia-smi", "slime-log")
SOURCE_LABELS = {"wandb": "W&B system metrics", "nvidia-smi": "nvidia-smi CSV log",
                 "slime-log": "slime's Memory-Usage lines"}
MAX_SAMPLES_PER_SERIES = 500_000
MAX_SAMPLES_TOTAL = 2_000_000
ROLES = ("training", "rollout", "colocated", "unknown")


def time_order(times: np.ndarray) -> slice | np.ndarray:
    """The order that sorts samples by time: all of them as they are when already sorted (the usual case)."""
    if len(times) < 2 or bool(np.all(times[1:] >= times[:-1])):
        return slice(None)
    return np.argsort(times, kind="stable")


def _empty() -> np.ndarray:
    return np.zeros(0, dtype=np.float64)


class GpuSeries(BaseModel):
    """One GPU of one node over time, from one source.

    `gpu` is the device index the source gives (nvidia-smi's and W&B's index on the node), or for slime's
    Memory-Usage lines the global rank that printed them (`gpu_is_rank`). Memory is in MiB."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    source: str = Field(pattern="^(wandb|nvidia-smi|slime-log)$")
    node: str
    gpu: int
    gpu_is_rank: bool = False
    name: str = ""  # the GPU model, where the source names it
    files: list[str] = Field(default_factory=list)
    role: str = Field(default="unknown", pattern="^(training|rollout|colocated|unknown)$")
    role_how: str = ""
    times: np.ndarray = Field(default_factory=_empty)
    utilization: np.ndarray = Field(default_factory=_empty)  # percent of time a kernel ran (0-100)
    memory_used: np.ndarray = Field(default_factory=_empty)  # MiB
    memory_total: np.ndarray = Field(default_factory=_empty)  # MiB
    power: np.ndarray = Field(default_factory=_empty)  # W
    temperature: np.ndarray = Field(default_factory=_empty)  # degrees C

    @property
    def label(self) -> str:
        where = f"rank {self.gpu}" if self.gpu_is_rank else f"GPU {self.gpu}"
        return f"{self.node} {where}" if self.node else where

    @property
    def samples(self) -> int:
        return int(len(self.times))


class HostSeries(BaseModel):
    """CPU and host memory of one node over time (W&B system metrics, slime's Memory-Usage lines)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    source: str
    node: str
    times: np.ndarray = Field(default_factory=_empty)
    cpu_percent: np.ndarray = Field(default_factory=_empty)
    memory_percent: np.ndarray = Field(default_factory=_empty)
    memory_used: np.ndarray = Field(default_factory=_empty)  # MiB


class PhaseMark(BaseModel):
    """A moment slime names in its job log: before/after a weight update, an offload, a wake-up."""

    time: float
    node: str
    rank: int | None = None
    what: str


class GpuFileReport(BaseModel):
    """What one file gave: its kind, how many samples of how many GPUs, and what was skipped in it."""

    path: str
    kind: str  # a key of SOURCE_LABELS, or "none" when nothing GPU-related was found in it
    samples: int = 0
    gpus: int = 0
    skipped_lines: int = 0
    notes: list[str] = Field(default_factory=list)


class GpuData(BaseModel):
    """Everything read about a run's GPUs: series, host series, phase marks, per-file reports, notes."""

    series: list[GpuSeries] = Field(default_factory=list)
    host: list[HostSeries] = Field(default_factory=list)
    marks: list[PhaseMark] = Field(default_factory=list)
    files: list[GpuFileReport] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)

    @property
    def has_utilization(self) -> bool:
        return any(np.isfinite(s.utilization).any() for s in self.series if len(s.utilization))

    def sources(self) -> list[str]:
        return sorted({s.source for s in self.series} | {h.source for h in self.host})


class GpuSummary(BaseModel):
    """One GPU in numbers, for `logs --format json` (`runs[].gpus`) and the page's table."""

    source: str
    node: str
    gpu: int
    gpu_is_rank: bool = False
    role: str = "unknown"
    samples: int
    first_time: float | None = None
    last_time: float | None = None
    utilization_median: float | None = None
    utilization_p10: float | None = None
    utilization_p90: float | None = None
    idle_fraction: float | None = None
    memory_max_mib: float | None = None
    memory_total_mib: float | None = None
    memory_max_fraction: float | None = None
    power_median_w: float | None = None
    temperature_max_c: float | None = None
