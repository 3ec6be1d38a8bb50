"""Batch arithmetic rules (BATCH0xx): slime's batch equation and how a step's samples split over data-parallel
ranks. The arithmetic itself lives in core.batch, shared with the drafts and the pages.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from core.batch import BATCH_CARD, BatchInputError, check_batch_equation
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


@rule("BATCH006", "Static micro-batches do not split over data-parallel ranks", ERR,
      slime_source("slime/utils/dp_schedule.py", 175), BATCH_CARD)
def static_batches_split_evenly(ctx: RuleContext) -> Iterable[Finding]:
    """With static batching a step's micro-batch count, ceil(global batch / micro batch), must divide by DP."""
    num_rollout = ctx.fact("--num-rollout")
    if num_rollout.known and num_rollout.value == 0:
        yield ctx.hit("BATCH005", "--num-rollout 0: no rollout is trained (train.py only evaluates when "
                      "--eval-interval is set).", flag="--num-rollout")
        return
    if ctx.batch is None or ctx.batch.effective_global_batch_size in (None, 0):
        return
    dp = _data_parallel_size(ctx)
    if dp is None:
        return
    gbs = ctx.batch.effective_global_batch_size
    custom = ctx.need("--custom-generate-function-path") is not None or ctx.fact("--rollout-function-path").present
    sev = WARN if custom else ERR
    caveat = " (with a custom rollout one step may hold more samples; this assumes one sample per rollout)" if \
        custom else ""
    if gbs < dp:
        yield ctx.hit("BATCH007", f"The global batch ({gbs}) is smaller than the data-parallel size ({dp}); every "
                      f"rank needs at least one sample per step.{caveat}", flag="--global-batch-size", severity=sev,
                      fix=f"use a global batch of at least {dp}")
        return
    if ctx.is_set("--use-dynamic-batch-size"):
        return
    for f in ("--num-layers-per-virtual-pipeline-stage", "--num-virtual-stages-per-pipeline-rank"):
        if ctx.need(f) is not None:
            return
    mbs = ctx.need("--micro-batch-size", 1) or 1
    chunks = math.ceil(gbs / mbs)
    if chunks % dp:
        good = dp * mbs
        yield ctx.hit("BATCH006", f"Static batching: a step of {gbs} samples makes {chunks} micro-batches of "
                      f"{mbs}, which does not divide over {dp} data-parallel ranks; slime stops at the first "
                      f"training step.{caveat}", flag="--micro-batch-size", severity=sev,
                      fix=f"use a global batch that is a multiple of {good} (DP {dp} x micro batch {mbs}), or "
                      "--use-dynamic-batch-size")


register("BATCH007", "Global batch below the data-parallel size", ERR, slime_source("slime/utils/dp_schedule.py", 151),
         BATCH_CARD)
