"""The plan against ground truth that is not ours: Megatron's own memory formula and SGLang's own KV arithmetic,
both run from the pinned sources (skipped without them), and slime's own launch scripts planned on the GPUs
their docs name."""

from __future__ import annotations

import ast
import importlib.util
import math
import random
import sys
import types
from pathlib import Path
from types import SimpleNamespace

import pytest

from core.model_scripts import load_model_scripts
from core.pins import pinned_source_dir
from core.plan import plan_script, plan_values
from core.plan.flops import forward_flops
from core.plan.params import stage_params
from core.plan.shape import Reader, read_layout, read_shape
from core.plan.training import read_training_inputs, stage_terms, static_bytes

MEGATRON = pinned_source_dir("megatron")
SGLANG = pinned_source_dir("sglang")
SLIME = pinned_source_dir("slime")
MEGATRON_TMU = MEGATRON / "megatron/training/theoretical_memory_usage.py"
needs_megatron = pytest.mark.skipif(not MEGATRON_TMU.is_file(), reason="pinned Megatron-LM sources not available")
needs_sglang = pytest.mark.skipif(not (SGLANG / "sglang/srt/model_executor/pool_configurator.py").is_file(),
                                  reason="pinned SGLang wheel not available")
needs_slime = pytest.mark.skipif(not (SLIME / "scripts").is_dir(), reason="pinned slime sources not available")


