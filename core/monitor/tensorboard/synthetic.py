"""Slime-shaped TensorBoard logs for tests and benchmarks (needs tensorboardX, a dev dependency).

The layout copies what slime writes at the pinned commit: the rollout manager and the Megatron actor are
separate processes, each with its own SummaryWriter, so one run directory holds (at least) two event
files; `rollout/*`, `perf/*` and `eval/*` are stepped by the rollout id, `train/*` by
rollout_id * steps_per_rollout + step_id. Values are made up (seeded), shaped like a healthy GRPO run
unless a scenario says otherwise. This writes metric logs only; it never produces training data.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

MANAGER_ROLLOUT_TAGS = ("rollout/response_len/mean", "rollout/response_len/median", "rollout/response_len/max",
                        "rollout/response_len/min", "rollout/truncated_ratio", "rollout/repetition_frac")
MANAGER_PERF_TAGS = ("perf/rollout_time", "perf/tokens_per_gpu_per_sec", "perf/longest_sample_tokens_per_sec")
ACTOR_ROLLOUT_TAGS = ("rollout/raw_reward", "rollout/rewards", "rollout/response_lengths", "rollout/truncated",
                      "rollout/log_probs", "rollout/ref_log_probs", "rollout/rollout_log_probs",
                      "rollout/advantages")
TRAIN_TAGS = ("train/loss", "train/pg_loss", "train/entropy_loss", "train/pg_clipfrac", "train/ppo_kl",
              "train/kl_loss", "train/train_rollout_logprob_abs_diff", "train/grad_norm", "train/lr-pg_0",
              "train/global_batch_size")
ACTOR_PERF_TAGS = ("perf/data_preprocess_time", "perf/log_probs_time", "perf/ref_log_probs_time",
                   "perf/actor_train_time", "perf/train_time", "perf/train_wait_time", "perf/step_time",
                   "perf/wait_time_ratio", "perf/update_weights_time")


@dataclass
class Scenario:
    """What the synthetic run should look like."""

    rollouts: int = 50
    steps_per_rollout: int = 2
    eval_interval: int | None = 10
    eval_dataset: str = "aime"
    extra_tags: int = 0
    seed: int = 0
    reward: str = "rising"  # rising | flat_zero | falling | noisy_flat
    entropy_collapse: bool = False
    kl_growth: bool = False
    grad_spike_at: int | None = None
    truncation_climb: bool = False
    eval_stalled: bool = False
    rollout_dominates: bool = False
    nan_reward_at: int | None = None
    first_rollout: int = 0
    wall_start: float = 1_750_000_000.0


def _curves(s: Scenario, r: int, rng: np.random.Generator) -> dict[str, float]:
    frac = (r + 1) / max(s.rollouts, 1)
    noise = rng.normal(0, 0.03)
    if s.reward == "rising":
        reward = 0.2 + 0.5 * frac + noise
    elif s.reward == "falling":
        reward = 0.7 - 0.5 * frac + noise
    elif s.reward == "flat_zero":
        reward = 0.0
    else:
        reward = 0.4 + noise
    if s.nan_reward_at is not None and r == s.nan_reward_at:
        reward = float("nan")
    entropy = 0.6 * math.exp(-6 * frac) + 0.01 if s.entropy_collapse else 0.55 - 0.1 * frac + rng.normal(0, 0.01)
    length_mean = 900 + 300 * frac + rng.normal(0, 20)
    truncated = min(0.9, 0.02 + 0.6 * frac) if s.truncation_climb else 0.02 + abs(rng.normal(0, 0.005))
    kl = 0.001 * math.exp(5 * frac) if s.kl_growth else 0.002 + abs(rng.normal(0, 0.0003))
    rollout_time = 300.0 if s.rollout_dominates else 30.0
    return {"reward": reward, "entropy": entropy, "length": length_mean, "truncated": truncated, "kl": kl,
            "rollout_time": rollout_time + rng.normal(0, 2), "train_time": 40.0 + rng.normal(0, 1)}


@dataclass
class LogCall:
    """One call of slime's `logging_utils.log`: which process logs, its step key and step, the values."""

    process: str  # "rollout_manager" | "actor"
    step_key: str  # "rollout/step" | "train/step" | "eval/step"
    step: int
    values: dict[str, float]
    wall: float


