"""Facts about the run that several rules need, derived from the script alone: the parallel sizes, the
data-parallel size, slime's batch equation, how a step's samples split into micro-batches, the GPU layout.

Each is a pure function of the RuleContext decorated with `@derivation`: computed the first time a rule (or
the report's summary) asks, then kept on that context for the rest of the check, so every rule that needs
the batch arithmetic computes it from the script and gets the same answer. A derivation reads the context's
flag facts and other derivations, never a rule's findings; no rule stores anything for another, so skipping
a rule (a version gate, a Skip, another backend) cannot change what the others find.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from core.batch import (
    BatchInputError,
    BatchResult,
    MicroBatchSplit,
    check_batch_equation,
    check_micro_batch_split,
)
from core.launch.rules.registry import Skip

if TYPE_CHECKING:
    from core.launch.rules.context import RuleContext

T = TypeVar("T")


def derivation(fn: Callable[[RuleContext], T]) -> Callable[[RuleContext], T]:
    """Compute `fn(ctx)` once per RuleContext: the value, or the Skip it raised (a flag it needs is unknown),
    is kept in `ctx.derived` and returned, or raised again, on every later call."""

    @functools.wraps(fn)
    def cached(ctx: RuleContext) -> T:
        memo: dict[Callable[..., Any], tuple[Any, Skip | None]] = ctx.derived
        if fn not in memo:
            try:
                memo[fn] = (fn(ctx), None)
            except Skip as skip:
                memo[fn] = (None, skip)
        value, skip = memo[fn]
        if skip is not None:
            raise skip
        return value

    return cached


@derivation
def parallel_sizes(ctx: RuleContext) -> tuple[int, int, int]:
    """Megatron's tensor, pipeline and context parallel sizes (1 when absent)."""
    return (ctx.need("--tensor-model-parallel-size", 1) or 1, ctx.need("--pipeline-model-parallel-size", 1) or 1,
            ctx.need("--context-parallel-size", 1) or 1)


@derivation
def data_parallel_size(ctx: RuleContext) -> int | None:
    """The training world (--actor-num-nodes x --actor-num-gpus-per-node) over TP x PP x CP; None when a size is
    unknown or the world does not divide (MEG001 reports that)."""
    try:
        world = ctx.need("--actor-num-nodes", 1) * ctx.need("--actor-num-gpus-per-node", 8)
        tp, pp, cp = parallel_sizes(ctx)
    except Skip:
        return None
    if world <= 0 or world % (tp * pp * cp):
        return None
    return world // (tp * pp * cp)


@dataclass(frozen=True)
class BatchEquation:
    """slime's batch equation as the script sets it: the result of core.batch, or why its inputs are refused."""

    result: BatchResult | None
    error: str | None = None  # the BatchInputError message when the inputs are refused


@derivation
def batch_equation(ctx: RuleContext) -> BatchEquation | None:
    """rollout batch x samples per prompt against global batch x steps per rollout (core.batch); None without
    --rollout-batch-size. Without a global batch and steps, Megatron's default micro batch x DP is assumed."""
    rbs = ctx.need("--rollout-batch-size")
    if rbs is None:
        return None
    n = ctx.need("--n-samples-per-prompt", 1)
    gbs = ctx.need("--global-batch-size")
    steps = ctx.need("--num-steps-per-rollout")
    num_rollout = ctx.need("--num-rollout")
    default_gbs = None
    if gbs is None and steps is None:
        dp = data_parallel_size(ctx)
        mbs = ctx.need("--micro-batch-size", 1)
        default_gbs = mbs * dp if dp and mbs else None
    try:
        return BatchEquation(check_batch_equation(rbs, n, gbs, steps, num_rollout=num_rollout,
                                                  default_global_batch_size=default_gbs))
    except BatchInputError as exc:
        return BatchEquation(None, str(exc))


def known_batch(ctx: RuleContext) -> BatchResult | None:
    """The batch arithmetic when it can be computed (all its flags known, inputs accepted), else None."""
    try:
        equation = batch_equation(ctx)
    except Skip:
        return None
    return equation.result if equation is not None else None


@dataclass(frozen=True)
class SplitCheck:
    """How the global batch splits into micro-batches over the data-parallel ranks, and the flag to point at."""

    split: MicroBatchSplit
    flag: str


