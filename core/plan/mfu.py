"""MFU and ETA for a running job, for the monitor: slime logs `perf/actor_train_tflops` per GPU (three forward
passes' worth of its FLOPs formula over the train time, slime/observability/train_metric_utils.py:392), so its
ratio to the GPU's dense bf16 peak is the model FLOPs utilisation; the ETA is the remaining rollouts at the
median step time."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from core.plan.gpus import find_gpu

LOW_MFU = 0.15  # below this the training phase wastes most of the GPU; slime's large runs report 0.2-0.45
CAUSES = ("micro-batches too small for the GPU (raise --max-tokens-per-gpu, or turn on --use-dynamic-batch-size)",
          "TP or EP spanning nodes (keep --tensor-model-parallel-size within a node's NVLink)",
          "pipeline bubbles (PP with few micro-batches per step)",
          "CPU Adam (--optimizer-cpu-offload) or offload between phases taking the step's time",
          "full recompute: it repeats the forward pass, which slime's FLOPs count does not include")


def low_mfu_fix() -> str:
    """What to look at when MFU is low: the likely causes, most common first."""
    return "likely causes, most common first: " + "; ".join(CAUSES)


def mfu_of(tflops_per_gpu: float, gpu: str) -> float:
    """`perf/actor_train_tflops` (TFLOP/s a GPU) as a fraction of the GPU's dense bf16 peak."""
    return tflops_per_gpu * 1e12 / find_gpu(gpu).bf16_flops


def eta_seconds(num_rollout: int, rollouts_done: int, step_seconds: Sequence[float]) -> float | None:
    """Seconds left: the rollouts still to run times the median of the measured step times (None without any)."""
    steps = [s for s in step_seconds if isinstance(s, (int, float)) and math.isfinite(s) and s > 0]
    if not steps or num_rollout <= 0:
        return None
    return max(num_rollout - rollouts_done, 0) * statistics.median(steps)