def slime_like_calls(scenario: Scenario | None = None):
    """The log calls of one slime-like run, in the order slime makes them (seeded, deterministic)."""
    s = scenario or Scenario()
    rng = np.random.default_rng(s.seed)
    wall = s.wall_start
    k = s.steps_per_rollout
    for r in range(s.first_rollout, s.first_rollout + s.rollouts):
        c = _curves(s, r, rng)
        wall += c["rollout_time"]
        manager_values = {
            "rollout/response_len/mean": c["length"], "rollout/response_len/median": c["length"] * 0.95,
            "rollout/response_len/max": 4096.0, "rollout/response_len/min": 40.0,
            "rollout/truncated_ratio": c["truncated"], "rollout/repetition_frac": 0.01,
            "perf/rollout_time": c["rollout_time"], "perf/tokens_per_gpu_per_sec": 1500.0 + rng.normal(0, 30),
            "perf/longest_sample_tokens_per_sec": 40.0,
        }
        for i in range(s.extra_tags):
            manager_values[f"rollout/extra/metric_{i:03d}"] = float(rng.normal())
        yield LogCall("rollout_manager", "rollout/step", r, manager_values, wall)
        actor_values = {
            "rollout/raw_reward": c["reward"], "rollout/rewards": float(rng.normal(0, 0.01)),
            "rollout/response_lengths": c["length"], "rollout/truncated": c["truncated"],
            "rollout/log_probs": -0.3, "rollout/ref_log_probs": -0.3 - c["kl"],
            "rollout/rollout_log_probs": -0.3, "rollout/advantages": 0.0,
        }
        yield LogCall("actor", "rollout/step", r, actor_values, wall + 1)
        for i in range(k):
            grad = 0.3 + abs(rng.normal(0, 0.03))
            if s.grad_spike_at is not None and r * k + i == s.grad_spike_at:
                grad = 25.0
            train_values = {
                "train/loss": float(rng.normal(0, 0.01)), "train/pg_loss": float(rng.normal(0, 0.01)),
                "train/entropy_loss": c["entropy"], "train/pg_clipfrac": 0.002,
                "train/ppo_kl": c["kl"] / 10, "train/kl_loss": c["kl"],
                "train/train_rollout_logprob_abs_diff": 0.01 + (c["kl"] if s.kl_growth else 0.0),
                "train/grad_norm": grad, "train/lr-pg_0": 1e-6, "train/global_batch_size": 256.0,
            }
            yield LogCall("actor", "train/step", r * k + i, train_values, wall + 2 + i)
        wall += c["train_time"]
        wait = c["rollout_time"]
        perf_values = {
            "perf/data_preprocess_time": 1.0, "perf/log_probs_time": 5.0, "perf/ref_log_probs_time": 5.0,
            "perf/actor_train_time": c["train_time"] - 10, "perf/train_time": c["train_time"],
            "perf/train_wait_time": wait, "perf/step_time": wait + c["train_time"],
            "perf/wait_time_ratio": wait / (wait + c["train_time"]), "perf/update_weights_time": 3.0,
        }
        yield LogCall("actor", "rollout/step", r, perf_values, wall)
        if s.eval_interval and (r + 1) % s.eval_interval == 0:
            score = 0.3 if s.eval_stalled else 0.2 + 0.4 * (r + 1) / s.rollouts + rng.normal(0, 0.01)
            yield LogCall("rollout_manager", "eval/step", r, {f"eval/{s.eval_dataset}": score,
                                                              f"eval/{s.eval_dataset}-truncated_ratio": 0.03},
                          wall + 5)
        wall += 5


def write_slime_like_run(run_dir: str | Path, scenario: Scenario | None = None) -> list[Path]:
    """Write one slime-like run (two event files, like slime's two logging processes); return the files."""
    from tensorboardX import SummaryWriter

    s = scenario or Scenario()
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    # one writer per slime process; the start rollout in the name keeps a restart's files apart and in order
    tag = f".r{s.first_rollout:06d}"
    writers = {name: SummaryWriter(str(run_dir), filename_suffix=f"{tag}.{name}", flush_secs=3600,
                                   max_queue=10_000) for name in ("rollout_manager", "actor")}
    for call in slime_like_calls(s):
        for name, value in call.values.items():
            writers[call.process].add_scalar(name, value, call.step, walltime=call.wall)
    for writer in writers.values():
        writer.close()
    return sorted(p for p in run_dir.iterdir() if "tfevents" in p.name)


def write_scalar_grid(run_dir: str | Path, steps: int, tags: int, seed: int = 0) -> Path:
    """A plain benchmark log: `tags` scalars at each of `steps` steps, one writer (steps x tags scalars)."""
    from tensorboardX import SummaryWriter

    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    groups = ("rollout", "train", "perf", "eval")
    names = [f"{groups[i % 4]}/metric_{i:03d}" for i in range(tags)]
    # the tags the checklist reads come first, so the benchmark times every verdict on full-length curves
    checked = ("rollout/raw_reward", "train/kl_loss", "train/entropy_loss", "train/grad_norm", "eval/aime",
               "eval/retail-dev", "rollout/truncated_ratio", "perf/wait_time_ratio", "train/loss")
    names[:len(checked)] = checked[:tags]
    values = rng.normal(size=(steps, tags))
    writer = SummaryWriter(str(run_dir), flush_secs=3600, max_queue=100_000)
    for step in range(steps):
        row = values[step]
        for j, name in enumerate(names):
            writer.add_scalar(name, float(row[j]), step, walltime=1_750_000_000.0 + step)
    writer.close()
    return next(p for p in run_dir.iterdir() if "tfevents" in p.name)


def frame_record(payload: bytes) -> bytes:
    """One TFRecord: length, masked CRC of the length, payload, masked CRC of the payload."""
    import struct

    from core.monitor.tensorboard.crc import masked_crc32c

    header = struct.pack("<Q", len(payload))
    return (header + struct.pack("<I", masked_crc32c(header)) + payload
            + struct.pack("<I", masked_crc32c(payload)))


def scalar_event(tag: str, value: float, step: int, wall_time: float = 1_750_000_000.0) -> bytes:
    """A serialized Event holding one simple_value scalar (what torch's add_scalar writes)."""
    from tensorboard.compat.proto import event_pb2, summary_pb2

    summary = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag, simple_value=value)])
    return event_pb2.Event(wall_time=wall_time, step=step, summary=summary).SerializeToString()


def file_version_event(version: str = "brain.Event:2", wall_time: float = 1_750_000_000.0) -> bytes:
    from tensorboard.compat.proto import event_pb2

    return event_pb2.Event(wall_time=wall_time, file_version=version).SerializeToString()


def session_start_event(step: int, wall_time: float = 1_750_000_000.0) -> bytes:
    from tensorboard.compat.proto import event_pb2

    log = event_pb2.SessionLog(status=event_pb2.SessionLog.START)
    return event_pb2.Event(wall_time=wall_time, step=step, session_log=log).SerializeToString()


def write_raw_event_file(path: str | Path, payloads: list[bytes]) -> Path:
    """Write payloads as an event file with correct framing (tests craft unusual but valid files this way)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(b"".join(frame_record(x) for x in payloads))
    return p
