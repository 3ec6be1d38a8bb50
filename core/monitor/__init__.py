"""The training monitor: slime's TensorBoard logs read, stitched, smoothed, plotted and checked.

Modules: `events` (one event file, damage found and read past), `cache` (diskcache by file identity),
`runs` (runs, stitching of restarts, tbparse's frame rebuilt), `smoothing` (TensorBoard's EMA and
outlier range), `views` (x axes, rollout alignment, shown table), `verdicts` (the checklist),
`plots` (plotly figures), `archive` (uploads and zips, safely), `slime_metrics` (what slime logs).

May import: the shared vocabulary only.
"""
