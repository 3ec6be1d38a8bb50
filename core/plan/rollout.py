"""Rollout memory per SGLang engine GPU, the way SGLang 0.5.15.post1 sizes it.

SGLang measures the free memory before loading the weights (`pre`), loads them, and gives the KV pool what is
free after loading minus `pre x (1 - mem_fraction_static)`
(sglang/srt/model_executor/model_runner_kv_cache_mixin.py:104 `_profile_available_bytes`); the pool holds that
many bytes divided by the cell size per token, rounded down to whole pages
(sglang/srt/model_executor/pool_configurator.py:175 `_compute_cell_size`, :270 `calculate_pool_sizes`)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from core.pins import sglang_source
from core.plan.models import GIB, RolloutPlan, Term
from core.plan.params import attention_params, dense_mlp_params, expert_params, moe_shared_params, norm
from core.plan.shape import Layout, ModelShape, Reader

CELL_SOURCE = sglang_source("sglang/srt/model_executor/pool_configurator.py", 175)
POOL_SOURCE = sglang_source("sglang/srt/model_executor/model_runner_kv_cache_mixin.py", 104)
PAGES_SOURCE = sglang_source("sglang/srt/model_executor/pool_configurator.py", 270)
WEIGHTS_SOURCE = sglang_source("sglang/srt/model_executor/model_runner.py", 1579)  # weight_load_mem_usage
HEADS_SOURCE = sglang_source("sglang/srt/configs/model_config.py", 1013)
DEFAULT_FRACTION_SOURCE = sglang_source("sglang/srt/server_args.py", 3623)
VOCAB_PAD = 64  # sglang/srt/layers/vocab_parallel_embedding.py:45 DEFAULT_VOCAB_PADDING_SIZE
KV_BYTES = {"auto": 2, "bf16": 2, "bfloat16": 2, "fp16": 2, "float16": 2, "fp8_e4m3": 1, "fp8_e5m2": 1}
# Memory in use before the weights load: the engine's CUDA context, NCCL and custom all-reduce buffers. Read
# from SGLang's own logs ("Load weight begin. avail mem=..."): about 1 GiB on one GPU, ~3 GiB at TP 8.
BASE_RESERVED = 3 * GIB // 4
RESERVED_PER_TP = GIB // 4


def kv_cell_bytes(s: ModelShape, attention_tp: int, kv_bytes: int) -> int:
    """SGLang's cell size per token on one GPU: MLA keeps one compressed latent plus the rope key per layer
    (not split by TP); other attention keeps K and V of max(1, kv_heads // TP) heads per layer."""
    layers = s.num_layers
    if s.mla:
        return (s.kv_lora_rank + s.qk_pos_dim) * layers * kv_bytes
    heads = max(1, s.query_groups // max(attention_tp, 1))
    return heads * (s.kv_channels + s.v_head_dim) * layers * kv_bytes


def pool_tokens(pre_load_bytes: int, after_load_bytes: int, mem_fraction: float, cell: int, page: int) -> int:
    """Tokens in SGLang's pool: (free after loading - pre x (1 - fraction)) // cell, in whole pages; 0 when the
    weights leave nothing (SGLang then refuses to start)."""
    rest = after_load_bytes - pre_load_bytes * (1 - mem_fraction)
    if rest <= 0 or cell <= 0:
        return 0
    tokens = int(rest) // cell
    return tokens // page * page


def default_mem_fraction(gpu_mib: int, tp: int) -> float:
    """SGLang's own default when --sglang-mem-fraction-static is absent (server_args.py:3623): the GPU less a
    reserve for activations, CUDA graphs and large TP, at least 10 GiB on GPUs above 60 GiB. Here with its
    default chunked prefill (8192 tokens) and decode graphs up to batch 256; the engine's own choice may differ."""
    reserved = 512 + 8192 * 1.5 + 256 * 2 + tp / 8 * 1024
    if gpu_mib > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    return round((gpu_mib - reserved) / gpu_mib, 3)


@dataclass
class RolloutInputs:
    engine_tp: int
    attention_tp: int
    rollout_gpus: int
    mem_fraction: float
    kv_dtype: str
    page: int
    context_len: int
    requested: int
    fp8_weights: bool
    attention_dp: int  # SGLang's DP attention: each rank keeps its own pool and its own requests
    dense_tp: int  # --sglang-moe-dense-tp-size: the TP of an MoE model's dense MLPs
    dp_lm_head: bool
    max_running: int | None


def read_rollout_inputs(r: Reader, lay: Layout, gpu_mib: int, context_len: int | None) -> RolloutInputs | None:
    engine_tp = r.integer("--rollout-num-gpus-per-engine", 1) or 1
    if r.switch("--colocate"):
        gpus = r.integer("--rollout-num-gpus", None) or lay.world
    else:
        gpus = r.integer("--rollout-num-gpus", None) or 0
        if not gpus:
            if r.switch("--debug-train-only"):
                return None
            r.assumptions.append("--rollout-num-gpus is not set: one engine assumed for the rollout figures.")
            gpus = engine_tp
    dp = (r.integer("--sglang-dp-size", 1) or 1) if r.switch("--sglang-enable-dp-attention") else 1
    attention_tp = max(engine_tp // dp, 1)
    fraction = r.number("--sglang-mem-fraction-static", None)
    if fraction is None or not 0 < fraction < 1:
        fraction = default_mem_fraction(gpu_mib, engine_tp)
        r.assumptions.append(f"--sglang-mem-fraction-static is not set: SGLang's own default, about {fraction}, "
                             f"assumed ({DEFAULT_FRACTION_SOURCE}).")
    kv_dtype = r.text("--sglang-kv-cache-dtype") or "auto"
    ckpt = (r.text("--hf-checkpoint") or "").lower().rstrip("/")
    quant = (r.text("--sglang-quantization") or "").lower()
    if context_len is None:
        context_len = 4096
        r.assumptions.append("No --rollout-max-context-len nor prompt and response lengths: 4096 tokens a sequence "
                             "assumed.")
    per_prompt = r.integer("--n-samples-per-prompt", 1) or 1
    batch = r.integer("--rollout-batch-size", None) or 0
    return RolloutInputs(engine_tp=engine_tp, attention_tp=attention_tp, rollout_gpus=gpus, mem_fraction=fraction,
                         kv_dtype=kv_dtype, page=r.integer("--sglang-page-size", 1) or 1, context_len=context_len,
                         requested=batch * per_prompt, fp8_weights=_fp8_checkpoint(ckpt, quant),
                         attention_dp=dp, dense_tp=r.integer("--sglang-moe-dense-tp-size", None) or attention_tp,
                         dp_lm_head=r.switch("--sglang-enable-dp-lm-head"),
                         max_running=r.integer("--sglang-max-running-requests", None))


# Checkpoints published in fp8 whose names do not say so (their config.json has a quantization_config)
NATIVE_FP8 = re.compile(r"(deepseek-(v3|r1)[^/]*|kimi-k2-instruct[^/]*|kimi-k2-base[^/]*)$")


def _fp8_checkpoint(ckpt: str, quant: str) -> bool:
    name = ckpt.rsplit("/", 1)[-1]
    if "bf16" in name:
        return False
    return "fp8" in name or quant.startswith("fp8") or bool(NATIVE_FP8.search(name))


def engine_weights(s: ModelShape, inp: RolloutInputs) -> tuple[int, str]:
    """Bytes of the model on one engine GPU: experts split over the engine's TP (as EP or TP), attention over the
    attention TP (TP / DP under DP attention), an MoE model's dense MLPs over --sglang-moe-dense-tp-size, the
    embeddings over TP (the attention TP with --sglang-enable-dp-lm-head; SGLang pads the vocabulary to a
    multiple of 64), norms replicated; fp8 checkpoints keep linear weights in one byte."""
    tp, atp = inp.engine_tp, inp.attention_tp
    vocab = math.ceil(s.vocab / VOCAB_PAD) * VOCAB_PAD
    table = s.hidden * vocab
    emb = table * (2 if s.untied else 1)
    # Under DP attention the input embedding is split over the attention TP group only (its `use_attn_tp_group`,
    # sglang/srt/models/qwen2_moe.py:835), the output layer too with --sglang-enable-dp-lm-head.
    in_split = atp if inp.attention_dp > 1 else tp
    out_split = atp if inp.dp_lm_head else tp
    emb_bytes = 2 * (table / in_split + (table / out_split if s.untied else 0))
    attn = experts = dense = 0.0
    norms = norm(s, s.hidden)
    for moe in s.moe_pattern:
        norms += 2 * norm(s, s.hidden)
        attn += attention_params(s)
        if moe:
            experts += expert_params(s)
            dense += moe_shared_params(s)
        else:
            dense += dense_mlp_params(s)
    per = 1.0 if inp.fp8_weights else 2.0
    dense_tp = inp.dense_tp if s.num_experts else atp
    total = emb_bytes + (attn / atp + dense / dense_tp + experts / tp) * per + norms * 2
    how = (f"embeddings {emb / 1e9:.2f}B, attention {attn / 1e9:.2f}B, experts {experts / 1e9:.2f}B, other "
           f"{dense / 1e9:.2f}B parameters, split over engine TP {tp} (attention TP {atp}), "
           f"{'fp8 linear weights' if inp.fp8_weights else 'bf16'}")
    return int(total), how


def plan_rollout(s: ModelShape, inp: RolloutInputs, gpu_bytes: int) -> RolloutPlan:
    kv_bytes = KV_BYTES.get(inp.kv_dtype, 2)
    cell = kv_cell_bytes(s, inp.attention_tp, kv_bytes)
    weights, how = engine_weights(s, inp)
    pre = gpu_bytes - BASE_RESERVED - RESERVED_PER_TP * min(inp.engine_tp, 8)
    after = pre - weights
    tokens = pool_tokens(pre, after, inp.mem_fraction, cell, inp.page)
    engines = max(inp.rollout_gpus // inp.engine_tp, 1)
    per_rank = tokens // max(inp.context_len, 1)
    if inp.max_running:
        per_rank = min(per_rank, max(inp.max_running // inp.attention_dp, 1))
    concurrent = engines * inp.attention_dp * per_rank
    pool_bytes = tokens * cell
    layout = "MLA latent" if s.mla else "K and V"
    heads = "" if s.mla else f", {max(1, s.query_groups // inp.attention_tp)} KV heads of {s.kv_channels} a GPU"
    detail = [
        Term(name="weights", bytes=weights, source=WEIGHTS_SOURCE,
             formula=how),
        Term(name="kv_bytes_per_token", bytes=cell, exact=True, source=CELL_SOURCE,
             formula=(f"{layout} of {s.num_layers} layers{heads}, {kv_bytes} byte(s) each "
                      f"(--sglang-kv-cache-dtype {inp.kv_dtype})")),
        Term(name="kv_pool", bytes=pool_bytes, source=POOL_SOURCE,
             formula=(f"free after loading ({after / GIB:.2f} GiB) - free before ({pre / GIB:.2f} GiB, the GPU less "
                      f"the engine's context and communicators) × (1 - {inp.mem_fraction}) = {tokens} tokens of "
                      f"{cell} bytes, pages of {inp.page}")),
    ]
    return RolloutPlan(weights_bytes=weights, kv_bytes_per_token=cell, kv_pool_bytes=pool_bytes,
                       static_budget_bytes=int(pre * inp.mem_fraction),
                       kv_pool_tokens=tokens, concurrent_sequences=concurrent, requested_sequences=inp.requested,
                       engine_tp=inp.engine_tp, engines=engines, mem_fraction_static=inp.mem_fraction,
                       context_len=inp.context_len, kv_dtype=inp.kv_dtype, detail=detail)
