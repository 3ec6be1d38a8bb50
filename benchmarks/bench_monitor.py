"""Monitor reader figures: first open, re-open from cache, grown-file re-read, damage recovery, vs tbparse.

    python benchmarks/bench_monitor.py                     # 3,000 steps x 100 tags = 300,000 scalars
    python benchmarks/bench_monitor.py --steps 20000       # 2,000,000 scalars (generation takes minutes)
    python benchmarks/bench_monitor.py --tbparse           # also time tbparse (slow) and compare frames
    python benchmarks/bench_monitor.py --figures-only      # just the chart figures of every tag (see below)

First it times what a user waits for, in one process: reading, every verdict and the first plot, with peak
memory; then the chart figures of every tag (built and serialized as the page sends them: with the points cut
to the chart's pixel columns, without the cut as before, and again from the provider's kept figures); then
`slime-assistant logs` with --no-cache, with a cold cache and with a warm one.

Each measurement runs in a fresh Python process, so times include imports and peak memory (max RSS) is
that process's own. Logs are written with tensorboardX (a dev dependency) into a temporary directory.

Measured on the project's 2-core machine (times of the call itself; add ~0.45 s of imports per process):

| scalars | first open | re-open unchanged | re-open after 10% growth | peak RSS | tbparse .scalars (peak) |
| --- | --- | --- | --- | --- | --- |
| 300,000 (15.7 MiB) | 1.1-1.4 s | 0.02-0.04 s | 0.21-0.30 s | 213 MB | 7.4 s (224 MB) |
| 2,000,000 (105 MiB) | 8.4-8.9 s | 0.07 s | 1.5 s | 775 MB | 40.8 s (924 MB) |

One flipped bit a third of the way into the file: tbparse returns 100,158 of 300,000 (669,016 of 2,000,000)
scalars; this reader loses the one damaged record. Frames identical to tbparse's on all 2,000,000 rows.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, {root!r})
t0 = time.perf_counter()
{body}
out["seconds"] = time.perf_counter() - t0
out["max_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
"""

FIRST_OPEN = """
import diskcache
from core.monitor.tensorboard.run import read_run
t1 = time.perf_counter()
with diskcache.Cache({cache!r}) as cache:
    run = read_run({run!r}, cache=cache)
out = {{"scalars": run.scalar_count(), "how": [f.how for f in run.files], "call": time.perf_counter() - t1}}
"""

USER_WAIT = """
import diskcache
from core.monitor.plots import scalar_figure
from core.monitor.tensorboard.run import read_run
from core.monitor.slime_metrics import ordered_tags
from core.monitor.verdicts import run_verdicts
from core.monitor.views import XAxis, rollout_alignment
t1 = time.perf_counter()
if {cache!r}:
    with diskcache.Cache({cache!r}) as cache:
        run = read_run({run!r}, cache=cache)
else:
    run = read_run({run!r})
t2 = time.perf_counter()
verdicts = run_verdicts(run)
t3 = time.perf_counter()
tag = ordered_tags(run.tags)[0]
fig = scalar_figure([run], tag, axis=XAxis.STEP, weight=0.6, ignore_outliers=False,
                    alignments={{run.name: rollout_alignment(run)}})
fig.to_json()  # what the page sends to the browser
t4 = time.perf_counter()
out = {{"read": t2 - t1, "verdicts": t3 - t2, "first_plot": t4 - t3, "scalars": run.scalar_count(),
        "statuses": [v.status for v in verdicts]}}
"""

