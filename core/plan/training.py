"""Training memory per GPU of each pipeline stage: weights, gradients, optimizer states, activations, logits.

The static terms and the activation formula follow Megatron's own estimate
(megatron/training/theoretical_memory_usage.py at the pin), so that where its assumptions hold (dense, no EP or
CP, selective recompute with sequence parallelism) ours is the same number; around it we add what slime does:
the distributed optimizer always on, dynamic batching by tokens, full recompute, expert parallelism, context
parallelism, slime's fp32 log-prob pass, and the offload flags."""

from __future__ import annotations

import math
from dataclasses import dataclass

from core.pins import megatron_source, slime_source
from core.plan.models import GIB, StageMemory, Term, TrainingPlan
from core.plan.params import MEGATRON_FORMULA, StageParams, stage_params, total_params
from core.plan.shape import Layout, ModelShape, Reader

UNCERTAINTY = 0.15  # the band we claim for the peak: fragmentation, NCCL buffers, kernels' workspaces
RUNTIME_OVERHEAD = 3 * GIB // 2  # CUDA context, NCCL communicators and the allocator's slack of one process
PAUSED_SGLANG = 1 * GIB  # what a paused SGLang engine keeps on a colocated GPU (its context, CUDA graphs' pools)

ACT_SOURCE = megatron_source("megatron/training/theoretical_memory_usage.py", 189)
OUTPUT_SOURCE = megatron_source("megatron/training/theoretical_memory_usage.py", 250)
OVERHEAD_SOURCE = slime_source("slime/backends/megatron_utils/actor.py", 117)
DIST_OPT_SOURCE = slime_source("slime/backends/megatron_utils/arguments.py", 153)
GRAD_SOURCE = megatron_source("megatron/core/distributed/distributed_data_parallel.py", 147)
BINS_SOURCE = slime_source("slime/utils/dp_schedule.py", 120)
LOGPROB_SOURCE = slime_source("slime/backends/megatron_utils/loss.py", 548)
OFFLOAD_SOURCE = megatron_source("megatron/training/arguments.py", 2084)
DTYPE_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2, "fp8": 1}


@dataclass
class TrainingInputs:
    tokens: int  # per micro-batch per GPU
    tokens_why: str
    logprob_tokens: int
    logprob_chunk: int
    recompute: str | None  # None, "selective", "full"
    recompute_method: str  # "uniform" or "block"
    recompute_layers: int
    distributed_optimizer: bool
    grad_bytes: int
    master_bytes: int
    moment_bytes: int
    offload_fraction: float  # of the optimizer state moved to the host
    colocated: bool
    num_microbatches: int | None


def read_training_inputs(r: Reader, lay: Layout, context_len: int | None) -> TrainingInputs:
    dynamic = r.switch("--use-dynamic-batch-size")
    if dynamic:
        max_tokens = r.integer("--max-tokens-per-gpu", 16384, "slime requires it with dynamic batching") or 16384
        longest = math.ceil(context_len / lay.cp) if context_len else 0
        tokens = max(max_tokens, longest)
        why = (f"--max-tokens-per-gpu {max_tokens}" if tokens == max_tokens else
               f"one sample of {context_len} tokens over CP {lay.cp}, longer than --max-tokens-per-gpu")
    else:
        mbs = r.integer("--micro-batch-size", 1) or 1
        seq = r.integer("--seq-length", None) or context_len or 4096
        if not r.integer("--seq-length", None) and not context_len:
            r.assumptions.append("No --seq-length and no rollout lengths: 4096 tokens per sample assumed.")
        tokens = math.ceil(mbs * seq / lay.cp)
        why = f"--micro-batch-size {mbs} x {seq} tokens / CP {lay.cp}"
    lp_tokens = r.integer("--log-probs-max-tokens-per-gpu", None) or tokens
    granularity = r.text("--recompute-granularity")
    precision_aware = r.switch("--use-precision-aware-optimizer")
    master = DTYPE_BYTES.get(r.text("--main-params-dtype") or "fp32", 4) if precision_aware else 4
    moment = DTYPE_BYTES.get(r.text("--exp-avg-dtype") or "fp32", 4) if precision_aware else 4
    moment += DTYPE_BYTES.get(r.text("--exp-avg-sq-dtype") or "fp32", 4) if precision_aware else 4
    offload = (r.number("--optimizer-offload-fraction", 1.0) or 0.0) if r.switch("--optimizer-cpu-offload") else 0.0
    return TrainingInputs(
        tokens=tokens, tokens_why=why, logprob_tokens=lp_tokens,
        logprob_chunk=r.integer("--log-probs-chunk-size", -1) or -1,
        recompute=granularity if granularity in ("full", "selective") else None,
        recompute_method=r.text("--recompute-method") or "uniform",
        recompute_layers=r.integer("--recompute-num-layers", 1) or 1,
        distributed_optimizer=True,  # slime always turns it on
        grad_bytes=4 if r.switch("--accumulate-allreduce-grads-in-fp32") else 2,
        master_bytes=master, moment_bytes=moment, offload_fraction=min(max(offload, 0.0), 1.0),
        colocated=r.switch("--colocate"),
        num_microbatches=None,
    )


