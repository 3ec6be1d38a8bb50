"""W&B run-file reader figures: first open vs our TensorBoard reader on the same values, re-open from cache,
re-open after the file grew, one flipped byte.

    python benchmarks/bench_wandb.py                  # 3,000 rows x 100 keys = 300,000 logged values
    python benchmarks/bench_wandb.py --steps 20000    # 2,000,000 values (writing with the SDK takes minutes)
    python benchmarks/bench_wandb.py --rounds 5       # more alternating rounds (the medians are printed)

The W&B run is written by the real `wandb` SDK in offline mode (a dev dependency; nothing leaves the machine),
the TensorBoard log by tensorboardX, with the same names and values (`write_scalar_grid`). Each measurement
runs in a fresh Python process with an empty cache; TensorBoard and W&B opens alternate, so a busy machine
slows both alike. Times are of the call; imports are printed apart (the W&B reader reads the `wandb`
package's protocol definitions without importing `wandb`).

Measured on the project's 2-core machine while it was shared and heavily loaded (load average 14-20), medians:
TensorBoard first open 4.0-8.4 s wall / 1.7 s CPU; W&B first open 1.9-3.2 s wall / 0.52 s CPU (0.30-0.46x);
W&B re-open from cache 0.10-0.17 s; re-open after 10% growth 0.8-1.4 s; one flipped bit in a history record:
299,900 of 300,000 values read, that row reported.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import struct
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

OPEN_TB = """
import diskcache
from core.monitor.tensorboard.run import read_run
import tensorboard.compat.proto.event_pb2
t_imports = time.perf_counter() - t0
t1, c1 = time.perf_counter(), time.process_time()
with diskcache.Cache({cache!r}) as cache:
    run = read_run({run!r}, cache=cache)
out = {{"scalars": run.scalar_count(), "how": [f.how for f in run.files], "call": time.perf_counter() - t1,
        "cpu": time.process_time() - c1, "imports": t_imports}}
"""

OPEN_WANDB = """
import diskcache
from pathlib import Path
from core.monitor.wandb.run import read_wandb_run
from core.monitor.wandb.proto import peek_class, record_class
record_class(); peek_class()
t_imports = time.perf_counter() - t0
t1, c1 = time.perf_counter(), time.process_time()
with diskcache.Cache({cache!r}) as cache:
    run = read_wandb_run([Path({run!r})], cache=cache)
out = {{"scalars": run.scalar_count(), "how": [f.how for f in run.files], "call": time.perf_counter() - t1,
        "cpu": time.process_time() - c1, "imports": t_imports, "wandb_imported": "wandb" in sys.modules,
        "damage": [d.kind for f in run.files for d in f.damage]}}
