"""Batch arithmetic rules (BATCH0xx): slime's batch equation and how a step's samples split over data-parallel
ranks. The arithmetic itself lives in core.batch, shared with the drafts and the pages.
"""

from __future__ import annotations

from collections.abc import Iterable

from core.batch import BATCH_CARD, SRC_MICRO_DIVISIBLE, SRC_STATIC_SPLIT
from core.findings import Finding
from core.launch.rules.context import RuleContext
from core.launch.rules.derivations import batch_equation, micro_batch_split
from core.launch.rules.registry import ERR, INFO, WARN, register, rule
from core.pins import megatron_source, slime_source

register("BATCH002", slime_source("slime/utils/dp_schedule.py", 135), BATCH_CARD)
register("BATCH003", megatron_source("megatron/training/arguments.py", 498), BATCH_CARD)
register("BATCH004", slime_source("slime/utils/dp_schedule.py", 136), BATCH_CARD)



@rule("BATCH001", slime_source("slime/utils/arguments.py", 1974), BATCH_CARD)
def batch_equation_holds(ctx: RuleContext) -> Iterable[Finding]:
    """rollout_batch_size x n_samples_per_prompt must equal global_batch_size x num_steps_per_rollout."""
    equation = batch_equation(ctx)
    if equation is None:
        return
    if equation.result is None:
        yield ctx.hit("BATCH001", equation.error or "", flag="--rollout-batch-size")
        return
    result = equation.result
    if result.status == "ok" or result.code is None:
        return
    severity = {"error": ERR, "warning": WARN, "info": INFO}[result.status]
    exact = [f.message for f in result.fixes if f.value is not None or f.message.startswith("or ")]
    fix = "; ".join(exact) if exact else (result.fixes[0].message if result.fixes else None)
    flag = ("--global-batch-size" if ctx.need("--global-batch-size") is not None else "--num-steps-per-rollout"
            if ctx.need("--num-steps-per-rollout") is not None else "--rollout-batch-size")
    notes = " ".join(result.assumptions)
    yield ctx.hit(result.code, f"{result.equation}: {result.slime_behaviour}"
                  + (f" ({notes})" if notes else ""), flag=flag, fix=fix, severity=severity, source=result.source)


@rule("BATCH005", slime_source("train.py", 35), BATCH_CARD)
def something_is_trained(ctx: RuleContext) -> Iterable[Finding]:
    """--num-rollout 0 trains nothing: train.py's loop over rollouts never runs."""
    num_rollout = ctx.fact("--num-rollout")
    if num_rollout.known and num_rollout.value == 0:
        yield ctx.hit("BATCH005", "--num-rollout 0: no rollout is trained (train.py only evaluates when "
                      "--eval-interval is set).", flag="--num-rollout")


@rule("BATCH006", SRC_STATIC_SPLIT, BATCH_CARD)
def micro_batches_split_evenly(ctx: RuleContext) -> Iterable[Finding]:
    """With static batching, slime's schedule needs each step's micro-batch count to be a multiple of the
    data-parallel size (slime/utils/dp_schedule.py); only --decrease-batch-size-if-needed lets such a global
    batch through Megatron's start-up check. The split itself is `derivations.micro_batch_split`
    (core.batch.check_micro_batch_split decides); Megatron's start-up check is BATCH008/BATCH007.
    """
    check = micro_batch_split(ctx)
    if check is None or check.split.code != "BATCH006":
        return
    message, severity = check.split.message, None
    if ctx.need("--custom-generate-function-path") is not None or ctx.fact("--rollout-function-path").present:
        message += " (With a custom rollout one step may hold more samples; this assumes one sample per rollout.)"
        severity = WARN
    yield ctx.hit("BATCH006", message, flag=check.flag, fix=check.split.fix, source=check.split.source,
                  severity=severity)


@rule("BATCH008", SRC_MICRO_DIVISIBLE, BATCH_CARD)
def global_batch_fits_micro_batches(ctx: RuleContext) -> Iterable[Finding]:
    """At start-up Megatron's micro-batch calculator asserts global batch % (micro batch x DP) == 0, with or
    without dynamic batching (BATCH008; BATCH007 when not even one micro-batch per rank fits). The split is
    `derivations.micro_batch_split`, the same one BATCH006 reads; neither rule needs the other to run."""
    check = micro_batch_split(ctx)
    if check is None or check.split.code not in ("BATCH007", "BATCH008"):
        return
    yield ctx.hit(check.split.code, check.split.message, flag=check.flag, fix=check.split.fix,
                  source=check.split.source)


register("BATCH007", SRC_MICRO_DIVISIBLE, BATCH_CARD)