@derivation
def micro_batch_split(ctx: RuleContext) -> SplitCheck | None:
    """The global batch slime derives, split into micro-batches over DP ranks (core.batch.check_micro_batch_split);
    None when nothing is trained, the batch or DP is unknown, or no split happens (--debug-rollout-only, batch
    ramp-up). Raises Skip when a flag of the split itself is unknown."""
    num_rollout = ctx.fact("--num-rollout")
    if num_rollout.known and num_rollout.value == 0:
        return None
    batch = known_batch(ctx)
    if batch is None or batch.effective_global_batch_size in (None, 0):
        return None
    if ctx.is_set("--debug-rollout-only") or ctx.need("--rampup-batch-size") is not None:
        return None
    dp = data_parallel_size(ctx)
    if dp is None:
        return None
    gbs = batch.effective_global_batch_size
    mbs = ctx.need("--micro-batch-size", 1) or 1
    steps = batch.num_steps_per_rollout
    derived = (f"{batch.rollout_batch_size} x {batch.n_samples_per_prompt} // {steps}" if steps is not None
               else None)
    vpp = any(ctx.need(f) is not None for f in ("--num-layers-per-virtual-pipeline-stage",
                                                 "--num-virtual-stages-per-pipeline-rank"))
    split = check_micro_batch_split(gbs, mbs, dp, dynamic=ctx.is_set("--use-dynamic-batch-size") or vpp,
                                    decrease_if_needed=ctx.is_set("--decrease-batch-size-if-needed"),
                                    derived_from=derived, samples_per_rollout=batch.samples_per_rollout,
                                    num_steps_per_rollout=steps)
    flag = ("--num-steps-per-rollout" if steps is not None else
            "--global-batch-size" if batch.global_batch_size is not None else "--micro-batch-size")
    return SplitCheck(split, flag)


@dataclass(frozen=True)
class GpuLayout:
    """The GPUs slime's placement group asks Ray for, and the Skip of the first count that is unknown."""

    counts: dict[str, Any]  # mode, actor_gpus, rollout_gpus, total (and rollout_known when disaggregated)
    unknown: Skip | None


@derivation
def placement(ctx: RuleContext) -> GpuLayout:
    """How many GPUs slime's placement group asks Ray for (slime/ray/placement_group.py:100).

    Counts that cannot be resolved are None (`unknown` says why); the mode (colocated, disaggregated, ...)
    needs only switches, and raises Skip when one of those is unknown.
    """
    unknown: Skip | None = None
    try:
        actor: int | None = ctx.need("--actor-num-nodes", 1) * ctx.need("--actor-num-gpus-per-node", 8)
    except Skip as skip:
        actor, unknown = None, skip
    colocate = ctx.is_set("--colocate")
    try:
        rollout = ctx.need("--rollout-num-gpus")
        rollout_known = True
    except Skip as skip:
        rollout, rollout_known, unknown = None, False, unknown or skip

    def total(*parts: int | None) -> int | None:
        return None if any(p is None for p in parts) else sum(parts)  # type: ignore[arg-type]

    if ctx.is_set("--debug-train-only") or ctx.need("--load-debug-rollout-data") is not None:
        counts = {"mode": "debug-train-only", "actor_gpus": actor, "rollout_gpus": 0, "total": actor}
    elif ctx.need("--rollout-external-engine-addrs") is not None:
        counts = {"mode": "external rollout", "actor_gpus": actor, "rollout_gpus": 0, "total": actor}
    elif ctx.is_set("--debug-rollout-only"):
        r = actor if colocate and rollout is None and rollout_known else rollout
        counts = {"mode": "debug-rollout-only", "actor_gpus": 0, "rollout_gpus": r, "total": r}
    elif colocate:
        r = actor if rollout is None and rollout_known else rollout
        both = None if actor is None or r is None else max(actor, r)
        counts = {"mode": "colocated", "actor_gpus": actor, "rollout_gpus": r, "total": both}
    else:
        counts = {"mode": "disaggregated", "actor_gpus": actor, "rollout_gpus": rollout,
                  "rollout_known": rollout_known, "total": total(actor, rollout)}
    return GpuLayout(counts, unknown)


def gpu_layout(ctx: RuleContext) -> dict[str, Any]:
    """The placement group's GPU counts (see `placement`); a fresh dict each call, so a caller cannot alter the
    cached one."""
    return dict(placement(ctx).counts)
