"""The training monitor: slime's TensorBoard logs and W&B run files read, stitched, smoothed, plotted and checked.

One sub-package per source, over a shared core at the top.
Sources (each turns its files into the shared `FileScan` and `RunData`):
- `tensorboard/`: `events` (one event file, damage found and read past), `decode` (records to columns:
  numpy for slime's scalar events, protobuf for the rest), `crc` (TFRecord checksums),
  `run` (a directory's event files read through the cache and stitched; tbparse's frame rebuilt),
  `synthetic` (slime-like event files for tests and benchmarks).
- `wandb/`: `proto` (the record messages, from the installed `wandb` package's definitions, without
  importing it), `log` (one `.wandb` file: framing, checksums, damage, history rows to scalars), `run` (runs
  grouped by id, cached, stitched), `config` (the logged config as launch arguments), `synthetic` (runs
  written by the SDK for tests and benchmarks).
- `gpu/`: GPU data (W&B system metrics, nvidia-smi CSV logs, slime's Memory-Usage lines) as per-GPU series, and the
  "GPUs are busy" check on them (see its package docstring).
Shared core: `scan` (FileScan, Damage, appending, TensorBoard's purge rules), `runs` (RunData, the bounded
directory walk, stitching of restarts), `stream` (a file read in bounded windows from a saved offset, through
the cache), `follow` (a run followed while it is written: refreshes, changes, "since you last looked"),
`cache` (diskcache by real path and file identity, batched writes) over `blob` (objects as data, compact),
`sources` (what a path holds, of any kind: the one module that dispatches to the sources), `views` (x axes,
rollout alignment, shown table), `smoothing` (TensorBoard's EMA and outlier range), `verdicts` (the
checklist), `efficiency` (MFU from perf/actor_train_tflops and the time to finish, MON013-MON014), `report`,
`plots` (plotly figures) over `downsample` (a curve's points cut to the chart's pixel columns), `archive`
(uploads and zips, safely; `UploadSlots`, a session's upload boxes), `slime_metrics` (what slime logs), and `provider` (`MonitorProvider`: the one face a page asks for runs, verdicts
and charts; it opens each run once and then only refreshes). Sources import the shared core; the shared core
reaches a source only through `sources` (tests/test_architecture.py checks both).

May import: the shared vocabulary, the root of core.launch (a W&B run's logged config is checked as launch
arguments), and the root of core.plan (the GPU table's peaks and the MFU rule, for `efficiency`).

The names below are the package's public face for the front-ends (the page, ui/, `slime-assistant logs`); they
load on first use, so `logs --help` imports no reader.
"""

from __future__ import annotations

from core.exports import lazy_exports

_EXPORTS = {
    "UploadSlots": "core.monitor.archive",
    "batched": "core.monitor.cache",
    "FollowEvent": "core.monitor.follow",
    "Follower": "core.monitor.follow",
    "RECORD_COMMAND": "core.monitor.gpu",
    "RunGpus": "core.monitor.gpu",
    "read_run_gpus": "core.monitor.gpu",
    "discover_gpu_logs": "core.monitor.gpu.collect",
    "summarize_host": "core.monitor.gpu.judge",
    "SOURCE_LABELS": "core.monitor.gpu.models",
    "gpu_figure": "core.monitor.gpu.plots",
    "run_wandb_files": "core.monitor.gpu.runs",
    "search_dirs": "core.monitor.gpu.runs",
    "MonitorProvider": "core.monitor.provider",
    "OpenProblem": "core.monitor.provider",
    "seen_after": "core.monitor.provider",
    "source_key": "core.monitor.provider",
    "still_allowed": "core.monitor.provider",
    "MAX_RESTARTS_LISTED": "core.monitor.report",
    "checklist_text": "core.monitor.report",
    "damage_lines": "core.monitor.report",
    "evidence_rows": "core.monitor.report",
    "read_findings": "core.monitor.report",
    "RunData": "core.monitor.runs",
    "restart_summary": "core.monitor.runs",
    "FILTER_HELP": "core.monitor.slime_metrics",
    "SRC_TB": "core.monitor.slime_metrics",
    "SRC_TB_ARGS": "core.monitor.slime_metrics",
    "checklist_tags": "core.monitor.slime_metrics",
    "draft_tensorboard_command": "core.monitor.slime_metrics",
    "draft_tensorboard_flags": "core.monitor.slime_metrics",
    "filter_tags": "core.monitor.slime_metrics",
    "group_of": "core.monitor.slime_metrics",
    "ordered_tags": "core.monitor.slime_metrics",
    "DEFAULT_WEIGHT": "core.monitor.smoothing",
    "MAX_WEIGHT": "core.monitor.smoothing",
    "FoundRun": "core.monitor.sources",
    "SOURCE_NAMES": "core.monitor.sources",
    "describe_found": "core.monitor.sources",
    "find_runs": "core.monitor.sources",
    "list_run_files": "core.monitor.sources",
    "open_run": "core.monitor.sources",
    "Verdict": "core.monitor.verdicts",
    "run_verdicts": "core.monitor.verdicts",
    "with_gpu_verdict": "core.monitor.verdicts",
    "efficiency_verdicts": "core.monitor.efficiency",
    "table_csv": "core.monitor.views",
    "placeholder_figure": "core.monitor.plots",
    "RolloutAlignment": "core.monitor.views",
    "XAxis": "core.monitor.views",
    "X_AXIS_LABELS": "core.monitor.views",
    "as_script_lines": "core.monitor.wandb.config",
    "check_config": "core.monitor.wandb.config",
    "config_rows": "core.monitor.wandb.config",
    "steps_per_rollout_note": "core.monitor.wandb.config",
    "SRC_DEFINE_METRIC": "core.monitor.wandb.log",
    "SRC_WANDB_ARGS": "core.monitor.wandb.log",
    "WandbProtoUnavailable": "core.monitor.wandb.proto",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