def _gb(n: float) -> str:
    return f"{n / GIB:.2f} GiB"


def layer_activation(s: ModelShape, lay: Layout, t: int, moe: bool) -> float:
    """Bytes one transformer layer keeps for backward for t tokens (flash attention, so no s^2 scores):
    Megatron's 18h + 4 ffn per token with sequence parallelism, all of it split by TP
    (theoretical_memory_usage.py:197); SwiGLU's fc1 output is two ffn wide, so 6 ffn there; an MoE layer keeps
    its top-k routed copies (each expert's MLP and the permuted hidden states)."""
    c = 6 if s.swiglu else 4
    if moe:
        mlp = s.topk * (c * s.moe_ffn + 4 * s.hidden) + c * s.shared_ffn
    else:
        mlp = c * s.ffn
    if lay.sp or lay.tp == 1:
        return t * (18 * s.hidden + mlp) / lay.tp
    return t * (10 * s.hidden + (8 * s.hidden + mlp) / lay.tp)  # theoretical_memory_usage.py:263 without SP


def _stored_activations(s: ModelShape, lay: Layout, inp: TrainingInputs, first: int, n: int) -> tuple[float, float, str]:
    """(bytes stored per micro-batch in flight, bytes of the one recompute working set, formula)."""
    t = inp.tokens
    per = [layer_activation(s, lay, t, bool(s.moe_pattern[i])) for i in range(first, first + n)]
    checkpoint = 2 * t * s.hidden / (lay.tp if lay.sp else 1)
    if inp.recompute == "full" and n:
        k = max(inp.recompute_layers, 1)
        if inp.recompute_method == "block":
            kept = sum(per[min(k, n):])
            return min(k, n) * checkpoint + kept, max(per), (
                f"full recompute (block, {k} layers): {min(k, n)} layer inputs of 2·t·h/TP + {n - min(k, n)} layers "
                "kept whole, one layer recomputed at a time")
        chunks = math.ceil(n / k)
        return chunks * checkpoint, max(per) * min(k, n), (
            f"full recompute (uniform, {k} layer(s) a chunk): {chunks} chunk inputs of 2·t·h/TP, one chunk "
            "recomputed at a time")
    label = "selective recompute" if inp.recompute == "selective" else "no recompute"
    return sum(per), 0.0, f"{label}: every layer keeps t·(18h + {'6' if s.swiglu else '4'}·ffn)/TP"


def plan_training(s: ModelShape, lay: Layout, inp: TrainingInputs) -> TrainingPlan:
    stages = stage_params(s, lay)
    plans = [stage_terms(s, lay, inp, st, stages) for st in stages]
    peaks = [sum(t.bytes for t in terms) for terms in plans]
    worst = max(range(len(peaks)), key=lambda i: peaks[i])
    terms = plans[worst]
    peak = peaks[worst]
    return TrainingPlan(
        terms={t.name: t.bytes for t in terms}, detail=terms, peak_bytes=peak,
        low_bytes=int(peak * (1 - UNCERTAINTY)), high_bytes=int(peak * (1 + UNCERTAINTY)), uncertainty=UNCERTAINTY,
        stage=worst,
        stages=[StageMemory(stage=st.stage, layers=st.layers, params=int(st.total), peak_bytes=p)
                for st, p in zip(stages, peaks, strict=True)],
        parallel={"tp": lay.tp, "pp": lay.pp, "vpp": lay.vpp or 0, "cp": lay.cp, "ep": lay.ep, "etp": lay.etp,
                  "dp": lay.dp, "expert_dp": lay.expert_dp, "world": lay.world},
        params_total=total_params(s), tokens_per_micro_batch=inp.tokens,
    )


def static_bytes(lay: Layout, inp: TrainingInputs, st: StageParams) -> tuple[float, float, float]:
    """(weights, gradients, optimizer) bytes of one GPU: bf16 weights, main grads, fp32 master weights and Adam's
    two moments sharded over the data-parallel ranks (the expert data-parallel ranks for expert parameters)."""
    weights = 2 * st.total
    grads = inp.grad_bytes * st.total
    per_param = inp.master_bytes + inp.moment_bytes + (4 if inp.grad_bytes == 2 else 0)
    if inp.distributed_optimizer:
        optimizer = per_param * (st.dense / (lay.dp * lay.cp) + st.expert / lay.expert_dp)
    else:
        optimizer = per_param * st.total
    return weights, grads, optimizer * (1 - inp.offload_fraction)


