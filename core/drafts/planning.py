"""Planning a draft: one small validator per rule (async staleness, colocation, fully-async eval), the
model script, the GPU layout and the batch arithmetic; each returns findings, never raises for the user."""

from __future__ import annotations

import re

from core.drafts.request import (
    EXAMPLE_PARALLEL,
    FALLBACK_PARALLEL,
    MAX_STALENESS,
    SLIME_DEFAULT_GPUS_PER_NODE,
    SRC_ARGS,
    SRC_ASYNC,
    SRC_FULLY_ASYNC,
    BatchPlan,
    DraftRequest,
    GpuLayout,
    RuleResult,
)
from core.findings import Finding, Severity
from core.model_scripts import ModelScript, load_model_scripts, match_model
from core.pins import slime_source

# ---------------------------------------------------------------------------------------------------
# Rules (one small validator each)
# ---------------------------------------------------------------------------------------------------

def _finding(code: str, severity: Severity, message: str, *, flag: str | None = None, fix: str | None = None,
             source: str | None = None) -> Finding:
    return Finding(code=code, severity=severity, message=message, flag=flag, fix=fix, source=source)


def parse_positive_int(raw: object, label: str, *, maximum: int = MAX_STALENESS) -> tuple[int | None, str | None]:
    """Read a whole number >= 1 typed by a person; return (value, None) or (None, a specific message)."""
    if isinstance(raw, bool):
        return None, f"{label}: give a whole number"
    if isinstance(raw, int):
        value = raw
    else:
        text = str(raw).strip()
        if not text:
            return None, f"{label}: give a whole number of rollouts (1 or more)"
        if not re.fullmatch(r"[+-]?[0-9]{1,12}", text):
            return None, f"{label}: '{text[:40]}' is not a whole number"
        value = int(text)
    if value < 1:
        return None, f"{label}: {value} is not positive; it must be 1 or more"
    if value > maximum:
        return None, f"{label}: {value} is more than {maximum}; no run needs that much"
    return value, None


def check_staleness_positive(staleness: object) -> RuleResult:
    """The staleness budget (how many rollouts generations may run ahead of the weights) is a positive
    integer: train_async.py always overlaps the next rollout with training, so 0 is not possible."""
    source = slime_source(SRC_ASYNC, 39)
    value, error = parse_positive_int(staleness, "Accepted staleness")
    if error:
        return RuleResult(name="staleness is a positive whole number", passed=False, message=error, source=source)
    return RuleResult(name="staleness is a positive whole number", passed=True,
                      message=f"Accepted staleness: {value} rollout(s).", source=source)


def check_interval_within_staleness(interval: object, staleness: object) -> RuleResult:
    """`--update-weights-interval N` must not exceed the staleness budget: train_async.py pushes weights to
    the engines only every N rollouts, so a trained rollout may come from weights up to N rollouts old."""
    name = "weight-sync interval <= staleness"
    source = slime_source(SRC_ASYNC, 66)
    n, n_err = parse_positive_int(interval, "Weight-sync interval (--update-weights-interval)")
    s, s_err = parse_positive_int(staleness, "Accepted staleness")
    if n_err or s_err:
        return RuleResult(name=name, passed=False, message=n_err or s_err or "", source=source)
    assert n is not None and s is not None
    if n > s:
        return RuleResult(name=name, passed=False, source=source,
                          message=(f"--update-weights-interval {n} lets rollouts lag the weights by up to {n} "
                                   f"rollouts, more than the {s} you accept; use {s} or less."))
    return RuleResult(name=name, passed=True, source=source,
                      message=f"Weights reach the engines every {n} rollout(s); lag stays within {s}.")


def async_checks(request: DraftRequest) -> list[RuleResult]:
    """Both async checks, pass or fail, for the async page and the async draft."""
    return [check_staleness_positive(request.staleness),
            check_interval_within_staleness(request.update_weights_interval, request.staleness)]


def check_async_not_colocated(request: DraftRequest) -> list[Finding]:
    """train_async.py asserts that --colocate is off: generation overlaps training, so they need
    separate GPUs."""
    if request.train_entry == "train_async.py" and request.colocate:
        return [_finding("DRF010", Severity.ERROR, "train_async.py refuses --colocate (it asserts colocation "
                         "is off); async needs separate actor and rollout GPUs.", flag="--colocate",
                         fix="drop --colocate and split the GPUs between actor and rollout",
                         source=slime_source(SRC_ASYNC, 11))]
    return []


def check_fully_async_has_no_eval(request: DraftRequest) -> list[Finding]:
    """The fully-async rollout function raises when called for evaluation, so the draft sets no eval."""
    if request.fully_async:
        return [_finding("DRF033", Severity.INFO, "The fully-async rollout cannot evaluate (it raises in "
                         "evaluation mode), so the draft leaves EVAL_ARGS empty.",
                         source=slime_source(SRC_FULLY_ASYNC, 272))]
    return []


