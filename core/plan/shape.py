"""The model's shape and the parallel layout, read from a launch script's flag values.

Values come as the checker reads them (`--flag` -> text, None for a switch or a value only known at run time).
A size that is missing takes Megatron's or slime's default and says so in `assumptions`; a missing size
without a default (layers, hidden size, heads, vocabulary) makes the plan impossible (PlanError)."""

from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass, field

from core.plan.models import PlanError

Values = dict[str, str | None]
MAX_LAYERS = 10_000  # no model has more; the plan walks the layers, so a larger number is refused, not looped over
MAX_WIDTH = 1 << 24  # hidden sizes, heads, experts, vocabularies, ranks: far above any real model
MAX_PARALLEL = 1 << 20


@dataclass
class Reader:
    """Typed access to flag values that records every default it had to use."""

    values: Values
    assumptions: list[str] = field(default_factory=list)

    def has(self, flag: str) -> bool:
        return flag in self.values

    def switch(self, flag: str, negative: str | None = None) -> bool:
        if negative and negative in self.values:
            return False
        return flag in self.values

    def text(self, flag: str) -> str | None:
        value = self.values.get(flag)
        return value.strip() if isinstance(value, str) and value.strip() else None

    def number(self, flag: str, default: float | None, why: str = "") -> float | None:
        raw = self.text(flag)
        if raw is not None:
            try:
                number = float(raw)
            except ValueError:
                number = None
            if number is not None and math.isfinite(number):
                return number
        if default is not None and (flag in self.values or why):
            shown = f"{default:g}"
            state = "is not a number known before the run" if flag in self.values else "is not set"
            self.assumptions.append(f"{flag} {state}: {shown} assumed{f' ({why})' if why else ''}.")
        return default

    def integer(self, flag: str, default: int | None, why: str = "") -> int | None:
        number = self.number(flag, default, why)
        return None if number is None else max(int(number), 0)

    def required(self, flag: str, limit: int = MAX_WIDTH) -> int:
        number = self.integer(flag, None)
        if not number:
            raise PlanError(f"The plan needs {flag}: the script does not set it to a number (it is usually in "
                            "the MODEL_ARGS of scripts/models/<model>.sh, sourced by the launch script).")
        return bounded(flag, number, limit)


def bounded(flag: str, number: int, limit: int) -> int:
    """The number, or PlanError when it is beyond what any real launch uses (so no plan loops or allocates on it)."""
    if number > limit:
        raise PlanError(f"{flag} {number} is larger than any model or cluster the plan knows (at most {limit}).")
    return number


@dataclass
class ModelShape:
    num_layers: int
    hidden: int
    ffn: int
    heads: int
    query_groups: int  # KV heads
    kv_channels: int  # head dim
    vocab: int
    padded_vocab: int
    untied: bool
    swiglu: bool
    layernorm: bool  # LayerNorm (weight and bias) rather than RMSNorm (weight only)
    qk_layernorm: bool
    linear_bias: bool
    qkv_bias: bool
    output_gate: bool  # gated attention (Qwen3-Next, Qwen3.5): the query projection is twice as wide
    num_experts: int | None
    moe_ffn: int
    shared_ffn: int
    shared_gate: bool
    topk: int
    moe_pattern: list[int]  # 1 for an MoE layer, per layer
    mla: bool
    q_lora_rank: int | None
    kv_lora_rank: int
    qk_head_dim: int
    qk_pos_dim: int
    v_head_dim: int
    mtp_layers: int

    @property
    def moe_layers(self) -> int:
        return sum(self.moe_pattern)


