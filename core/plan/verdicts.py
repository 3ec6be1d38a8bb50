"""The plan's verdicts, as checker findings: each with its numbers and the smallest change that fits.

PLAN001 training will not fit (error beyond the band, warning inside it), PLAN002 the KV pool holds fewer
concurrent sequences than one rollout asks for (warning; an empty pool is an error: SGLang refuses to start),
PLAN003 host memory short (warning, when the node's RAM is known), PLAN005 no flag bounds a sample's length, so
the longest sample's micro-batch (slime never splits a sample) may not fit (warning, with the length that does). Each rule is a function of the Plan alone,
so it depends on no other rule and can run beside the launch checker's."""

from __future__ import annotations

from collections.abc import Callable

from core.findings import Finding, Severity
from core.plan.models import GIB, Plan
from core.plan.rollout import POOL_SOURCE
from core.plan.training import ACT_SOURCE

HOST_SHARE = 0.7  # of a node's RAM the plan's host terms may take before PLAN003 warns
WEIGHTS_BAND = 0.05  # how far off our engine-weight figure may be (fused layers, scales, buffers)
PlanRule = Callable[[Plan], list[Finding]]


def _gib(n: float) -> str:
    return f"{n / GIB:.1f} GiB"


def training_fit(plan: Plan) -> list[Finding]:
    """PLAN001: the largest pipeline stage's training peak against the GPU's memory."""
    tr, mem = plan.training, plan.gpu.memory_bytes
    if tr.high_bytes <= mem:
        return []
    severity = Severity.ERROR if tr.low_bytes > mem else Severity.WARNING
    biggest = sorted(((v, k) for k, v in tr.terms.items()), reverse=True)[:3]
    parts = ", ".join(f"{k} {_gib(v)}" for v, k in biggest)
    verdict = "will not fit" if severity == Severity.ERROR else "may not fit"
    message = (f"Training {verdict}: the largest pipeline stage (stage {tr.stage}) needs about {_gib(tr.peak_bytes)} "
               f"a GPU ({_gib(tr.low_bytes)}-{_gib(tr.high_bytes)} with the ±{tr.uncertainty:.0%} band) on a "
               f"{plan.gpu.name} of {_gib(mem)}; the largest parts: {parts}.")
    return [Finding(code="PLAN001", severity=severity, message=message, fix=_training_fix(plan),
                    source=ACT_SOURCE, flag="--max-tokens-per-gpu" if tr.terms.get("activations", 0) > mem / 3
                    else None)]


def _training_fix(plan: Plan) -> str:
    tr, mem = plan.training, plan.gpu.memory_bytes
    t = tr.terms
    over = tr.high_bytes - mem
    static = t.get("weights", 0) + t.get("gradients", 0) + t.get("optimizer", 0)
    dynamic = t.get("activations", 0) + t.get("logits", 0) + t.get("logprob_workspace", 0)
    steps = []
    if dynamic and dynamic * (1 + tr.uncertainty) > over:
        share = max(1 - over / ((1 + tr.uncertainty) * dynamic), 0.1)
        tokens = int(tr.tokens_per_micro_batch * share) // 256 * 256
        if tokens >= 256:
            steps.append(f"lower --max-tokens-per-gpu to about {tokens}")
    p = tr.parallel
    if static > over / (1 + tr.uncertainty):
        if plan.model.get("num_experts") and p["ep"] * 2 <= p["world"]:
            steps.append(f"raise --expert-model-parallel-size to {p['ep'] * 2} or more")
        if p["world"] >= p["tp"] * 2 * p["pp"] * p["cp"]:
            steps.append(f"raise --tensor-model-parallel-size to {p['tp'] * 2} (or --pipeline-model-parallel-size to "
                         f"{p['pp'] * 2})")
        if t.get("optimizer", 0):
            steps.append("offload the optimizer (--optimizer-cpu-offload --use-precision-aware-optimizer)")
    if not steps:
        steps.append("use more GPUs, or recompute (--recompute-granularity full --recompute-method uniform "
                     "--recompute-num-layers 1)")
    return "no single flag change fits (each was re-planned); combine: " + "; ".join(steps)