def stage_terms(s: ModelShape, lay: Layout, inp: TrainingInputs, st: StageParams,
                 stages: list[StageParams]) -> list[Term]:
    t = inp.tokens
    weights, grads, optimizer = static_bytes(lay, inp, st)
    first = sum(x.layers for x in stages[: st.stage])
    stored, working, how = _stored_activations(s, lay, inp, first, st.layers)
    pp = lay.pp
    in_flight = float(pp - st.stage)  # 1F1B: the first stage holds PP micro-batches, the last one
    if lay.vpp and pp > 1:
        vpp = lay.vpp if lay.vpp > 0 else max(s.num_layers // (pp * -lay.vpp), 1)
        in_flight *= 1 + (pp - 1) / (pp * vpp)  # theoretical_memory_usage.py:224
    if inp.num_microbatches is not None and not lay.vpp and pp > 1:
        in_flight *= min(1.0, inp.num_microbatches / pp)
    tp_div = lay.tp if (lay.sp or lay.tp == 1) else 1
    embed = (8 * t + t * s.hidden) * in_flight / tp_div if st.stage == 0 else 0.0
    activations = stored * in_flight + working + embed
    last = st.stage == pp - 1
    logits = 4 * t * s.hidden / tp_div + 4 * t * s.padded_vocab / lay.tp if last else 0.0
    workspace = 4 * t * s.padded_vocab / lay.tp if last else 0.0
    lp_logits = 0.0
    if last:  # the forward-only log-prob pass of the actor (and ref / old actor): fp32 logits, chunked softmax
        chunk = inp.logprob_chunk if inp.logprob_chunk > 0 else inp.logprob_tokens
        lp_logits = 4 * inp.logprob_tokens * s.padded_vocab / lay.tp + 4 * min(chunk, inp.logprob_tokens) * \
            s.padded_vocab / lay.tp
    logprob_extra = max(lp_logits - (activations + logits + workspace), 0.0)
    overhead = RUNTIME_OVERHEAD + (PAUSED_SGLANG if inp.colocated else 0)
    per_gpu = f"{st.total / 1e9:.3f}B parameters on this GPU ({st.layers} layers, stage {st.stage})"
    opt_div = f"DP×CP {lay.dp * lay.cp}, expert-DP {lay.expert_dp}"
    terms = [
        Term(name="weights", bytes=round(weights), exact=True, source=MEGATRON_FORMULA,
             formula=f"2 bytes (bf16) × {per_gpu} = {_gb(weights)}"),
        Term(name="gradients", bytes=round(grads), exact=True, source=GRAD_SOURCE,
             formula=f"{inp.grad_bytes} bytes ({'fp32, --accumulate-allreduce-grads-in-fp32' if inp.grad_bytes == 4 else 'bf16'}) "
                     f"main grads × the same parameters = {_gb(grads)}"),
        Term(name="optimizer", bytes=round(optimizer), exact=True, source=DIST_OPT_SOURCE,
             formula=(f"{inp.master_bytes + inp.moment_bytes} bytes (master weights + Adam's two moments) per "
                      f"parameter, sharded by the distributed optimizer over {opt_div}"
                      + (f", {inp.offload_fraction:.0%} offloaded to the host" if inp.offload_fraction else "")
                      + f" = {_gb(optimizer)}")),
        Term(name="activations", bytes=round(activations), source=ACT_SOURCE,
             formula=(f"t = {t} tokens a micro-batch ({inp.tokens_why}); {how}; × {in_flight:.2f} micro-batches "
                      f"in flight on stage {st.stage}" + (" + embedding inputs" if st.stage == 0 else "")
                      + f" = {_gb(activations)}")),
        Term(name="logits", bytes=round(logits), source=OUTPUT_SOURCE,
             formula=(f"last stage: output-layer input and fp32 logits, 4·t·h/TP + 4·t·V/TP with V = {s.padded_vocab}"
                      f" (padded) = {_gb(logits)}") if last else "not on this stage (the output layer is on the last)"),
        Term(name="logprob_workspace", bytes=round(workspace), source=LOGPROB_SOURCE,
             formula=(f"slime's log-prob and entropy on the fp32 logits: one more t × V/TP fp32 buffer = "
                      f"{_gb(workspace)}") if last else "not on this stage"),
        Term(name="logprob_pass", bytes=round(logprob_extra), source=LOGPROB_SOURCE,
             formula=(f"forward-only log-prob pass of {inp.logprob_tokens} tokens (--log-probs-max-tokens-per-gpu), "
                      f"softmax in chunks of {inp.logprob_chunk if inp.logprob_chunk > 0 else 'all'} tokens: what it "
                      f"needs beyond the training pass = {_gb(logprob_extra)}") if last else "not on this stage"),
        Term(name="overhead", bytes=overhead, source=OVERHEAD_SOURCE,
             formula=("CUDA context, NCCL communicators and allocator slack, about 1.5 GiB"
                      + (", plus about 1 GiB a paused SGLang engine keeps on the GPU (--colocate)"
                         if inp.colocated else "") + " (an estimate)")),
    ]
    return terms
