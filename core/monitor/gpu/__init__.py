"""GPU data of a run: W&B system metrics, nvidia-smi CSV logs and slime's Memory-Usage lines, as per-GPU series,
and the seed's second check on them, "GPUs are busy".

Modules: `models` (the pydantic models: per-GPU and per-node series, phase marks, file reports, summaries),
`reading` (bounded line reading), `wandb_stats` (the `stats` records of W&B run files), `nvidia_smi` (CSV
logs), `job_log` (Memory-Usage lines as Ray prints them), `collect` (finding and reading GPU files),
`phases` (slime's phases in wall time, local clocks put on the run's, roles), `judge` (per-GPU numbers and
the MON012 verdict), `runs` (all of it for one run), `plots` (per-GPU charts over time, phases shaded),
`synthetic` (GPU logs shaped like a slime run's, for tests and the README).
"""

from core.monitor.gpu.collect import discover_gpu_logs, read_gpu_data
from core.monitor.gpu.judge import check_gpus_busy, summarize
from core.monitor.gpu.models import GpuData, GpuFileReport, GpuSeries, GpuSummary, HostSeries, PhaseMark
from core.monitor.gpu.nvidia_smi import RECORD_COMMAND
from core.monitor.gpu.phases import Phases
from core.monitor.gpu.runs import RunGpus, read_run_gpus

__all__ = ["RECORD_COMMAND", "GpuData", "GpuFileReport", "GpuSeries", "GpuSummary", "HostSeries", "PhaseMark",
           "Phases", "RunGpus", "check_gpus_busy", "discover_gpu_logs", "read_gpu_data", "read_run_gpus",
           "summarize"]