def kv_capacity(plan: Plan) -> list[Finding]:
    """PLAN002: whether the engines' KV pools hold the rollout's sequences at the full context length at once."""
    ro = plan.rollout
    if ro is None:
        return []
    if ro.kv_pool_tokens <= 0:
        need = ro.weights_bytes / plan.gpu.memory_bytes + 0.05
        clear = ro.weights_bytes > ro.static_budget_bytes * (1 + WEIGHTS_BAND)
        return [Finding(code="PLAN002", severity=Severity.ERROR if clear else Severity.WARNING, source=POOL_SOURCE,
                        flag="--sglang-mem-fraction-static",
                        message=(f"SGLang's weights ({_gib(ro.weights_bytes)} per engine GPU at TP {ro.engine_tp}) "
                                 f"{'exceed' if clear else 'come within our margin of'} its static share "
                                 f"({_gib(ro.static_budget_bytes)} under --sglang-mem-fraction-static "
                                 f"{ro.mem_fraction_static}), leaving no KV pool: "
                                 + ("the engine will refuse to start." if clear else
                                    "the engine may refuse to start.")),
                        fix=(f"raise --sglang-mem-fraction-static to about {min(need, 0.95):.2f}, or raise "
                             f"--rollout-num-gpus-per-engine to {ro.engine_tp * 2}, or roll out from an fp8 "
                             "checkpoint"))]
    if not ro.requested_sequences or ro.concurrent_sequences >= ro.requested_sequences:
        return []
    per_engine = ro.concurrent_sequences // max(ro.engines, 1)
    return [Finding(code="PLAN002", severity=Severity.WARNING, source=POOL_SOURCE, flag="--rollout-max-context-len",
                    message=(f"The KV pools hold {ro.concurrent_sequences} sequences of {ro.context_len} tokens at once "
                             f"({ro.engines} engine(s) × {per_engine}, {ro.kv_pool_tokens} tokens each), fewer than "
                             f"the {ro.requested_sequences} one rollout asks for (--rollout-batch-size × "
                             "--n-samples-per-prompt): SGLang queues or retracts the rest, so a rollout takes longer. "
                             "Sequences that stop early leave room, so this is a bound, not a failure."),
                    fix=(f"raise --sglang-mem-fraction-static (now {ro.mem_fraction_static}) if training leaves room, "
                         f"use --sglang-kv-cache-dtype fp8_e4m3, or raise --rollout-num-gpus-per-engine to "
                         f"{ro.engine_tp * 2}"))]


def host_memory(plan: Plan) -> list[Finding]:
    """PLAN003: what the host keeps (weight backups, offloaded optimizer) against the node's RAM when known."""
    host = plan.host
    if host.node_ram_bytes is None or host.bytes_per_node <= host.node_ram_bytes * HOST_SHARE:
        return []
    parts = ", ".join(f"{k} {_gib(v)}" for k, v in host.terms.items() if v)
    return [Finding(code="PLAN003", severity=Severity.WARNING, source=host.detail[0].source if host.detail else None,
                    message=(f"The host needs about {_gib(host.bytes_per_node)} a node ({parts}), more than "
                             f"{HOST_SHARE:.0%} of its {_gib(host.node_ram_bytes)} of RAM; the rest goes to Ray's "
                             "object store (up to 30% of RAM by default), the rollout data and the page cache."),
                    fix=_host_fix(host.terms))]


def _host_fix(terms: dict[str, int]) -> str:
    steps = ["spread the actor over more nodes (fewer training GPUs a node)"]
    if terms.get("weight_backups", 0) > terms.get("cpu_optimizer", 0):
        steps.append("drop --keep-old-actor if it is on, or the reference model (--ref-load) when KL is off")
    if terms.get("cpu_optimizer", 0):
        steps.append("keep the optimizer on the GPU (drop --optimizer-cpu-offload) if training memory allows, or "
                     "offload a part of it (--optimizer-offload-fraction 0.5)")
    return "; or ".join(steps)


