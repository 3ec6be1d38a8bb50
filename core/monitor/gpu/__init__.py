"""GPU data of a run: W&B system metrics, nvidia-smi CSV logs and slime's Memory-Usage lines, as per-GPU series.

Modules: `models` (the pydantic models: per-GPU and per-node series, phase marks, file reports, summaries),
`reading` (bounded line reading), `wandb_stats` (the `stats` records of W&B run files), `nvidia_smi` (CSV
logs), `job_log` (Memory-Usage lines as Ray prints them), `collect` (finding and reading a run's GPU files).
"""

from core.monitor.gpu.collect import discover_gpu_logs, read_gpu_data
from core.monitor.gpu.models import GpuData, GpuFileReport, GpuSeries, GpuSummary, HostSeries, PhaseMark

__all__ = ["GpuData", "GpuFileReport", "GpuSeries", "GpuSummary", "HostSeries", "PhaseMark", "discover_gpu_logs",
           "read_gpu_data"]
