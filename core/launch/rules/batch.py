"""Batch arithmetic rules (BATCH0xx): slime's batch equation and how a step's samples split over data-parallel
ranks. The arithmetic itself lives in core.batch, shared with the drafts and the pages.
"""

from __future__ import annotations

from collections.abc import Iterable

from core.batch import (
    BATCH_CARD,
    SRC_MICRO_DIVISIBLE,
    SRC_STATIC_SPLIT,
    BatchInputError,
    check_batch_equation,
    check_micro_batch_split,
)
from core.findings import Finding
from core.launch.rules.context import RuleContext
from core.launch.rules.megatron import parallel_sizes
from core.launch.rules.registry import ERR, INFO, WARN, Skip, register, rule
from core.pins import megatron_source, slime_source

register("BATCH002", "Batch equation holds with other steps", INFO, slime_source("slime/utils/dp_schedule.py", 135),
         BATCH_CARD)
register("BATCH003", "No global batch size", WARN, megatron_source("megatron/training/arguments.py", 498),
         BATCH_CARD)
register("BATCH004", "Rollout smaller than one global batch", ERR, slime_source("slime/utils/dp_schedule.py", 136),
         BATCH_CARD)



def _data_parallel_size(ctx: RuleContext) -> int | None:
    try:
        world = ctx.need("--actor-num-nodes", 1) * ctx.need("--actor-num-gpus-per-node", 8)
        tp, pp, cp = parallel_sizes(ctx)
    except Skip:
        return None
    if world <= 0 or world % (tp * pp * cp):
        return None
    return world // (tp * pp * cp)


@rule("BATCH001", "Batch equation fails", ERR, slime_source("slime/utils/arguments.py", 1974), BATCH_CARD)
def batch_equation(ctx: RuleContext) -> Iterable[Finding]:
    """rollout_batch_size x n_samples_per_prompt must equal global_batch_size x num_steps_per_rollout."""
    rbs = ctx.need("--rollout-batch-size")
    if rbs is None:
        return
    n = ctx.need("--n-samples-per-prompt", 1)
    gbs = ctx.need("--global-batch-size")
    steps = ctx.need("--num-steps-per-rollout")
    num_rollout = ctx.need("--num-rollout")
    default_gbs = None
    if gbs is None and steps is None:
        dp = _data_parallel_size(ctx)
        mbs = ctx.need("--micro-batch-size", 1)
        default_gbs = mbs * dp if dp and mbs else None
    try:
        result = check_batch_equation(rbs, n, gbs, steps, num_rollout=num_rollout,
                                      default_global_batch_size=default_gbs)
    except BatchInputError as exc:
        yield ctx.hit("BATCH001", str(exc), flag="--rollout-batch-size")
        return
    ctx.batch = result
    if result.status == "ok" or result.code is None:
        return
    severity = {"error": ERR, "warning": WARN, "info": INFO}[result.status]
    exact = [f.message for f in result.fixes if f.value is not None or f.message.startswith("or ")]
    fix = "; ".join(exact) if exact else (result.fixes[0].message if result.fixes else None)
    flag = "--global-batch-size" if gbs is not None else "--num-steps-per-rollout" if steps is not None else \
        "--rollout-batch-size"
    notes = " ".join(result.assumptions)
    yield ctx.hit(result.code, f"{result.equation}: {result.slime_behaviour}"
                  + (f" ({notes})" if notes else ""), flag=flag, fix=fix, severity=severity, source=result.source)


register("BATCH005", "Nothing trained", INFO, slime_source("train.py", 35), BATCH_CARD)


@rule("BATCH006", "Static micro-batches do not split over data-parallel ranks", ERR, SRC_STATIC_SPLIT, BATCH_CARD)
def micro_batches_split_evenly(ctx: RuleContext) -> Iterable[Finding]:
    """The global batch, as slime derives it, must split into whole micro-batches over the data-parallel ranks.

    At start-up Megatron's micro-batch calculator asserts global batch % (micro batch x DP) == 0, with or
    without dynamic batching (BATCH008; BATCH007 when not even one micro-batch per rank fits); at each step
    slime's static schedule needs a micro-batch count that is a multiple of DP (BATCH006), which only
    --decrease-batch-size-if-needed lets through start-up. core.batch.check_micro_batch_split decides.
    """
    num_rollout = ctx.fact("--num-rollout")
    if num_rollout.known and num_rollout.value == 0:
        yield ctx.hit("BATCH005", "--num-rollout 0: no rollout is trained (train.py only evaluates when "
                      "--eval-interval is set).", flag="--num-rollout")
        return
    if ctx.batch is None or ctx.batch.effective_global_batch_size in (None, 0):
        return
    if ctx.is_set("--debug-rollout-only") or ctx.need("--rampup-batch-size") is not None:
        return
    dp = _data_parallel_size(ctx)
    if dp is None:
        return
    batch = ctx.batch
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
    if split.code is None:
        return
    flag = ("--num-steps-per-rollout" if steps is not None else
            "--global-batch-size" if batch.global_batch_size is not None else "--micro-batch-size")
    message, severity = split.message, None
    if split.code == "BATCH006" and (ctx.need("--custom-generate-function-path") is not None
                                     or ctx.fact("--rollout-function-path").present):
        message += " (With a custom rollout one step may hold more samples; this assumes one sample per rollout.)"
        severity = WARN
    yield ctx.hit(split.code, message, flag=flag, fix=split.fix, source=split.source, severity=severity)


register("BATCH008", "Global batch not a multiple of micro batch x data-parallel size", ERR,
         SRC_MICRO_DIVISIBLE, BATCH_CARD)
register("BATCH007", "Global batch below micro batch x data-parallel size", ERR, SRC_MICRO_DIVISIBLE, BATCH_CARD)