def sample_length(plan: Plan) -> list[Finding]:
    """PLAN005: when no flag bounds a sample's length (a custom generate or rollout function, the SFT data), the
    longest sample the GPU holds in a micro-batch of its own. A length the flags bound is in PLAN001's peak
    already (the training plan's micro-batch is at least the longest sample)."""
    sl = plan.sample
    if sl is None or sl.bound_tokens is not None:
        return []
    tr = plan.training
    p = tr.parallel
    if sl.dynamic:
        packing = ("slime never splits a sample: one longer than --max-tokens-per-gpu × CP gets a micro-batch of its "
                   "own (the one micro-batch allowed over the cap), so the longest sample sets the largest micro-batch")
    else:
        packing = (f"Without dynamic batching a micro-batch is --micro-batch-size {sl.samples_per_micro_batch} "
                   "sample(s) whatever their length, so the longest samples set the largest micro-batch")
    costs = (f"fp32 logits and the output layer's input {_mib(sl.logits_per_token)}, the log-prob workspace on "
             f"them {_mib(sl.workspace_per_token)} (4 bytes × vocabulary {plan.model['padded_vocab']} / TP "
             f"{p['tp']} each), activations {_mib(sl.activations_per_token)}")
    if sl.gpu_tokens <= 0:
        limit = "no sample fits: the weights, gradients and optimizer alone fill the GPU."
    elif sl.fits_tokens <= 0:
        limit = (f"a micro-batch holds at most {sl.gpu_tokens} tokens a GPU, fewer than its "
                 f"{sl.samples_per_micro_batch} samples of one token: lower --micro-batch-size.")
    else:
        limit = (f"a sample longer than about {sl.fits_tokens} tokens does not fit on a {plan.gpu.name} of "
                 f"{_gib(plan.gpu.memory_bytes)} (there the training peak reaches the GPU's memory, before our "
                 f"±{tr.uncertainty:.0%} band).")
    message = (f"No flag bounds a sample's length: {sl.bound_why}. {packing}, at about "
               f"{_mib(sl.bytes_per_token)} a token of it on a GPU of the last stage ({costs}); {limit}")
    if sl.custom_generation == "--rollout-function-path" and "SFT" in sl.bound_why:
        bound = f"keep the data's samples to at most {max(sl.fits_tokens, 0)} tokens"
    else:
        bound = (f"bound the sample: set --rollout-max-context-len {max(sl.fits_tokens, 0)} (or less) and have your "
                 "generate function stop there, as slime's retool example does (examples/retool/"
                 "generate_with_retool.py:244-268@624b824a clamps each turn's new tokens to the room left and trims "
                 "tool output; without the flag it stops at CP × --max-tokens-per-gpu); slime's own generation does "
                 "not read that flag")
    spread = (f"or spread a long sample over more GPUs: --context-parallel-size {p['cp'] * 2} splits its tokens, "
              f"--tensor-model-parallel-size {p['tp'] * 2} its vocabulary")
    return [Finding(code="PLAN005", severity=Severity.WARNING, source=sl.source, flag=sl.custom_generation,
                    message=message, fix=f"{bound}; {spread}")]


def _mib(n: float) -> str:
    return f"{n / (1 << 20):.2f} MiB"


PLAN_RULES: dict[str, tuple[PlanRule, str]] = {
    "PLAN001": (training_fit, "training will not fit on the GPU (error beyond the uncertainty band, warning inside)"),
    "PLAN002": (kv_capacity, "the KV pool holds fewer concurrent sequences than the rollout asks for"),
    "PLAN003": (host_memory, "host memory short for weight backups and offloaded optimizer states"),
    "PLAN005": (sample_length, "no flag bounds a sample's length: the longest sample's micro-batch may not fit"),
}


def run_plan_rules(plan: Plan) -> list[Finding]:
    found: list[Finding] = []
    for rule, _ in PLAN_RULES.values():
        found.extend(rule(plan))
    return found