# -- Megatron's theoretical_memory_usage.py, run as it is, its one import (print_rank_0) stubbed --------------
def _megatron_formula() -> types.ModuleType:
    package = types.ModuleType("pinned_megatron_training")
    package.__path__ = []  # a package, so the file's `from .utils import print_rank_0` resolves to the stub
    utils = types.ModuleType("pinned_megatron_training.utils")
    utils.print_rank_0 = lambda *a, **k: None
    sys.modules.setdefault("pinned_megatron_training", package)
    sys.modules.setdefault("pinned_megatron_training.utils", utils)
    spec = importlib.util.spec_from_file_location("pinned_megatron_training.tmu", MEGATRON_TMU)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _dense_grid(n: int, seed: int, swiglu_choices: tuple[bool, ...]) -> list[dict]:
    rng = random.Random(seed)
    grid = []
    while len(grid) < n:
        heads = rng.choice([8, 16, 32])
        hidden = heads * rng.choice([64, 128])
        tp = rng.choice([1, 2, 4, 8])
        pp = rng.choice([1, 2, 4])
        vpp = rng.choice([None, None, 2]) if pp > 1 else None
        layers = pp * (vpp or 1) * rng.choice([1, 2, 3, 6])
        if heads % tp:
            continue
        world = tp * pp * rng.choice([1, 2, 4, 8])
        grid.append(dict(hidden=hidden, heads=heads, groups=rng.choice([None, heads // 2 or 1, 1]), layers=layers,
                         ffn=rng.choice([2, 3, 4]) * hidden, vocab=rng.choice([32000, 50257, 151936]),
                         untied=rng.choice([False, True]), swiglu=rng.choice(swiglu_choices), tp=tp, pp=pp, vpp=vpp,
                         world=world, seq=rng.choice([1024, 4096]), mbs=rng.choice([1, 2])))
    return grid


def _values(c: dict) -> dict[str, str | None]:
    values: dict[str, str | None] = {
        "--num-layers": str(c["layers"]), "--hidden-size": str(c["hidden"]), "--ffn-hidden-size": str(c["ffn"]),
        "--num-attention-heads": str(c["heads"]), "--vocab-size": str(c["vocab"]), "--normalization": "LayerNorm",
        "--disable-bias-linear": None, "--tensor-model-parallel-size": str(c["tp"]),
        "--pipeline-model-parallel-size": str(c["pp"]), "--sequence-parallel": None,
        "--accumulate-allreduce-grads-in-fp32": None, "--recompute-granularity": "selective",
        "--micro-batch-size": str(c["mbs"]), "--seq-length": str(c["seq"]),
        "--actor-num-nodes": "1", "--actor-num-gpus-per-node": str(c["world"]),
    }
    if c["groups"]:
        values |= {"--group-query-attention": None, "--num-query-groups": str(c["groups"])}
    if c["untied"]:
        values["--untie-embeddings-and-output-weights"] = None
    if c["swiglu"]:
        values["--swiglu"] = None
    if c["vpp"]:
        values["--virtual-pipeline-model-parallel-size"] = str(c["vpp"])
    return values


def _megatron_args(c: dict, padded_vocab: int) -> SimpleNamespace:
    return SimpleNamespace(
        kv_channels=c["hidden"] // c["heads"], num_attention_heads=c["heads"], hidden_size=c["hidden"],
        group_query_attention=bool(c["groups"]), num_query_groups=c["groups"] or c["heads"], num_experts=None,
        swiglu=c["swiglu"], moe_shared_expert_intermediate_size=None, moe_layer_freq=1, num_layers=c["layers"],
        moe_ffn_hidden_size=None, mtp_num_layers=None, multi_latent_attention=False, ffn_hidden_size=c["ffn"],
        padded_vocab_size=padded_vocab, untie_embeddings_and_output_weights=c["untied"],
        pipeline_model_parallel_size=c["pp"], tensor_model_parallel_size=c["tp"], use_distributed_optimizer=True,
        data_parallel_size=c["world"] // (c["tp"] * c["pp"]), seq_length=c["seq"], micro_batch_size=c["mbs"],
        virtual_pipeline_model_parallel_size=c["vpp"],
    )


def _ours(c: dict):
    r = Reader(_values(c))
    lay = read_layout(r, None, None)
    shape = read_shape(r, lay.tp)
    inputs = read_training_inputs(r, lay, None)
    return shape, lay, inputs


@needs_megatron
@pytest.mark.parametrize("config", _dense_grid(40, seed=27, swiglu_choices=(False, True)), ids=str)
def test_weights_and_optimizer_equal_megatrons_formula_byte_for_byte(config):
    tmu = _megatron_formula()
    shape, lay, inputs = _ours(config)
    theirs = tmu.compute_weight_and_optimizer_memory(_megatron_args(config, shape.padded_vocab))
    ours = max(sum(static_bytes(lay, inputs, st)) for st in stage_params(shape, lay))
    assert abs(ours - theirs) < 1.0, (ours, theirs)


@needs_megatron
@pytest.mark.parametrize("config", _dense_grid(40, seed=2705, swiglu_choices=(False,)), ids=str)
def test_activations_equal_megatrons_formula_for_selective_recompute(config):
    """Megatron's compute_activation_memory (sequence parallel, selective recompute) is the first stage's
    activations, with the output layer's inputs and logits when PP is 1: ours are activations + logits there."""
    tmu = _megatron_formula()
    shape, lay, inputs = _ours(config)
    theirs = tmu.compute_activation_memory(_megatron_args(config, shape.padded_vocab), num_microbatches=None)
    terms = {t.name: t.bytes for t in stage_terms(shape, lay, inputs, stage_params(shape, lay)[0],
                                                  stage_params(shape, lay))}
    ours = terms["activations"] + terms["logits"]
    assert ours == pytest.approx(theirs, rel=1e-9, abs=4), (ours, theirs)


# -- SGLang 0.5.15.post1: its cell size, pool size and profile functions, read with ast and run ---------------
def _sglang_function(relative: str, qualname: str, namespace: dict) -> types.FunctionType:
    """One function (or method: Class.method) of the pinned SGLang, compiled alone from its source."""
    tree = ast.parse((SGLANG / relative).read_text(encoding="utf-8"))
    cls, _, name = qualname.rpartition(".")
    body = tree.body
    if cls:
        body = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls).body
    node = next(n for n in body if isinstance(n, ast.FunctionDef) and n.name == name)
    module = ast.Module(body=[node], type_ignores=[])
    scope = dict(namespace)
    exec(compile(module, f"{relative}:{qualname}", "exec"), scope)  # noqa: S102 - the pinned upstream code under test
    return scope[name]


class _Pool:
    """SGLang's MemoryPoolConfig as far as calculate_pool_sizes uses it."""

    def __init__(self, max_total_num_tokens: int):
        self.max_total_num_tokens = max_total_num_tokens


def _sglang_tokens(shape, tp: int, kv_bytes: int, pre_gib: float, after_gib: float, fraction: float, page: int) -> int:
    element = {2: "bf16", 1: "fp8"}[kv_bytes]
    torch_stub = SimpleNamespace(_utils=SimpleNamespace(_element_size=lambda dtype: {"bf16": 2, "fp8": 1}[dtype]))
    base = {"torch": torch_stub, "get_attention_tp_size": lambda: tp, "is_float4_e2m1fn_x2": lambda d: False,
            "is_deepseek_dsa": lambda c: False, "is_minimax_sparse": lambda c: False}
    cell_size = _sglang_function("sglang/srt/model_executor/pool_configurator.py",
                                 "DefaultPoolConfigurator._compute_cell_size", base)
    num_kv_heads = _sglang_function("sglang/srt/configs/model_config.py", "ModelConfig.get_num_kv_heads", {})
    config = SimpleNamespace(kv_lora_rank=shape.kv_lora_rank, qk_rope_head_dim=shape.qk_pos_dim,
                             head_dim=shape.kv_channels, v_head_dim=shape.v_head_dim, hf_config=None,
                             get_total_num_kv_heads=lambda: shape.query_groups)
    config.get_num_kv_heads = lambda t: num_kv_heads(config, t)
    runner = SimpleNamespace(model_config=config, kv_cache_dtype=element, use_mla_backend=shape.mla)
    cell = cell_size(None, runner, shape.num_layers)
    profile = _sglang_function("sglang/srt/model_executor/model_runner_kv_cache_mixin.py",
                               "ModelRunnerKVCacheMixin._profile_available_bytes",
                               {"get_available_gpu_memory": lambda *a, **k: after_gib,
                                "get_world_group": lambda: SimpleNamespace(world_size=tp, cpu_group=None),
                                "math": math})
    available = profile(SimpleNamespace(device="cuda", gpu_id=0, mem_fraction_static=fraction, mambaish_config=None),
                        pre_gib)
    sizes = _sglang_function("sglang/srt/model_executor/pool_configurator.py",
                             "DefaultPoolConfigurator.calculate_pool_sizes", {"MemoryPoolConfig": _Pool})
    return sizes(SimpleNamespace(_cell_size=cell), available, page).max_total_num_tokens, cell


HYBRID = ("qwen3_next", "qwen3_5")  # linear-attention layers keep no KV: SGLang counts the full-attention ones only


@needs_sglang
@pytest.mark.parametrize("model", [m for m in load_model_scripts() if not any(h in str(m.values.get("spec"))
                                                                               for h in HYBRID)], ids=lambda m: m.name)
@pytest.mark.parametrize("tp,kv", [(1, "auto"), (4, "fp8_e4m3"), (8, "auto")])
def test_kv_pool_tokens_equal_sglangs_own_arithmetic(model, tp, kv):
    values = {f"--{k}": v for k, v in model.values.items()}
    moe_freq = values.get("--moe-layer-freq")
    if moe_freq is None and "--num-experts" in values:
        values.pop("--moe-layer-freq", None)
    values |= {"--colocate": None, "--actor-num-gpus-per-node": "8", "--rollout-num-gpus-per-engine": str(tp),
               "--sglang-mem-fraction-static": "0.8", "--sglang-kv-cache-dtype": kv, "--rollout-max-context-len": "8192"}
    plan = plan_values(values, "B200")
    ro = plan.rollout
    if ro.kv_pool_tokens == 0:
        pytest.skip("the weights do not fit this engine")
    from core.plan.rollout import BASE_RESERVED, RESERVED_PER_TP
    gib = float(1 << 30)
    pre = (plan.gpu.memory_bytes - BASE_RESERVED - RESERVED_PER_TP * min(tp, 8)) / gib
    after = pre - ro.weights_bytes / gib
    shape = read_shape(Reader(values), 1)
    tokens, cell = _sglang_tokens(shape, tp, 1 if kv.startswith("fp8") else 2, pre, after, 0.8, 1)
    assert ro.kv_bytes_per_token == cell
    assert abs(ro.kv_pool_tokens - tokens) <= 1, (ro.kv_pool_tokens, tokens)


# -- slime's flops_utils.py: its calculate_fwd_flops, loaded from the pinned source, against ours ---------------
@needs_slime
@pytest.mark.parametrize("model", load_model_scripts(), ids=lambda m: m.name)
def test_flops_per_sample_equal_slimes_formula(model):
    spec = importlib.util.spec_from_file_location("pinned_slime_flops", SLIME / "slime/utils/flops_utils.py")
    flops = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(flops)
    values = {f"--{k}": v for k, v in model.values.items()}
    shape = read_shape(Reader(values), 1)
    args = SimpleNamespace(
        hidden_size=shape.hidden, num_attention_heads=shape.heads, num_query_groups=shape.query_groups,
        vocab_size=shape.vocab, ffn_hidden_size=shape.ffn, num_layers=shape.num_layers, kv_channels=shape.kv_channels,
        num_experts=shape.num_experts, moe_ffn_hidden_size=shape.moe_ffn, moe_router_topk=shape.topk,
        moe_shared_expert_intermediate_size=shape.shared_ffn or None, moe_layer_freq=shape.moe_pattern,
        multi_latent_attention=shape.mla, q_lora_rank=shape.q_lora_rank, kv_lora_rank=shape.kv_lora_rank or None,
        qk_head_dim=shape.qk_head_dim, qk_pos_emb_head_dim=shape.qk_pos_dim, v_head_dim=shape.v_head_dim,
    )
    lengths = [1000, 8192, 33]
    assert forward_flops(shape, lengths) == pytest.approx(flops.calculate_fwd_flops(lengths, args), rel=1e-12)


# -- every launch script slime ships, on the GPUs its docs name -------------------------------------------------
# Scripts whose docs name no GPU are planned on H100-80GB, the GPU the docs name for their examples, except:
EXCEPTIONS = {
    # The FP8 experts alone are 1031.6B / EP 16 = 64 GB on each engine GPU: no 80 GB GPU holds them under
    # --sglang-mem-fraction-static 0.7, so the script is for a larger GPU.
    "run-kimi-k2-Thinking.sh": "H200",
}
# Scripts no GPU can run as written, each with the reason (see README, "Will it fit?").
CANNOT_RUN = {
    # The train command ends before ${MODEL_ARGS[@]} (no backslash after --update-weight-buffer-size): SCRIPT008.
    "run-kimi-k2-Instruct.sh": "SCRIPT008",
    # TP 2 x PP 2 x EP 4 puts 64 of 256 experts of 31 layers, 28B parameters, on each GPU: 56 GB of bf16
    # weights and 112 GB of fp32 gradients, more than any GPU in the table.
    "run-minimax-m2.sh": "PLAN001",
}


def _launch_scripts() -> list[Path]:
    return sorted((SLIME / "scripts").glob("run-*.sh")) if (SLIME / "scripts").is_dir() else []


@needs_slime
@pytest.mark.parametrize("path", _launch_scripts(), ids=lambda p: p.name)
def test_no_launch_script_slime_ships_is_called_will_not_fit(path):
    gpu = EXCEPTIONS.get(path.name, "H100-80GB")
    plan = plan_script(path.read_text(encoding="utf-8"), gpu, script_path=path)
    errors = [v for v in plan.verdicts if v.severity.value == "error"]
    if path.name in CANNOT_RUN:
        assert errors or CANNOT_RUN[path.name].startswith("SCRIPT"), path.name
        return
    assert not errors, [v.message for v in errors]
    assert plan.training.peak_bytes < plan.gpu.memory_bytes
