"""Slime-shaped W&B runs for tests and benchmarks, written by the real `wandb` SDK in offline mode (a dev
dependency; nothing goes over the network).

The layout copies slime at the pinned commit: `train.py` opens the primary run with the launch arguments as
its config, then the rollout manager and the Megatron actor each join the same run id (`resume="allow"`)
and declare the step metrics (slime/observability/wandb_utils.py:22-176@624b824a). In offline mode every
process writes its own `offline-run-<time>-<id>/run-<id>.wandb`, so one run is several files. Values are
those of `synthetic.slime_like_calls`, the same as the TensorBoard writer's, with the same wall times.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import numpy as np

from core.monitor.tensorboard.synthetic import Scenario, slime_like_calls

SLIME_DEFINE_METRICS = (("train/step", None), ("train/*", "train/step"), ("rollout/step", None),
                        ("rollout/*", "rollout/step"), ("multi_turn/*", "rollout/step"),
                        ("passrate/*", "rollout/step"), ("eval/step", None), ("eval/*", "eval/step"),
                        ("perf/*", "rollout/step"))
# the test run: a first run, then a resumed one going back to rollout 15 (as the TensorBoard tests' restart)
WANDB_FIRST = Scenario(rollouts=20, seed=1, grad_spike_at=9, nan_reward_at=4)
WANDB_RESUMED = Scenario(rollouts=10, first_rollout=15, seed=2, wall_start=1_760_000_000.0)
QUIET_ENV = {"WANDB_MODE": "offline", "WANDB_SILENT": "true", "WANDB_DISABLE_CODE": "true",
             "WANDB_DISABLE_GIT": "true", "WANDB_CONSOLE": "off", "WANDB_ERROR_REPORTING": "false",
             "WANDB_DISABLE_SERVICE": None, "WANDB_API_KEY": None, "WANDB_BASE_URL": "http://127.0.0.1:9"}


@contextlib.contextmanager
def offline_wandb(root: Path):
    """Environment for writing offline runs under `root` only (its own config and cache directories)."""
    saved = {}
    env = {**QUIET_ENV, "WANDB_DIR": str(root), "WANDB_CONFIG_DIR": str(root / ".config"),
           "WANDB_CACHE_DIR": str(root / ".cache"), "WANDB_DATA_DIR": str(root / ".data"),
           "WANDB_ARTIFACT_DIR": str(root / ".artifacts")}
    for key, value in env.items():
        saved[key] = os.environ.get(key)
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _settings():
    import wandb

    return wandb.Settings(mode="offline", x_disable_stats=True, x_disable_meta=True, x_save_requirements=False,
                          console="off", silent=True)


def _open(root: Path, run_id: str, config: dict | None, resume: bool, name: str | None = None):
    import wandb

    kwargs = {"project": "slime-test", "id": run_id, "dir": str(root), "config": config or {},
              "settings": _settings()}
    if name:
        kwargs["name"] = name
    if resume:
        kwargs["resume"] = "allow"
    run = wandb.init(**kwargs)
    for metric, step_metric in SLIME_DEFINE_METRICS:
        if step_metric is None:
            run.define_metric(metric)
        else:
            run.define_metric(metric, step_metric=step_metric)
    return run


def slime_config(scenario: Scenario) -> dict:
    """A few launch arguments as slime's config holds them (args.__dict__: dest names, parsed values)."""
    return {"rollout_batch_size": 32, "n_samples_per_prompt": 8, "global_batch_size": 256 // 2,
            "num_steps_per_rollout": None, "use_wandb": True, "wandb_project": "slime-test",
            "wandb_always_use_train_step": False, "advantage_estimator": "grpo", "use_kl_loss": True,
            "kl_loss_coef": 0.0, "rollout_temperature": 1.0, "lr": 1e-6, "num_rollout": scenario.rollouts,
            "hf_checkpoint": "/models/Qwen3-4B", "env_vars": {}, "wandb_key": "local-secret-123"}