def choose_model_script(request: DraftRequest, scripts: tuple[ModelScript, ...] | None = None,
                        ) -> tuple[ModelScript | None, list[Finding]]:
    """The model script to source: the one named in the request, else an exact match for the model name.
    A family-only or unknown match is the user's choice, so it is an error rather than a guess. `scripts` are
    the model scripts of the user's own checkout when they named one (else the ones slime ships at the pin)."""
    scripts = scripts or load_model_scripts()
    if request.model_script:
        chosen = next((s for s in scripts if s.name == request.model_script), None)
        if chosen is None:
            return None, [_finding("DRF002", Severity.ERROR,
                                   f"slime ships no model script named '{request.model_script}'.",
                                   fix="pick one of the names under scripts/models",
                                   source=slime_source("scripts/models"))]
        return chosen, []
    match = match_model(request.model, scripts)
    if match.status == "exact":
        return match.scripts[0], []
    if match.status == "family":
        names = ", ".join(s.name for s in match.scripts)
        return None, [_finding("DRF001", Severity.ERROR, f"Pick the model script for your model: {names}. "
                               "The draft does not guess sizes.", fix="choose one of: " + names,
                               source=slime_source("scripts/models"))]
    return None, [_finding("DRF001", Severity.ERROR, match.message,
                           fix="write MODEL_ARGS from your model's config.json, or pick a close model script",
                           source=slime_source("scripts/models"))]


def _largest_divisor_at_most(total: int, cap: int) -> int:
    for d in range(min(cap, total), 0, -1):
        if total % d == 0:
            return d
    return 1


