"""The training monitor: slime's TensorBoard logs and W&B run files read, stitched, smoothed, plotted and checked.

Modules: `events` (one event file, damage found and read past), `cache` (diskcache by file identity),
`runs` (runs, stitching of restarts, tbparse's frame rebuilt), `smoothing` (TensorBoard's EMA and
outlier range), `views` (x axes, rollout alignment, shown table), `verdicts` (the checklist),
`plots` (plotly figures), `archive` (uploads and zips, safely), `slime_metrics` (what slime logs).
W&B: `wandb_proto` (the record messages, from the installed `wandb` package's definitions, without importing
it), `wandb_log` (one `.wandb` file: framing, checksums, damage, history rows to scalars), `wandb_run` (runs
grouped by id, cached, stitched), `wandb_config` (the logged config as launch arguments), `sources` (what a
path holds, of either kind), `wandb_synthetic` (runs written by the SDK for tests and benchmarks).

May import: the shared vocabulary, and the root of core.launch (a W&B run's logged config is checked as
launch arguments).
"""