FIGURES = """
import plotly.io
from core.monitor.downsample import PLOT_COLUMNS
from core.monitor.plots import scalar_figure
from core.monitor.provider import MonitorProvider
from core.monitor.sources import FoundRun
from core.monitor.tensorboard.run import read_run
from core.monitor.views import XAxis, rollout_alignment
run = read_run({run!r})
tags = sorted(run.tags)
aligned = {{run.name: rollout_alignment(run)}}
out = {{"tags": len(tags)}}
scalar_figure([run], tags[0], axis=XAxis.STEP, weight=0.6, ignore_outliers=False, alignments=aligned)  # imports
for label, columns in (("cut", PLOT_COLUMNS), ("whole", 10 ** 9)):
    t1 = time.perf_counter()
    sent = [plotly.io.to_json(scalar_figure([run], tag, axis=XAxis.STEP, weight=0.6, ignore_outliers=False,
                                            alignments=aligned, columns=columns), validate=False) for tag in tags]
    out[label] = time.perf_counter() - t1
    out[label + "_mb"] = sum(map(len, sent)) / 1024 ** 2
provider = MonitorProvider()
provider.open([FoundRun(kind="tensorboard", label="run", path={run!r}).model_dump()])
provider.refresh()
shown = tags[:40]  # the page draws at most 40 charts (pages/monitor.py MAX_CHARTS)
out["shown"] = len(shown)
for label in ("provider_first", "provider_again"):
    provider.refresh()
    t1 = time.perf_counter()
    figs = [provider.figure(tag, axis=XAxis.STEP, weight=0.6, ignore_outliers=False,
                            alignments=provider.alignments(None)) for tag in shown]
    out[label] = time.perf_counter() - t1
out["built"] = provider.figures_built
"""

TBPARSE = """
from tbparse import SummaryReader
t1 = time.perf_counter()
df = SummaryReader({run!r}, extra_columns={{"wall_time"}}).scalars
out = {{"scalars": len(df), "call": time.perf_counter() - t1}}
"""

COMPARE = """
import pandas as pd
from tbparse import SummaryReader
from core.monitor.tensorboard.run import tbparse_frame
ref = SummaryReader({run!r}, extra_columns={{"wall_time"}}).scalars
ours = tbparse_frame({run!r})
pd.testing.assert_frame_equal(ours, ref, check_exact=True)
out = {{"identical_rows": len(ref)}}
"""


def child(body: str, **fmt) -> dict:
    code = CHILD.format(root=str(ROOT), body=body.format(**fmt))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    if done.returncode:
        raise SystemExit(done.stderr)
    return json.loads(done.stdout.strip().splitlines()[-1])


def cli_logs(run: str, extra: list[str], home: str) -> tuple[float, float]:
    """Wall time and peak RSS of `slime-assistant logs RUN --format json` in its own process."""
    code = ("import resource, subprocess, sys, time; t = time.perf_counter(); "
            "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=False); "
            "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)")
    cmd = [sys.executable, "-c", code, sys.executable, "-m", "core", "logs", run, "--format", "json", *extra]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "SLIME_ASSISTANT_HOME": home})
    seconds, peak = done.stdout.split()
    return float(seconds), float(peak)