def write_wandb_run(root: str | Path, scenario: Scenario | None = None, run_id: str = "slimetest",
                    config: dict | None = None, primary: bool = True) -> list[Path]:
    """Write one slime-like W&B run under root/wandb (the primary, then the rollout manager and the actor
    joining the same id); return the run files written. A second call with the same id is a resumed run."""
    import wandb

    s = scenario or Scenario()
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    calls = list(slime_like_calls(s))
    with offline_wandb(root):
        if primary:
            run = _open(root, run_id, config if config is not None else slime_config(s), resume=True,
                        name="slime-test-group")
            run.finish()
        for process in ("rollout_manager", "actor"):
            run = _open(root, run_id, {}, resume=True)
            for call in calls:
                if call.process == process:
                    run.log({**call.values, call.step_key: call.step, "_timestamp": call.wall})
            run.finish()
        wandb.teardown()
    return sorted((root / "wandb").glob(f"*run-*-{run_id}*/run-{run_id}.wandb"))


def write_wandb_grid(root: str | Path, steps: int, tags: int, seed: int = 0, run_id: str = "benchgrid") -> Path:
    """The benchmark grid (same names and values as `synthetic.write_scalar_grid`) as one W&B run file."""
    import wandb

    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    groups = ("rollout", "train", "perf", "eval")
    names = [f"{groups[i % 4]}/metric_{i:03d}" for i in range(tags)]
    values = rng.normal(size=(steps, tags))
    with offline_wandb(root):
        run = _open(root, run_id, {"use_wandb": True}, resume=False)
        for step in range(steps):
            row = dict(zip(names, values[step].tolist(), strict=True))
            row.update({"rollout/step": step, "train/step": step, "eval/step": step,
                        "_timestamp": 1_750_000_000.0 + step})
            run.log(row)
        run.finish()
        wandb.teardown()
    return next((root / "wandb").glob(f"*run-*-{run_id}*/run-{run_id}.wandb"))


def frame_wandb_records(payloads: list[bytes], offset: int = 0) -> bytes:
    """A run file holding these serialized records, framed as W&B frames them (header, 32 KiB blocks, pieces
    for records that cross a block, CRC-32 of type and data); tests craft unusual but valid files this way.
    With `offset` (the size of a run file so far) the bytes to append to that file, without the header."""
    import struct
    import zlib

    from core.monitor.wandb.log import BLOCK, CHUNK_HEADER, FILE_HEADER, FIRST, FULL, LAST, MIDDLE

    out = bytearray(b"" if offset else FILE_HEADER)
    for payload in payloads:
        rest = memoryview(payload)
        first = True
        while True:
            left = BLOCK - (offset + len(out)) % BLOCK
            if left < CHUNK_HEADER:
                out += b"\x00" * left
                continue
            piece = rest[:left - CHUNK_HEADER]
            rest = rest[len(piece):]
            kind = (FULL if not len(rest) else FIRST) if first else (LAST if not len(rest) else MIDDLE)
            out += struct.pack("<IHB", zlib.crc32(bytes([kind]) + bytes(piece)), len(piece), kind) + bytes(piece)
            first = False
            if not len(rest):
                break
    return bytes(out)


def history_record(row: dict, num: int = 0) -> bytes:
    """A serialized history record with these keys and values (values are JSON-encoded as W&B does)."""
    import json

    from core.monitor.wandb.proto import record_class

    record = record_class()(num=num)
    for key, value in row.items():
        item = record.history.item.add()
        if isinstance(key, tuple):
            item.nested_key.extend(key)
        else:
            item.nested_key.append(key)
        item.value_json = value if isinstance(value, str) and value in ("NaN", "Infinity") else json.dumps(value)
    return record.SerializeToString()


def metric_record(name: str, step_metric: str | None = None) -> bytes:
    from core.monitor.wandb.proto import record_class

    record = record_class()()
    if step_metric:
        record.metric.glob_name = name
        record.metric.step_metric = step_metric
    else:
        record.metric.name = name
    return record.SerializeToString()