@dataclass
class Layout:
    tp: int
    pp: int
    vpp: int | None
    cp: int
    ep: int
    etp: int
    sp: bool
    world: int  # training GPUs
    first_stage_layers: int | None
    last_stage_layers: int | None

    @property
    def dp(self) -> int:
        return max(self.world // (self.tp * self.pp * self.cp), 1)

    @property
    def expert_dp(self) -> int:
        return max(self.world // (self.etp * self.ep * self.pp), 1)


def moe_pattern(text: str | None, num_layers: int) -> list[int] | None:
    """Megatron's --moe-layer-freq: an integer k (every k-th layer is MoE) or a Python list expression such
    as `[0]*3+[1]*58` (megatron/training/arguments.py `moe_freq_type`); None when it cannot be read."""
    if text is None:
        return None
    text = text.strip().strip("'\"")
    if re.fullmatch(r"\d+", text):
        k = int(text)
        return [1 if k and i % k == 0 else 0 for i in range(num_layers)] if k else None
    if len(text) > 2000 or not re.fullmatch(r"[\[\]\d\s,*+()]+", text):
        return None
    try:
        value = _eval_list(ast.parse(text, mode="eval").body)
    except (ValueError, SyntaxError, RecursionError):
        return None
    return value if value is not None and len(value) == num_layers and set(value) <= {0, 1} else None


def _eval_list(node: ast.AST) -> list[int] | None:
    """A list expression of literals, `*` by an integer and `+` of lists, computed without eval."""
    if isinstance(node, ast.List):
        items = [n.value for n in node.elts if isinstance(n, ast.Constant) and isinstance(n.value, int)]
        return items if len(items) == len(node.elts) else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _eval_list(node.left), _eval_list(node.right)
        return left + right if left is not None and right is not None else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        lst, count = (node.left, node.right) if isinstance(node.left, ast.List) else (node.right, node.left)
        base = _eval_list(lst)
        if base is None or not (isinstance(count, ast.Constant) and isinstance(count.value, int)):
            return None
        if count.value * len(base) > 100_000:
            raise ValueError("too long")
        return base * count.value
    return None


def padded_vocab(vocab: int, divisible_by: int, tp: int) -> int:
    """Megatron pads the vocabulary to a multiple of --make-vocab-size-divisible-by x TP
    (megatron/training/tokenizer/tokenizer.py:110 `_vocab_size_with_padding`, called by slime at
    slime/backends/megatron_utils/arguments.py:177)."""
    multiple = max(divisible_by, 1) * max(tp, 1)
    return int(math.ceil(vocab / multiple) * multiple)


def read_shape(r: Reader, tp: int) -> ModelShape:
    num_layers = r.required("--num-layers", MAX_LAYERS)
    hidden = r.required("--hidden-size")
    heads = r.required("--num-attention-heads")
    vocab = r.integer("--vocab-size", None)
    if not vocab:
        raise PlanError("The plan needs --vocab-size (slime's model scripts set it; Megatron would otherwise take "
                        "it from the tokenizer, which is not read here).")
    swiglu = r.switch("--swiglu")
    default_ffn = int(4 * hidden * 2 / 3 / 64) * 64 if swiglu else 4 * hidden  # megatron arguments.py:801
    ffn = r.integer("--ffn-hidden-size", default_ffn, "Megatron's default from the hidden size")
    gqa = r.switch("--group-query-attention")
    groups = r.integer("--num-query-groups", 1) if gqa else heads
    kv_channels = r.integer("--kv-channels", hidden // heads) or hidden // heads
    divisible = r.integer("--make-vocab-size-divisible-by", 128) or 128
    num_experts = bounded("--num-experts", r.integer("--num-experts", None) or 0, MAX_WIDTH) or None
    pattern = [0] * num_layers
    moe_ffn = shared = 0
    topk = 0
    if num_experts:
        read = moe_pattern(r.text("--moe-layer-freq"), num_layers)
        if read is None:
            if r.has("--moe-layer-freq"):
                r.assumptions.append("--moe-layer-freq is not known before the run: every layer is counted as "
                                     "MoE (an over-estimate when the first layers are dense).")
            read = [1] * num_layers
        pattern = read
        moe_ffn = r.integer("--moe-ffn-hidden-size", ffn) or ffn
        shared = r.integer("--moe-shared-expert-intermediate-size", 0) or 0
        topk = r.integer("--moe-router-topk", 2, "Megatron's default") or 2
    mla = r.switch("--multi-latent-attention")
    return ModelShape(
        num_layers=num_layers, hidden=hidden, ffn=ffn, heads=heads, query_groups=groups or heads,
        kv_channels=kv_channels, vocab=vocab, padded_vocab=padded_vocab(vocab, divisible, tp),
        untied=r.switch("--untie-embeddings-and-output-weights"), swiglu=swiglu,
        layernorm=(r.text("--normalization") or "LayerNorm") == "LayerNorm", qk_layernorm=r.switch("--qk-layernorm"),
        linear_bias=not r.switch("--disable-bias-linear"), qkv_bias=r.switch("--add-qkv-bias"),
        output_gate=r.switch("--attention-output-gate") or r.switch("--use-gated-attention"),
        num_experts=num_experts, moe_ffn=moe_ffn, shared_ffn=shared,
        shared_gate=r.switch("--moe-shared-expert-gate"), topk=topk, moe_pattern=pattern, mla=mla,
        q_lora_rank=r.integer("--q-lora-rank", None) if mla else None,
        kv_lora_rank=(r.integer("--kv-lora-rank", 512) or 512) if mla else 0,
        qk_head_dim=(r.integer("--qk-head-dim", 128) or 128) if mla else kv_channels,
        qk_pos_dim=(r.integer("--qk-pos-emb-head-dim", 64) or 64) if mla else 0,
        v_head_dim=(r.integer("--v-head-dim", 128) or 128) if mla else kv_channels,
        mtp_layers=r.integer("--mtp-num-layers", 0) or 0,
    )


def read_layout(r: Reader, gpus: int | None, gpus_per_node: int | None) -> Layout:
    tp = r.integer("--tensor-model-parallel-size", 1) or 1
    pp = r.integer("--pipeline-model-parallel-size", 1) or 1
    vpp = r.integer("--virtual-pipeline-model-parallel-size", None)
    per_vstage = r.integer("--num-layers-per-virtual-pipeline-stage", None)
    cp = r.integer("--context-parallel-size", 1) or 1
    ep = r.integer("--expert-model-parallel-size", 1) or 1
    etp = r.integer("--expert-tensor-parallel-size", tp) or tp  # megatron/training/arguments.py:410
    nodes = r.integer("--actor-num-nodes", 1) or 1
    per_node = r.integer("--actor-num-gpus-per-node", None)
    if not per_node:
        per_node = gpus_per_node or (gpus // nodes if gpus else None) or 8
        if r.has("--actor-num-gpus-per-node"):
            r.assumptions.append(f"--actor-num-gpus-per-node is only known at run time: {per_node} assumed "
                                 "(give --gpus-per-node to change it).")
    world = nodes * per_node
    if gpus and not r.integer("--actor-num-gpus-per-node", None):
        world = gpus
    for flag, number in (("--tensor-model-parallel-size", tp), ("--pipeline-model-parallel-size", pp),
                         ("--context-parallel-size", cp), ("--expert-model-parallel-size", ep),
                         ("--expert-tensor-parallel-size", etp), ("--virtual-pipeline-model-parallel-size", vpp or 0),
                         ("--actor-num-nodes", nodes), ("--actor-num-gpus-per-node", per_node)):
        bounded(flag, number, MAX_PARALLEL)
    if pp > MAX_LAYERS:
        bounded("--pipeline-model-parallel-size", pp, MAX_LAYERS)
    layout = Layout(tp=tp, pp=pp, vpp=vpp, cp=cp, ep=ep, etp=etp, sp=r.switch("--sequence-parallel"),
                    world=max(world, tp * pp * cp), first_stage_layers=r.integer("--decoder-first-pipeline-num-layers",
                                                                                 None),
                    last_stage_layers=r.integer("--decoder-last-pipeline-num-layers", None))
    if per_vstage and not vpp:
        layout.vpp = -per_vstage  # resolved against the layer count in params.stage_layers
    return layout
