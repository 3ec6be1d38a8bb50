"""Parameters by layer type, and how many of them one GPU of each pipeline stage holds.

The count follows Megatron's own (megatron/training/theoretical_memory_usage.py:12
`compute_weight_and_optimizer_memory`) and adds what that formula leaves out: the MoE router, linear and QKV
biases, QK layer norms, the gate of gated attention, the MTP block's own norms and projection, and a norm of
one weight per element for RMSNorm (Megatron counts two, a LayerNorm's weight and bias). Where Megatron's
assumptions hold (LayerNorm, no biases, no QK norm, dense) the two counts are the same number.

Split: everything but the experts by TP (norms too, as Megatron's formula does: they are a few thousand
parameters), the experts by EP x ETP; the transformer block (final norm included) evenly over the PP stages,
the embedding on the first stage, the output layer (or the tied embedding's copy) and the MTP block on the
last (megatron/core/models/gpt/gpt_model.py)."""

from __future__ import annotations

from dataclasses import dataclass

from core.pins import megatron_source
from core.plan.models import PlanError
from core.plan.shape import Layout, ModelShape

MEGATRON_FORMULA = megatron_source("megatron/training/theoretical_memory_usage.py", 12)


def norm(shape: ModelShape, width: int) -> int:
    return (2 if shape.layernorm else 1) * width


def attention_params(s: ModelShape) -> int:
    h = s.hidden
    if s.mla:  # theoretical_memory_usage.py:61-76: low-rank Q and KV, their norms, the rope key, the output
        rope_q = s.heads * (s.qk_head_dim + s.qk_pos_dim)
        q = h * rope_q if s.q_lora_rank is None else s.q_lora_rank * (h + rope_q + 1)
        kv = s.kv_lora_rank * (h + s.heads * (s.qk_head_dim + s.v_head_dim) + 1) + h * s.qk_pos_dim
        return q + kv + s.heads * s.v_head_dim * h
    q_width = s.heads * s.kv_channels * (2 if s.output_gate else 1)
    kv_width = 2 * s.query_groups * s.kv_channels
    params = h * (q_width + kv_width) + s.heads * s.kv_channels * h
    if s.linear_bias or s.qkv_bias:
        params += q_width + kv_width
    if s.linear_bias:
        params += h
    if s.qk_layernorm:
        params += 2 * norm(s, s.kv_channels)
    return params


def _mlp(s: ModelShape, ffn: int) -> int:
    gated = 2 if s.swiglu else 1
    params = s.hidden * ffn * gated + ffn * s.hidden
    if s.linear_bias:
        params += ffn * gated + s.hidden
    return params


def dense_mlp_params(s: ModelShape) -> int:
    return _mlp(s, s.ffn)


def expert_params(s: ModelShape) -> int:
    """The routed experts of one MoE layer (split by EP x ETP)."""
    return (s.num_experts or 0) * _mlp(s, s.moe_ffn)


def moe_shared_params(s: ModelShape) -> int:
    """The parts of an MoE layer that are not routed experts: router, shared expert (and its gate)."""
    params = (s.num_experts or 0) * s.hidden
    if s.shared_ffn:
        params += _mlp(s, s.shared_ffn) + (s.hidden if s.shared_gate else 0)
    return params


def layer_params(s: ModelShape, moe: bool) -> tuple[int, int]:
    """(dense, expert) parameters of one transformer layer."""
    dense = attention_params(s) + 2 * norm(s, s.hidden)
    if moe:
        return dense + moe_shared_params(s), expert_params(s)
    return dense + dense_mlp_params(s), 0


@dataclass
class StageParams:
    stage: int
    layers: int
    dense: float  # parameters per GPU (TP-split), fractional as Megatron's formula is
    expert: float  # per GPU (EP x ETP split)
    dense_layer_params: float  # the transformer layers' share alone (what activations are stored for)

    @property
    def total(self) -> float:
        return self.dense + self.expert


def stage_layers(s: ModelShape, lay: Layout) -> list[int]:
    """Layers per pipeline stage: --decoder-first/last-pipeline-num-layers when given, the rest evenly."""
    pp = lay.pp
    if pp == 1:
        return [s.num_layers]
    first, last = lay.first_stage_layers, lay.last_stage_layers
    middle = pp - (first is not None) - (last is not None)
    rest = s.num_layers - (first or 0) - (last or 0)
    share, extra = divmod(max(rest, 0), max(middle, 1))
    counts = [share + (1 if i < extra else 0) for i in range(max(middle, 0))]
    layers = ([first] if first is not None else []) + counts + ([last] if last is not None else [])
    if sum(layers) != s.num_layers:
        raise PlanError(f"--decoder-first/last-pipeline-num-layers ({first}, {last}) do not fit {s.num_layers} layers "
                        f"over {pp} pipeline stages.")
    return layers


def stage_params(s: ModelShape, lay: Layout) -> list[StageParams]:
    counts = stage_layers(s, lay)
    even = lay.first_stage_layers is None and lay.last_stage_layers is None
    emb = s.hidden * s.padded_vocab
    out: list[StageParams] = []
    start = 0
    pp = len(counts)
    for i, n in enumerate(counts):
        dense = expert = 0.0
        for layer in range(start, start + n):
            d, e = layer_params(s, bool(s.moe_pattern[layer]))
            dense += d
            expert += e
        start += n
        layers_only = dense
        final_norm = norm(s, s.hidden)
        if even:
            dense += final_norm / pp  # Megatron's formula spreads the block (final norm in it) evenly
        elif i == pp - 1:
            dense += final_norm
        if i == 0:
            dense += emb
        if i == pp - 1:
            if s.untied or pp > 1:
                dense += emb  # the output layer, or the copy of the tied embedding the last stage keeps
            if s.mtp_layers:
                moe = bool(s.moe_pattern[-1])
                d, e = layer_params(s, moe)
                mtp_extra = 2 * norm(s, s.hidden) + 2 * s.hidden * s.hidden  # enorm, hnorm, eh_proj
                dense += s.mtp_layers * (d + mtp_extra)
                expert += s.mtp_layers * e
        out.append(StageParams(stage=i, layers=n, dense=dense / lay.tp, expert=expert / (lay.ep * lay.etp),
                               dense_layer_params=layers_only / lay.tp))
    return out


def total_params(s: ModelShape) -> int:
    """Every parameter of the model once (tied embeddings counted once, MTP included)."""
    total = s.hidden * s.padded_vocab * (2 if s.untied else 1) + norm(s, s.hidden)
    for layer in range(s.num_layers):
        d, e = layer_params(s, bool(s.moe_pattern[layer]))
        total += d + e
    if s.mtp_layers:
        d, e = layer_params(s, bool(s.moe_pattern[-1]))
        total += s.mtp_layers * (d + e + 2 * norm(s, s.hidden) + 2 * s.hidden * s.hidden)
    return total
