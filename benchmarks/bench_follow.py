"""Following a run: open from nothing, then refreshes after 1,000 new records each (server time, no browser).

    python benchmarks/bench_follow.py                     # 20,000 steps x 100 tags = 2,000,000 scalars
    python benchmarks/bench_follow.py --steps 3000        # 300,000 scalars
    python benchmarks/bench_follow.py --wandb --steps 3000  # a W&B run file (written by the SDK, offline)

The log is written once (tensorboardX, or the wandb SDK offline), then one fresh Python process times:
- opening the run from nothing (an empty cache): read, stitch, verdicts, cache written (core.monitor.follow);
- `--rounds` refreshes, each after `--append` new records were appended to the file (TensorBoard: one scalar
  per record, as slime writes them; W&B: history rows of 10 values), each refresh reading only the new bytes,
  adding them to the stitched curves and judging every verdict again, with its median and maximum.
Times are of the calls themselves (imports excluded); the machine is shared, so say its load beside them.
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
import json, resource, statistics, sys, time
sys.path.insert(0, {root!r})
import diskcache
from core.monitor.follow import Follower
from core.monitor.sources import find_runs
[found] = find_runs(__import__("pathlib").Path({run!r}))
with diskcache.Cache({cache!r}) as cache:
    t, c = time.perf_counter(), time.process_time()
    follower = Follower(found, cache=cache)
    opened, opened_cpu = time.perf_counter() - t, time.process_time() - c
    scalars = follower.run.scalar_count()
    path = {target!r}
    times, cpu, new = [], [], []
    for r in range({rounds}):
        data = make_records(path, r)
        with open(path, "ab") as fh:
            fh.write(data)
        t, c = time.perf_counter(), time.process_time()
        refresh = follower.refresh()
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
        new.append(refresh.new_scalars)
        assert not refresh.reread, refresh
print(json.dumps({{"open": opened, "open_cpu": opened_cpu, "scalars": scalars, "refresh": times, "cpu": cpu,
                  "new": new,
                  "final": follower.run.scalar_count(),
                  "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
"""

TB_RECORDS = r"""
from core.monitor.tensorboard.synthetic import frame_record, scalar_event
TAGS = ("rollout/raw_reward", "train/kl_loss", "train/entropy_loss", "train/grad_norm", "train/loss",
        "rollout/truncated_ratio", "perf/wait_time_ratio", "rollout/metric_100", "train/metric_101", "perf/metric_102")
def make_records(path, r):
    base = {steps} + r * ({append} // len(TAGS))
    return b"".join(frame_record(scalar_event(TAGS[i % len(TAGS)], 0.5, base + i // len(TAGS)))
                    for i in range({append}))
"""

WANDB_RECORDS = r"""
import os
from core.monitor.wandb.synthetic import frame_wandb_records, history_record
KEYS = ("rollout/raw_reward", "train/kl_loss", "train/entropy_loss", "train/grad_norm", "train/loss",
        "rollout/truncated_ratio", "perf/wait_time_ratio", "rollout/metric_100", "train/metric_101", "perf/metric_102")
def make_records(path, r):
    rows = {append} // len(KEYS)
    base = {steps} + r * rows
    payloads = [history_record({{**{{k: 0.5 for k in KEYS}}, "rollout/step": base + i, "train/step": base + i,
                                  "_timestamp": 1.75e9 + base + i}}) for i in range(rows)]
    return frame_wandb_records(payloads, offset=os.path.getsize(path))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20000)
    parser.add_argument("--tags", type=int, default=100)
    parser.add_argument("--append", type=int, default=1000, help="new records (TensorBoard) or values (W&B) per refresh")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--wandb", action="store_true", help="a W&B run file instead of a TensorBoard event file")
    parser.add_argument("--reuse", default=None, help="a directory kept by --keep: skip writing the log")
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))

    work = Path(args.reuse) if args.reuse else Path(tempfile.mkdtemp(prefix="bench-follow-"))
    t = time.perf_counter()
    if args.wandb:
        from core.monitor.wandb.synthetic import write_wandb_grid

        target = next(work.glob("wandb/*/run-*.wandb"), None) if args.reuse else None
        target = target or write_wandb_grid(work, args.steps, args.tags)
        run = work / "wandb"
    else:
        from core.monitor.tensorboard.synthetic import write_scalar_grid

        run = work / "run"
        target = next(run.glob("*tfevents*"), None) if args.reuse else None
        target = target or write_scalar_grid(run, args.steps, args.tags)
    pristine = work / "pristine.bin"
    if not pristine.exists():
        shutil.copyfile(target, pristine)
    shutil.copyfile(pristine, target)  # every measurement starts from the same file
    print(f"log: {args.steps:,} steps x {args.tags} tags = {args.steps * args.tags:,} scalars, "
          f"{target.stat().st_size / 2**20:.1f} MiB ({'W&B' if args.wandb else 'TensorBoard'}), ready in "
          f"{time.perf_counter() - t:.1f} s")
    cache = work / "cache"
    shutil.rmtree(cache, ignore_errors=True)
    records = (WANDB_RECORDS if args.wandb else TB_RECORDS).format(steps=args.steps, append=args.append)
    code = records + CHILD.format(root=str(ROOT), run=str(run), cache=str(cache), target=str(target),
                                  rounds=args.rounds)
    load = os.getloadavg()[0]
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    if done.returncode:
        raise SystemExit(done.stderr)
    out = json.loads(done.stdout.strip().splitlines()[-1])
    times = sorted(out["refresh"])
    cpu = sorted(out["cpu"])
    print(f"machine load average {load:.1f} (2 cores) when the measurement started")
    print(f"open from nothing (read, stitch, verdicts, cache written): {out['open']:.2f} s wall, "
          f"{out['open_cpu']:.2f} s CPU, "
          f"{out['scalars']:,} scalars, peak RSS {out['max_rss_mb']:.0f} MB")
    print(f"refresh after {args.append:,} new records (read the new bytes, extend the curves, every verdict): "
          f"median {times[len(times) // 2] * 1000:.1f} ms wall ({cpu[len(cpu) // 2] * 1000:.1f} ms CPU), max "
          f"{times[-1] * 1000:.1f} ms over {args.rounds} "
          f"refreshes; {sum(out['new']):,} new scalars read, {out['final']:,} in the end")
    shutil.copyfile(pristine, target)
    if args.keep or args.reuse:
        print(f"kept {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
