"""FLOPs per sample with slime's own formula (slime/utils/flops_utils.py `calculate_fwd_flops`, the one behind
`perf/actor_train_tflops`), and the training time of one rollout at a stated MFU.

slime counts, per layer and sample of s tokens: the Q/K/V projections (low-rank ones under MLA), causal
attention scores and their product with V (half of s^2 for QK^T), the output projection (2·s·h^2), and an MLP
of 2·s·h·f·3 (gated), where an MoE layer's f is top-k x the expert width plus the shared expert; plus the
output layer 2·s·h·V once. Training is three forward passes' worth (slime's `3 * total_fwd_flops`)."""

from __future__ import annotations

from core.pins import slime_source
from core.plan.models import TimePlan
from core.plan.shape import ModelShape

DEFAULT_MFU = 0.3
FLOPS_SOURCE = slime_source("slime/utils/flops_utils.py", 74)
TFLOPS_SOURCE = slime_source("slime/observability/train_metric_utils.py", 392)


def _projection_flops(s: ModelShape, n: int) -> float:
    h = s.hidden
    if s.mla and s.q_lora_rank is not None:
        q = 2 * n * s.q_lora_rank * (h + s.heads * (s.qk_head_dim + s.qk_pos_dim))
    else:
        q = 2 * n * h * s.heads * ((s.qk_head_dim + s.qk_pos_dim) if s.mla else s.kv_channels)
    if s.mla:
        kv = 2 * n * (s.kv_lora_rank * (h + s.heads * (s.qk_head_dim + s.v_head_dim)) + h * s.qk_pos_dim)
    else:
        kv = 4 * n * h * s.query_groups * s.kv_channels
    return q + kv


def _attention_flops(s: ModelShape, n: int) -> float:
    if s.mla:
        return s.heads * n * n * (s.qk_head_dim + s.qk_pos_dim) + s.heads * n * n * s.v_head_dim
    return s.heads * n * n * s.kv_channels + s.heads * n * n * s.kv_channels


def layer_flops(s: ModelShape, n: int, ffn: int) -> float:
    return _projection_flops(s, n) + _attention_flops(s, n) + 2 * n * s.hidden * s.hidden + 6 * n * s.hidden * ffn


def forward_flops(s: ModelShape, lengths: list[int]) -> float:
    """Forward FLOPs of samples of the given lengths, slime's way (unpadded vocabulary, no MTP)."""
    moe_layers = s.moe_layers if s.num_experts else 0
    dense_layers = s.num_layers - moe_layers
    moe_ffn = s.moe_ffn * s.topk + s.shared_ffn
    total = 0.0
    for n in lengths:
        total += layer_flops(s, n, s.ffn) * dense_layers
        if moe_layers:
            total += layer_flops(s, n, moe_ffn) * moe_layers
        total += 2 * n * s.hidden * s.vocab
    return total


def plan_time(s: ModelShape, sample_tokens: int, samples: int, gpus: int, peak: float, mfu: float,
              with_ref: bool) -> TimePlan:
    per_sample = forward_flops(s, [sample_tokens])
    passes = 3 + 1 + (1 if with_ref else 0)  # train (fwd + bwd), the actor's log-probs, the reference's
    per_rollout = per_sample * samples * passes
    seconds = per_rollout / (max(gpus, 1) * peak * mfu) if peak and mfu else 0.0
    return TimePlan(flops_per_sample=per_sample, flops_per_rollout=per_rollout, mfu=mfu, seconds_per_rollout=seconds,
                    sample_tokens=sample_tokens, samples_per_rollout=samples, source=FLOPS_SOURCE)