def record_boundary(data: bytes, at_least: int) -> int:
    pos = 0
    while pos < at_least:
        pos += 12 + int.from_bytes(data[pos:pos + 8], "little") + 4
    return pos


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--tags", type=int, default=100)
    parser.add_argument("--tbparse", action="store_true", help="also time tbparse and check the frames match")
    parser.add_argument("--keep", action="store_true", help="keep the generated log directory")
    parser.add_argument("--reuse", default=None, help="a directory kept by an earlier --keep: skip generation")
    parser.add_argument("--figures-only", action="store_true", help="time only the chart figures of every tag")
    args = parser.parse_args()

    sys.path.insert(0, str(ROOT))
    from core.monitor.downsample import PLOT_COLUMNS
    from core.monitor.tensorboard.synthetic import write_scalar_grid

    t = time.perf_counter()
    if args.reuse:
        work = Path(args.reuse)
        run = work / "run"
        event_file = next(p for p in run.iterdir() if "tfevents" in p.name)
        for stale in ("cache", "grow", "damaged", "cli-home"):
            shutil.rmtree(work / stale, ignore_errors=True)
    else:
        work = Path(tempfile.mkdtemp(prefix="bench-monitor-"))
        run = work / "run"
        event_file = write_scalar_grid(run, args.steps, args.tags)
    size_mb = event_file.stat().st_size / 1024 ** 2
    print(f"log: {args.steps} steps x {args.tags} tags = {args.steps * args.tags:,} scalars, {size_mb:.1f} MiB, "
          f"written in {time.perf_counter() - t:.1f}s")

    figs = child(FIGURES, run=str(run))
    print(f"chart figures of all {figs['tags']} tags, built and serialized: {figs['cut']:.2f}s with the points cut "
          f"to {PLOT_COLUMNS} pixel columns ({figs['cut_mb']:.1f} MiB sent), {figs['whole']:.2f}s whole "
          f"({figs['whole_mb']:.1f} MiB); the page's {figs['shown']} charts through the provider "
          f"{figs['provider_first']:.2f}s, again with no new data {figs['provider_again'] * 1000:.1f} ms "
          f"({figs['built']} built in all)")
    if args.figures_only:
        if not (args.keep or args.reuse):
            shutil.rmtree(work, ignore_errors=True)
        return 0

    wait = child(USER_WAIT, cache="", run=str(run))
    print(f"what a user waits for, one process, no cache: read {wait['read']:.2f}s + verdicts "
          f"{wait['verdicts']:.2f}s + first plot {wait['first_plot']:.2f}s = "
          f"{wait['read'] + wait['verdicts'] + wait['first_plot']:.2f}s ({wait['seconds']:.2f}s with imports), "
          f"peak {wait['max_rss_mb']:.0f} MB")
    for label, extra in (("logs --no-cache", ["--no-cache"]), ("logs (cache cold)", []), ("logs (cache warm)", [])):
        seconds, peak = cli_logs(str(run), extra, str(work / "cli-home"))
        print(f"slime-assistant {label}: {seconds:.2f}s, peak {peak:.0f} MB")

    cache = str(work / "cache")
    first = child(FIRST_OPEN, cache=cache, run=str(run))
    print(f"first open (read, stitch, cache write): {first['call']:.2f}s ({first['seconds']:.2f}s with imports), "
          f"peak {first['max_rss_mb']:.0f} MB, {first['scalars']:,} scalars")
    again = child(FIRST_OPEN, cache=cache, run=str(run))
    print(f"re-open unchanged ({again['how']}): {again['call']:.2f}s ({again['seconds']:.2f}s with imports)")

    data = event_file.read_bytes()
    cut = record_boundary(data, int(len(data) * 0.9))
    grow_dir = work / "grow"
    grow_dir.mkdir()
    grown = grow_dir / event_file.name
    grown.write_bytes(data[:cut])
    child(FIRST_OPEN, cache=cache, run=str(grow_dir))
    grown.write_bytes(data)
    appended = child(FIRST_OPEN, cache=cache, run=str(grow_dir))
    print(f"re-open after the file grew by {(len(data) - cut) / 1024 ** 2:.1f} MiB ({appended['how']}): "
          f"{appended['call']:.2f}s")

    damaged_dir = work / "damaged"
    damaged_dir.mkdir()
    damaged = damaged_dir / event_file.name
    buf = bytearray(data)
    buf[record_boundary(data, len(data) // 3) + 15] ^= 0x10
    damaged.write_bytes(bytes(buf))
    from core.monitor.scan import accumulator_keep_mask
    from core.monitor.tensorboard.events import scan_event_file
    scan = scan_event_file(damaged)
    tbparse_rows = int(accumulator_keep_mask(scan, compatible=True).sum())
    print(f"one flipped bit at 1/3 of the file: tbparse returns {tbparse_rows:,} of {args.steps * args.tags:,} "
          f"scalars; this reader {len(scan.steps):,} ({[d.kind for d in scan.damage]})")

    if args.tbparse:
        ref = child(TBPARSE, run=str(run))
        print(f"tbparse SummaryReader(dir).scalars: {ref['call']:.2f}s, peak {ref['max_rss_mb']:.0f} MB")
        same = child(COMPARE, run=str(run))
        print(f"frames identical to tbparse: {same['identical_rows']:,} rows")
    if args.keep or args.reuse:
        print(f"kept {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
