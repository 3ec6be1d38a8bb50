"""The smallest change that fits: candidate edits of the flags, each re-planned, the first that clears the verdict
kept as its fix (so a fix is a plan that was checked, not a rule of thumb)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from core.plan.models import Plan
from core.plan.shape import Values

Replan = Callable[[Values], Plan]


def _int(values: Values, flag: str, default: int) -> int:
    try:
        return int(str(values.get(flag) or default))
    except ValueError:
        return default


def _training_candidates(values: Values, plan: Plan) -> Iterator[tuple[str, Values]]:
    p = plan.training.parallel
    world = p["world"]
    if "--use-dynamic-batch-size" in values:
        tokens = plan.training.tokens_per_micro_batch
        for share in (0.75, 0.5, 0.25, 0.125, 0.0625):
            lower = int(tokens * share) // 512 * 512
            if lower >= 1024:
                yield f"lower --max-tokens-per-gpu to {lower}", {**values, "--max-tokens-per-gpu": str(lower)}
    experts = plan.model.get("num_experts") or 0
    for factor in (2, 4):
        ep = p["ep"] * factor
        if experts and experts % ep == 0 and (world // (p["pp"] * p["etp"])) % ep == 0:
            yield (f"raise --expert-model-parallel-size to {ep}",
                   {**values, "--expert-model-parallel-size": str(ep)})
    heads = int(plan.model.get("heads") or 0)
    for factor in (2, 4):
        tp = p["tp"] * factor
        if tp <= 8 and heads % tp == 0 and world % (tp * p["pp"] * p["cp"]) == 0:
            yield (f"raise --tensor-model-parallel-size to {tp}",
                   {**values, "--tensor-model-parallel-size": str(tp), "--sequence-parallel": None})
    layers = int(plan.model.get("layers") or 0)
    for factor in (2, 4):
        pp = p["pp"] * factor
        if layers % pp == 0 and world % (p["tp"] * pp * p["cp"]) == 0:
            yield f"raise --pipeline-model-parallel-size to {pp}", {**values, "--pipeline-model-parallel-size": str(pp)}
    if "--optimizer-cpu-offload" not in values:
        yield ("offload the optimizer: --optimizer-cpu-offload --use-precision-aware-optimizer",
               {**values, "--optimizer-cpu-offload": None, "--use-precision-aware-optimizer": None})
    if values.get("--recompute-granularity") != "full":
        yield ("recompute every layer: --recompute-granularity full --recompute-method uniform --recompute-num-layers 1",
               {**values, "--recompute-granularity": "full", "--recompute-method": "uniform",
                "--recompute-num-layers": "1"})


def _rollout_candidates(values: Values, plan: Plan) -> Iterator[tuple[str, Values]]:
    ro = plan.rollout
    if ro is None:
        return
    for fraction in (0.8, 0.85, 0.9):
        if fraction > ro.mem_fraction_static:
            yield (f"raise --sglang-mem-fraction-static to {fraction}",
                   {**values, "--sglang-mem-fraction-static": str(fraction)})
    if ro.kv_dtype in ("auto", "bf16", "bfloat16"):
        yield "store the KV cache in fp8: --sglang-kv-cache-dtype fp8_e4m3", {**values, "--sglang-kv-cache-dtype": "fp8_e4m3"}
    for factor in (2, 4):
        tp = ro.engine_tp * factor
        if tp <= _int(values, "--rollout-num-gpus", 0) or "--colocate" in values:
            yield f"raise --rollout-num-gpus-per-engine to {tp}", {**values, "--rollout-num-gpus-per-engine": str(tp)}


def first_fix(values: Values, plan: Plan, code: str, replan: Replan, limit: int = 24) -> str | None:
    """The first candidate edit, in the order above (the smallest first), whose plan no longer has `code`."""
    candidates = _training_candidates(values, plan) if code == "PLAN001" else _rollout_candidates(values, plan)
    for i, (change, edited) in enumerate(candidates):
        if i >= limit:
            break
        try:
            trial = replan(edited)
        except ValueError:
            continue
        if code == "PLAN001" and trial.training.high_bytes <= trial.gpu.memory_bytes:
            return f"{change} (then about {trial.training.peak_bytes / (1 << 30):.1f} GiB a GPU)"
        if code == "PLAN002" and trial.rollout is not None and trial.rollout.kv_pool_tokens > 0 and (
                not trial.rollout.requested_sequences
                or trial.rollout.concurrent_sequences >= trial.rollout.requested_sequences):
            return f"{change} (then {trial.rollout.concurrent_sequences} sequences at once)"
    return None
