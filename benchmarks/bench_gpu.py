"""GPU data figures: reading nvidia-smi CSV logs, W&B system metrics and a job log of a days-long run, judging
"GPUs are busy" and building the per-GPU chart; then, as while following, reading the text logs again after
lines were appended (only the new bytes are read).

    python benchmarks/bench_gpu.py                   # 2 nodes x 8 GPUs, 3 days: nvidia-smi -l 5, W&B every 15 s
    python benchmarks/bench_gpu.py --days 1 --rounds 5

The logs are written in the tools' formats by core.monitor.gpu.synthetic (the synthetic run's phases repeated
over the days). Each measurement runs in a fresh Python process; medians over the rounds are printed, with the
peak resident memory of the process. Run it on a quiet machine for absolute figures; under load, compare the
ratios only.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, {root!r})
from pathlib import Path
t0 = time.perf_counter()
from core.monitor.gpu import read_gpu_data, check_gpus_busy
from core.monitor.gpu.plots import gpu_figure
t_import = time.perf_counter() - t0
d = Path({where!r})
t1 = time.perf_counter()
data = read_gpu_data(sorted(d.glob("*.csv")) + [d / "job.log"], sorted(d.glob("wandb/*/*.wandb")), explicit=0)
t_read = time.perf_counter() - t1
t2 = time.perf_counter()
verdict = check_gpus_busy(data)
t_judge = time.perf_counter() - t2
t3 = time.perf_counter()
fig = gpu_figure([s for s in data.series if s.source == "nvidia-smi"], __import__("core.monitor.gpu.phases",
                 fromlist=["Phases"]).Phases())
size = len(fig.to_json())
t_fig = time.perf_counter() - t3
import shutil, tempfile
live = Path(tempfile.mkdtemp(prefix="bench-gpu-live-"))
for p in sorted(d.glob("*.csv")) + [d / "job.log"]:
    shutil.copy(p, live / p.name)
cursors = {{}}
texts = sorted(live.glob("*.csv")) + [live / "job.log"]
read_gpu_data(texts, cursors=cursors)
line = "2025/06/18 15:00:00.000, 0, 50 %, 1000 MiB, 81559 MiB, 380.00 W, 50\n"
for p in sorted(live.glob("*.csv")):
    with p.open("a") as fh:
        fh.write(line * {appended})
t4 = time.perf_counter()
again = read_gpu_data(texts, cursors=cursors)
t_refresh = time.perf_counter() - t4
shutil.rmtree(live)
print(json.dumps({{"import": t_import, "read": t_read, "judge": t_judge, "figure": t_fig, "figure_bytes": size,
                  "refresh": t_refresh,
                  "samples": sum(s.samples for s in data.series), "series": len(data.series),
                  "status": verdict.status, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
"""


def write_logs(where: Path, days: float) -> dict:
    sys.path.insert(0, str(ROOT))
    from core.monitor.gpu.synthetic import Layout, write_job_log, write_nvidia_smi_csv, write_wandb_stats_file
    from core.monitor.tensorboard.synthetic import Scenario

    step = 80.0  # seconds per rollout in the synthetic timeline (30 s generate, 40 s train, update, gap)
    scenario = Scenario(rollouts=max(1, int(days * 86400 / step)), seed=5)
    layout = Layout(nodes=2, gpus_per_node=8, training_gpus=8)
    for node in range(2):
        write_nvidia_smi_csv(where / f"gpu-node{node}.csv", layout, node, scenario, interval=5.0)
        write_wandb_stats_file(where, layout, node, scenario=scenario, seq=node)
    write_job_log(where / "job.log", layout, scenario)
    return {str(p.relative_to(where)): p.stat().st_size
            for p in [*where.glob("*.csv"), where / "job.log", *where.glob("wandb/*/*.wandb")]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--days", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--appended", type=int, default=1000, help="lines appended to each CSV before the refresh")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-gpu-") as tmp:
        where = Path(tmp)
        t = time.perf_counter()
        sizes = write_logs(where, args.days)
        print(f"wrote {len(sizes)} files, {sum(sizes.values()) / 2**20:.1f} MiB in {time.perf_counter() - t:.1f} s: "
              + ", ".join(f"{k} {v / 2**20:.1f} MiB" for k, v in sorted(sizes.items())))
        runs = []
        for _ in range(args.rounds):
            out = subprocess.run([sys.executable, "-c", CHILD.format(root=str(ROOT), where=str(where),
                                                                     appended=args.appended)],
                                 capture_output=True, text=True, check=True)
            runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
        med = {k: statistics.median(r[k] for r in runs) for k in ("import", "read", "judge", "figure", "rss_mb",
                                                                   "refresh")}
        print(f"{runs[0]['series']} series, {runs[0]['samples']:,} samples; verdict {runs[0]['status']}")
        print(f"median of {args.rounds}: read {med['read']:.2f} s, judge {med['judge'] * 1000:.0f} ms, figure "
              f"{med['figure'] * 1000:.0f} ms ({runs[0]['figure_bytes'] / 1024:.0f} KiB of JSON), imports "
              f"{med['import']:.2f} s, peak RSS {med['rss_mb']:.0f} MB")
        print(f"followed: reading the text logs again after {args.appended} lines appended to each CSV "
              f"(cursors kept): {med['refresh'] * 1000:.0f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
