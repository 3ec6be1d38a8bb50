"""GPU logs shaped like a slime run's, for tests, benchmarks and the README's screenshot.

The timeline follows `core.monitor.tensorboard.synthetic.slime_like_calls`: each rollout generates (rollout GPUs
busy), then trains (training GPUs busy), then updates the weights, with the same wall times as the
synthetic TensorBoard and W&B runs. A layout is colocated (every GPU does both) or disaggregated
(training GPUs first, rollout GPUs after them, as slime's placement group orders them). The files are
written in the formats the real tools write: nvidia-smi's CSV (with or without header and units), a job log
of Ray-prefixed lines with slime's Memory-Usage lines among others, and W&B run files whose `stats` records
are built from W&B's own protocol definitions (the machine that runs the tests has no GPU for the SDK to
sample).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from core.monitor.tensorboard.synthetic import Scenario, slime_like_calls


@dataclass
class Layout:
    """Which GPUs of which nodes train and which generate; `idle` GPUs never run a kernel."""

    nodes: int = 1
    gpus_per_node: int = 4
    training_gpus: int = 2  # the first ones, in (node, index) order
    colocated: bool = False
    idle: list[tuple[int, int]] = field(default_factory=list)  # (node, index)
    memory_total_mib: float = 81559.0

    def role(self, node: int, index: int) -> str:
        if self.colocated:
            return "colocated"
        return "training" if node * self.gpus_per_node + index < self.training_gpus else "rollout"


@dataclass
class Phases:
    rollout: list[tuple[float, float]]
    train: list[tuple[float, float]]
    update: list[tuple[float, float]]

    @property
    def start(self) -> float:
        return self.rollout[0][0]

    @property
    def end(self) -> float:
        return self.update[-1][1]


def phases(scenario: Scenario | None = None) -> Phases:
    """The rollout, training and weight-update windows of the synthetic run (wall times)."""
    s = scenario or Scenario()
    rollout, train, update = [], [], []
    for call in slime_like_calls(s):
        values = call.values
        if "perf/rollout_time" in values:
            rollout.append((call.wall - values["perf/rollout_time"], call.wall))
        if "perf/train_time" in values:
            train.append((call.wall - values["perf/train_time"], call.wall))
            update.append((call.wall + 1.0, call.wall + 1.0 + values["perf/update_weights_time"]))
    return Phases(rollout, train, update)


def _inside(t: np.ndarray, windows: list[tuple[float, float]]) -> np.ndarray:
    out = np.zeros(len(t), dtype=bool)
    for a, b in windows:
        out |= (t >= a) & (t < b)
    return out


def gpu_samples(layout: Layout, scenario: Scenario | None = None, interval: float = 5.0, seed: int = 0):
    """(node, index, role, times, utilization %, memory used MiB) for every GPU of the layout."""
    p = phases(scenario)
    rng = np.random.default_rng(seed)
    t = np.arange(p.start, p.end, interval)
    training, rollout, update = _inside(t, p.train), _inside(t, p.rollout), _inside(t, p.update)
    out = []
    for node in range(layout.nodes):
        for index in range(layout.gpus_per_node):
            role = layout.role(node, index)
            if (node, index) in layout.idle:
                util = np.zeros(len(t))
                mem = np.full(len(t), 500.0)
            elif role == "colocated":
                util = np.where(training, 92.0, np.where(rollout, 78.0, np.where(update, 30.0, 1.0)))
                mem = np.where(training, 62000.0, 70000.0)
            elif role == "training":
                util = np.where(training, 93.0, np.where(update, 35.0, 0.0))
                mem = np.full(len(t), 58000.0)
            else:
                util = np.where(rollout, 81.0, np.where(update, 20.0, 0.0))
                mem = np.full(len(t), 72000.0)
            util = np.clip(util + rng.normal(0, 2, len(t)) * (util > 0), 0, 100).round()
            out.append((node, index, role, t, util, mem + rng.normal(0, 50, len(t)).round()))
    return out


def _smi_time(t: float) -> str:
    return time.strftime("%Y/%m/%d %H:%M:%S", time.gmtime(t)) + f".{int((t % 1) * 1000):03d}"


def write_nvidia_smi_csv(path: str | Path, layout: Layout, node: int = 0, scenario: Scenario | None = None, *,
                         header: bool = True, units: bool = True, interval: float = 5.0, with_name: bool = False,
                         columns: int = 7, utc_offset_hours: float = 0.0) -> Path:
    """One node's `nvidia-smi --query-gpu=timestamp,index[,name],utilization.gpu,memory.used,memory.total,
    power.draw,temperature.gpu --format=csv[,noheader][,nounits] -l 5` output (`columns=5` stops after
    memory.total, the issue's query; `utc_offset_hours` writes a node's local time, as nvidia-smi does)."""
    rows = [r for r in gpu_samples(layout, scenario, interval) if r[0] == node]
    lines = []
    names = ["timestamp", "index", "name", "utilization.gpu [%]", "memory.used [MiB]", "memory.total [MiB]",
             "power.draw [W]", "temperature.gpu"]
    keep = [0, 1] + [2] * with_name + list(range(3, 3 + columns - 2))
    if header:
        lines.append(", ".join(names[i] for i in keep))
    u = (lambda v, unit: f"{v} {unit}") if units else (lambda v, unit: f"{v}")
    for k in range(len(rows[0][3])):
        for _, index, _, t, util, mem in rows:
            power = 80.0 + 6.0 * util[k]
            cells = [_smi_time(float(t[k]) + utc_offset_hours * 3600), str(index), "NVIDIA H100 80GB HBM3", u(int(util[k]), "%"),
                     u(int(mem[k]), "MiB"), u(int(layout.memory_total_mib), "MiB"), u(f"{power:.2f}", "W"),
                     str(40 + int(util[k] // 5))]
            lines.append(", ".join(cells[i] for i in keep))
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p


def _log_time(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t))


def write_job_log(path: str | Path, layout: Layout, scenario: Scenario | None = None, colour: bool = True) -> Path:
    """A job log as `ray job submit` shows it: Ray-prefixed lines of the actors, among them the Memory-Usage
    lines every training rank prints around each weight update (in slime's format)."""
    p = phases(scenario)
    lines = ["2025-06-15 10:00:00,000\tINFO job_manager.py:530 -- Runtime env is setting up.",
             "Job 'raysubmit_synthetic' submitted successfully"]
    ranks = [(n, i) for n in range(layout.nodes) for i in range(layout.gpus_per_node)
             if layout.colocated or layout.role(n, i) == "training"]
    for r, (a, b) in enumerate(p.update):
        lines.append(f"(RolloutManager pid=4100, ip=10.0.0.1) [{_log_time(p.rollout[r][1])}] rollout.py:420 - "
                     f"rollout {r} finished")
        for what, t, used in (("before update_weights", a, 58.1), ("after update_weights", b, 58.3)):
            for rank, (node, _) in enumerate(ranks):
                prefix = f"(MegatronTrainRayActor pid={5000 + rank}, ip=10.0.0.{node + 1})"
                if colour:
                    prefix = f"\x1b[36m{prefix}\x1b[0m"
                info = {"gpu": "0", "total_GB": round(layout.memory_total_mib / 1024, 2), "free_GB": 21.0,
                        "used_GB": used + rank * 0.01, "allocated_GB": 50.25, "reserved_GB": 55.5,
                        "host_total_GB": 2015.56, "host_available_GB": 1800.0, "host_used_GB": 200.5,
                        "host_free_GB": 1700.0}
                lines.append(f"{prefix} [{_log_time(t)}] actor.py:639 - [Rank {rank}] Memory-Usage {what}: {info}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def stats_record(timestamp: float, items: dict[str, float]) -> bytes:
    """A serialized W&B `stats` record (system metrics) with these keys and values."""
    import json

    from core.monitor.wandb.proto import record_class

    record = record_class()()
    record.stats.stats_type = 0  # SYSTEM
    record.stats.timestamp.seconds = int(timestamp)
    record.stats.timestamp.nanos = int((timestamp % 1) * 1e9)
    for key, value in items.items():
        item = record.stats.item.add()
        item.key = key
        item.value_json = json.dumps(value)
    return record.SerializeToString()


def run_record(run_id: str, host: str, start: float) -> bytes:
    from core.monitor.wandb.proto import record_class

    record = record_class()()
    record.run.run_id = run_id
    record.run.host = host
    record.run.start_time.seconds = int(start)
    return record.SerializeToString()


def wandb_stats_payloads(layout: Layout, node: int, scenario: Scenario | None = None, interval: float = 15.0,
                         label: str = "") -> list[bytes]:
    """The stats records a W&B writer on `node` would write (every `interval` s, W&B's default 15 s)."""
    suffix = f"/l:{label}" if label else ""
    rows = [r for r in gpu_samples(layout, scenario, interval, seed=node + 7) if r[0] == node]
    out = []
    for k in range(len(rows[0][3])):
        items: dict[str, float] = {"cpu": 12.5, "memory_percent": 9.5, "proc.memory.rssMB": 4096.0}
        for _, index, _, _, util, mem in rows:
            items[f"gpu.{index}.gpu{suffix}"] = float(util[k])
            items[f"gpu.{index}.memoryAllocated{suffix}"] = float(mem[k] / layout.memory_total_mib * 100)
            items[f"gpu.{index}.memoryAllocatedBytes{suffix}"] = float(mem[k] * 2**20)
            items[f"gpu.{index}.powerWatts{suffix}"] = 80.0 + 6.0 * float(util[k])
            items[f"gpu.{index}.temp{suffix}"] = 40.0 + float(util[k] // 5)
        out.append(stats_record(float(rows[0][3][k]), items))
    return out


def write_wandb_stats_file(root: str | Path, layout: Layout, node: int, run_id: str = "slimetest",
                           scenario: Scenario | None = None, seq: int = 0, history: list[bytes] = ()) -> Path:
    """A W&B run file as a writer on `node` leaves it: a run record (with the host), system metrics, and the
    given history records; placed as W&B places a run's files (`wandb/offline-run-<time>-<id>[-N]/`)."""
    from core.monitor.wandb.synthetic import frame_wandb_records

    s = scenario or Scenario()
    stamp = time.strftime("%Y%m%d_%H%M%S", time.gmtime(s.wall_start))
    folder = Path(root) / "wandb" / (f"offline-run-{stamp}-{run_id}" + (f"-{seq}" if seq else ""))
    folder.mkdir(parents=True, exist_ok=True)
    payloads = [run_record(run_id, f"node-{node}", s.wall_start), *history,
                *wandb_stats_payloads(layout, node, scenario)]
    path = folder / f"run-{run_id}.wandb"
    path.write_bytes(frame_wandb_records(payloads))
    return path
