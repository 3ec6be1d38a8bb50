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
checklist), `efficiency` (MFU from perf/actor_train_tflops and the time to finish, MON013-MON014), `report`, `plots` (plotly figures), `archive` (uploads and zips, safely), `slime_metrics` (what
slime logs). Sources import the shared core; the shared core reaches a source only through `sources`.

May import: the shared vocabulary, the root of core.launch (a W&B run's logged config is checked as
launch arguments), and the root of core.plan (the GPU table's peaks and the MFU rule, for `efficiency`).
"""