"""


def child(body: str, **fmt) -> dict:
    code = CHILD.format(root=str(ROOT), body=body.format(**fmt))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    if done.returncode:
        raise SystemExit(done.stderr)
    return json.loads(done.stdout.strip().splitlines()[-1])


def history_chunks(data: bytes) -> list[tuple[int, int]]:
    """(offset, length) of the whole-record chunks of a run file that hold a history row."""
    from core.monitor.wandb.proto import peek_class

    peek = peek_class().FromString
    out, pos = [], 7
    while pos + 7 <= len(data):
        left = 32768 - pos % 32768
        if left < 7:
            pos += left
            continue
        _, length, kind = struct.unpack_from("<IHB", data, pos)
        if kind == 1 and peek(data[pos + 7:pos + 7 + length]).HasField("history"):
            out.append((pos, length))
        pos += 7 + length
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--tags", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--keep", action="store_true", help="keep the generated directory")
    parser.add_argument("--reuse", default=None, help="a directory kept by an earlier --keep: skip writing")
    args = parser.parse_args()

    sys.path.insert(0, str(ROOT))
    from core.monitor.tensorboard.synthetic import write_scalar_grid

    if args.reuse:
        work = Path(args.reuse)
        tb_dir = work / "tb"
        wandb_file = next((work / "wb" / "wandb").glob("*run-*/run-*.wandb"))
        for stale in [*work.glob("cache-*"), work / "grow", work / "damaged"]:
            shutil.rmtree(stale, ignore_errors=True)
    else:
        from core.monitor.wandb.synthetic import write_wandb_grid

        work = Path(tempfile.mkdtemp(prefix="bench-wandb-"))
        t = time.perf_counter()
        wandb_file = write_wandb_grid(work / "wb", args.steps, args.tags)
        print(f"W&B run written by the SDK (offline) in {time.perf_counter() - t:.1f}s")
        tb_dir = work / "tb"
        write_scalar_grid(tb_dir, args.steps, args.tags)
    tb_file = next(p for p in tb_dir.iterdir() if "tfevents" in p.name)
    n = args.steps * args.tags
    print(f"values: {args.steps:,} rows x {args.tags} keys = {n:,}; .wandb {wandb_file.stat().st_size / 2**20:.1f} MiB, "
          f"event file {tb_file.stat().st_size / 2**20:.1f} MiB")

    tb_times, wb_times, reopen, tb_cpu, wb_cpu = [], [], [], [], []
    for r in range(args.rounds):
        tb = child(OPEN_TB, cache=str(work / f"cache-tb-{r}"), run=str(tb_dir))
        wb = child(OPEN_WANDB, cache=str(work / f"cache-wb-{r}"), run=str(wandb_file))
        again = child(OPEN_WANDB, cache=str(work / f"cache-wb-{r}"), run=str(wandb_file))
        assert tb["scalars"] == wb["scalars"] == n, (tb["scalars"], wb["scalars"])
        assert again["how"] == ["cached"] and not wb["wandb_imported"]
        tb_times.append(tb["call"])
        wb_times.append(wb["call"])
        tb_cpu.append(tb["cpu"])
        wb_cpu.append(wb["cpu"])
        reopen.append(again["call"])
        print(f"round {r + 1}: TensorBoard first open {tb['call']:.2f}s, CPU {tb['cpu']:.2f}s (imports {tb['imports']:.2f}s, peak "
              f"{tb['max_rss_mb']:.0f} MB); W&B first open {wb['call']:.2f}s, CPU {wb['cpu']:.2f}s (imports {wb['imports']:.2f}s, peak "
              f"{wb['max_rss_mb']:.0f} MB); W&B re-open from cache {again['call']:.3f}s")
    ratio = statistics.median(w / t for w, t in zip(wb_times, tb_times, strict=True))
    print(f"median: TensorBoard {statistics.median(tb_times):.2f}s, W&B {statistics.median(wb_times):.2f}s "
          f"(ratio {ratio:.2f}x, target within 1.5x); re-open from cache {statistics.median(reopen):.3f}s "
          "(target under 0.3s)")
    print(f"median CPU time (less sensitive to a busy machine): TensorBoard {statistics.median(tb_cpu):.2f}s, "
          f"W&B {statistics.median(wb_cpu):.2f}s (ratio {statistics.median(wb_cpu) / statistics.median(tb_cpu):.2f}x)")

    data = wandb_file.read_bytes()
    chunks = history_chunks(data)
    grow = work / "grow" / wandb_file.parent.name / wandb_file.name
    grow.parent.mkdir(parents=True, exist_ok=True)
    cut_at = chunks[int(len(chunks) * 0.9)][0]
    grow.write_bytes(data[:cut_at])
    child(OPEN_WANDB, cache=str(work / "cache-grow"), run=str(grow))
    grow.write_bytes(data)
    grown = child(OPEN_WANDB, cache=str(work / "cache-grow"), run=str(grow))
    print(f"re-open after the file grew by {(len(data) - cut_at) / 2**20:.1f} MiB ({grown['how'][0]}): "
          f"{grown['call']:.2f}s")

    damaged = work / "damaged" / wandb_file.parent.name / wandb_file.name
    damaged.parent.mkdir(parents=True, exist_ok=True)
    buf = bytearray(data)
    offset, length = chunks[len(chunks) // 3]
    buf[offset + 7 + length // 2] ^= 0x10
    damaged.write_bytes(bytes(buf))
    hurt = child(OPEN_WANDB, cache=str(work / "cache-damaged"), run=str(damaged))
    print(f"one flipped bit at 1/3 of the file: {hurt['scalars']:,} of {n:,} values read, damage {hurt['damage']}")
    if args.keep or args.reuse:
        print(f"kept {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