def plan_gpu_layout(request: DraftRequest, model_script: ModelScript | None) -> tuple[GpuLayout | None,
                                                                                       list[Finding]]:
    """Split the saved GPUs between actor and rollout.

    Colocated (`--colocate`): actor and engines share every GPU, and slime sets --rollout-num-gpus to the
    actor's GPU count when it is not given. Disaggregated: the actor gets whole nodes (or part of the one
    node) and the rest go to the engines via --rollout-num-gpus. train_async.py needs disaggregated.
    """
    findings: list[Finding] = []
    total, per, nodes = request.gpus_total, request.per_node, request.nodes
    is_async = request.train_entry == "train_async.py"
    colocate = (not is_async) if request.colocate is None else request.colocate
    findings += check_async_not_colocated(request)
    if findings:
        return None, findings
    example = EXAMPLE_PARALLEL.get(model_script.name if model_script else "", FALLBACK_PARALLEL)
    explanation: list[str] = []

    if colocate:
        actor_nodes, actor_per = nodes, per
        rollout_gpus = total
        explanation.append(
            f"Colocated: the actor and the SGLang engines take turns on all {total} GPU(s); slime offloads "
            f"one while the other runs, and sets --rollout-num-gpus to the actor's {total} GPUs when it is "
            f"not given ({slime_source(SRC_ARGS, 1952)}). Best when memory is tight or there is one GPU.")
    else:
        if total < 2:
            return None, [_finding("DRF011", Severity.ERROR, "A split layout needs at least 2 GPUs (one for "
                                   "the actor, one for the engines); you have 1.",
                                   fix="use the colocated layout (train.py --colocate)" if not is_async else
                                   "async training needs 2 or more GPUs; use the GRPO workflow (colocated)",
                                   source=slime_source("slime/ray/placement_group.py", 117))]
        actor = request.actor_gpus
        if actor is None:
            actor = (nodes // 2) * per if nodes > 1 else max(1, per // 2)
        if actor >= total:
            return None, [_finding("DRF012", Severity.ERROR, f"The actor cannot take {actor} of {total} GPUs: "
                                   "the engines need at least one.", flag="--actor-num-gpus-per-node",
                                   fix=f"give the actor fewer than {total} GPUs")]
        if actor > per and actor % per:
            return None, [_finding("DRF012", Severity.ERROR, f"{actor} actor GPUs do not fill whole nodes of "
                                   f"{per}; slime places the actor as nodes x GPUs-per-node.",
                                   flag="--actor-num-nodes", fix=f"use a multiple of {per}, or fewer than {per}",
                                   source=slime_source(SRC_ARGS, 39))]
        actor_nodes, actor_per = (actor // per, per) if actor >= per else (1, actor)
        rollout_gpus = total - actor
        explanation.append(
            f"Disaggregated: the actor trains on {actor} GPU(s) ({actor_nodes} node(s) x {actor_per}) while "
            f"{rollout_gpus} GPU(s) serve rollouts (--rollout-num-gpus); Ray places the actor first and the "
            f"engines after it ({slime_source('slime/ray/placement_group.py', 117)}). Both sides stay "
            "loaded, so nothing is offloaded between phases.")
        if is_async:
            explanation.append("train_async.py requires this split: it generates the next rollout on the "
                               f"engine GPUs while the actor trains ({slime_source(SRC_ASYNC, 11)}).")

    actor_gpus = actor_nodes * actor_per
    cp = _largest_divisor_at_most(actor_gpus, example.context_parallel)
    if request.tensor_parallel is not None:
        tp = request.tensor_parallel
        if tp > actor_per or actor_gpus % (tp * cp):
            findings.append(_finding("DRF013", Severity.ERROR, f"Tensor parallel {tp} does not fit "
                                     f"{actor_gpus} actor GPU(s) ({actor_per} per node).",
                                     flag="--tensor-model-parallel-size",
                                     fix="use a divisor of the actor's GPUs per node",
                                     source="megatron/training/arguments.py:317@1dcf0daf"))
    else:
        tp = _largest_divisor_at_most(actor_gpus // cp, min(example.tensor_parallel, actor_per))
        if (tp, cp) != (example.tensor_parallel, example.context_parallel):
            findings.append(_finding(
                "DRF015", Severity.WARNING,
                f"slime's example for this model uses tensor parallel {example.tensor_parallel} and context "
                f"parallel {example.context_parallel}; {actor_gpus} actor GPU(s) allow {tp} and {cp}, so each "
                "GPU holds more of the model than in the example.", flag="--tensor-model-parallel-size",
                source=example.source))
    dp = max(1, actor_gpus // max(1, tp * cp))

    engine_cap = min(example.engine_gpus, per)
    if request.rollout_gpus_per_engine is not None:
        engine = request.rollout_gpus_per_engine
        if rollout_gpus % engine:
            findings.append(_finding("DRF014", Severity.ERROR, f"{rollout_gpus} rollout GPU(s) do not split "
                                     f"into engines of {engine}.", flag="--rollout-num-gpus-per-engine",
                                     fix=f"use a divisor of {rollout_gpus}", source=slime_source(SRC_ARGS, 56)))
    else:
        engine = _largest_divisor_at_most(rollout_gpus, engine_cap)
    explanation.append(f"Training parallelism: tensor {tp} x context {cp} x data {dp} = {actor_gpus} GPU(s). "
                       f"Rollout: {max(1, rollout_gpus // engine)} SGLang engine(s) of {engine} GPU(s).")
    set_gpn = per != SLIME_DEFAULT_GPUS_PER_NODE
    if set_gpn:
        explanation.append(f"Your nodes have {per} GPU(s), not slime's assumed {SLIME_DEFAULT_GPUS_PER_NODE}, "
                           f"so the draft sets --num-gpus-per-node {per} ({slime_source(SRC_ARGS, 62)}).")
    layout = GpuLayout(mode="colocated" if colocate else "disaggregated", nodes=nodes, per_node=per,
                       actor_nodes=actor_nodes, actor_gpus_per_node=actor_per, rollout_gpus=rollout_gpus,
                       rollout_gpus_per_engine=engine, tensor_parallel=tp, context_parallel=cp, data_parallel=dp,
                       set_num_gpus_per_node=set_gpn, explanation=explanation)
    return layout, findings


def plan_batches(request: DraftRequest) -> tuple[BatchPlan, list[Finding]]:
    """Samples per rollout = rollout batch size x samples per prompt; with no --global-batch-size the
    draft sets it to that product, i.e. one optimizer step per rollout (slime's own guidance)."""
    findings: list[Finding] = []
    samples = request.rollout_batch_size * request.n_samples_per_prompt
    gbs = request.global_batch_size or samples
    if gbs > samples:
        findings.append(_finding("DRF021", Severity.ERROR, f"--global-batch-size {gbs} is more than the {samples} "
                                 "samples one rollout produces, so no full optimizer step fits in a rollout.",
                                 flag="--global-batch-size", fix=f"use {samples} (one step per rollout) or a "
                                 "divisor of it", source=slime_source("slime/backends/megatron_utils/model.py",
                                                                       203)))
    elif samples % gbs:
        findings.append(_finding("DRF020", Severity.WARNING, f"{samples} samples per rollout is not a whole "
                                 f"number of global batches of {gbs}.", flag="--global-batch-size",
                                 fix=f"use a divisor of {samples}", source=slime_source(SRC_ARGS, 703)))
    steps = max(0, samples // gbs)
    if request.n_samples_per_prompt == 1:
        findings.append(_finding("DRF022", Severity.WARNING, "GRPO compares several answers to the same prompt; "
                                 "with 1 sample per prompt every advantage is zero-centred on a single answer "
                                 "and slime turns std normalisation off.", flag="--n-samples-per-prompt",
                                 fix="use 4 to 16 samples per prompt (slime's example uses 8)",
                                 source=slime_source(SRC_ARGS, 1981)))
    plan = BatchPlan(rollout_batch_size=request.rollout_batch_size,
                     n_samples_per_prompt=request.n_samples_per_prompt, samples_per_rollout=samples,
                     global_batch_size=gbs, steps_per_rollout=steps, num_rollout=request.num_rollout,
                     total_steps=steps * request.num_rollout)
    return plan, findings


