"""The memory and time plan (core.plan): the GPU table, parameter counts, the terms, the CLI and the verdicts."""

from __future__ import annotations

import json

import pytest
import yaml

from core.cli import main
from core.plan import PlanError, find_gpu, load_gpus, plan_script, plan_values
from core.plan.gpus import GPUS_YAML
from core.plan.params import total_params
from core.plan.shape import Reader, moe_pattern, padded_vocab, read_shape

GIB = 1 << 30

QWEN3_4B = {
    "--num-layers": "36", "--hidden-size": "2560", "--ffn-hidden-size": "9728", "--num-attention-heads": "32",
    "--group-query-attention": None, "--num-query-groups": "8", "--kv-channels": "128", "--vocab-size": "151936",
    "--swiglu": None, "--normalization": "RMSNorm", "--qk-layernorm": None, "--disable-bias-linear": None,
}
LAUNCH = {
    "--actor-num-nodes": "1", "--actor-num-gpus-per-node": "8", "--colocate": None,
    "--tensor-model-parallel-size": "2", "--sequence-parallel": None, "--recompute-granularity": "full",
    "--recompute-method": "uniform", "--recompute-num-layers": "1", "--use-dynamic-batch-size": None,
    "--max-tokens-per-gpu": "9216", "--rollout-batch-size": "32", "--n-samples-per-prompt": "8",
    "--rollout-max-response-len": "8192", "--rollout-num-gpus-per-engine": "2",
    "--sglang-mem-fraction-static": "0.7", "--accumulate-allreduce-grads-in-fp32": None,
}


def test_every_gpu_has_memory_peaks_and_a_vendor_source():
    raw = yaml.safe_load(GPUS_YAML.read_text(encoding="utf-8"))["gpus"]
    gpus = load_gpus()
    assert len(gpus) == len(raw) >= 10
    names = {g.name for g in gpus}
    assert {"H100-80GB", "H200", "H800", "A100-80GB", "A100-40GB", "B200", "L40S", "RTX-4090", "MI300X"} <= names
    for g in gpus:
        assert g.source.startswith("https://") and any(v in g.source for v in ("nvidia", "amd"))
        assert 16 * 1024 <= g.memory_mib <= 300 * 1024 and 1e14 <= g.bf16_flops <= 1e16
        assert g.fp8_flops is None or g.fp8_flops > g.bf16_flops


@pytest.mark.parametrize("name", ["H100-80GB", "h100", "NVIDIA H100 80GB HBM3", "rtx 4090", "mi300x"])
def test_gpus_are_found_by_name_or_alias(name):
    assert find_gpu(name).name in {"H100-80GB", "RTX-4090", "MI300X"}


def test_an_unknown_gpu_is_a_plain_message():
    with pytest.raises(PlanError, match="known: H100-80GB"):
        find_gpu("TPU v5")


def test_qwen3_4b_has_its_published_parameter_count():
    shape = read_shape(Reader(dict(QWEN3_4B)), tp=1)
    assert shape.padded_vocab == 151936 == padded_vocab(151936, 128, 1)  # 1187 x 128 already
    assert padded_vocab(151936, 128, 8) == 152576
    # Qwen3-4B: 4.02B parameters with tied embeddings (its model card)
    assert 4.00e9 < total_params(shape) < 4.03e9


def test_moe_layer_freq_is_read_without_eval():
    assert moe_pattern("[0]*3+[1]*5", 8) == [0, 0, 0, 1, 1, 1, 1, 1]
    assert moe_pattern("2", 4) == [1, 0, 1, 0]
    assert moe_pattern("[1]*3", 4) is None  # wrong length
    assert moe_pattern("__import__('os')", 4) is None
    assert moe_pattern("[0]*10**9", 4) is None


def test_a_plan_has_the_interface_fields():
    plan = plan_values({**QWEN3_4B, **LAUNCH}, "H100-80GB")
    data = plan.model_dump(mode="json")
    assert set(data["gpu"]) >= {"name", "memory_bytes", "peak_flops"}
    assert {"weights", "gradients", "optimizer", "activations", "logits"} <= set(data["training"]["terms"])
    assert data["training"]["peak_bytes"] == sum(data["training"]["terms"].values())
    assert set(data["rollout"]) >= {"weights_bytes", "kv_bytes_per_token", "kv_pool_tokens", "concurrent_sequences"}
    assert data["host"]["bytes_per_node"] > 0 and data["time"]["flops_per_rollout"] > 0
    assert data["time"]["seconds_per_rollout"] > 0
    for term in plan.training.detail + plan.rollout.detail + plan.host.detail:
        assert term.formula and "@" in term.source, term
    assert plan.verdicts == [] and plan.ok


def test_static_terms_are_bytes_per_parameter_of_the_stage():
    plan = plan_values({**QWEN3_4B, **LAUNCH}, "H100-80GB")
    t = plan.training.terms
    per_gpu = plan.training.stages[0].params
    assert abs(t["weights"] - 2 * per_gpu) <= 2 and abs(t["gradients"] - 4 * per_gpu) <= 4
    assert abs(t["optimizer"] - 12 * per_gpu / 4) <= 12  # DP = 8 / TP 2
    bf16_grads = plan_values({**QWEN3_4B, **{k: v for k, v in LAUNCH.items()
                                            if k != "--accumulate-allreduce-grads-in-fp32"}}, "H100-80GB")
    assert bf16_grads.training.terms["gradients"] == pytest.approx(t["gradients"] / 2, abs=4)


def test_kv_cell_of_qwen3_4b_at_tp2():
    plan = plan_values({**QWEN3_4B, **LAUNCH}, "H100-80GB")
    assert plan.rollout.kv_bytes_per_token == 4 * 256 * 36 * 2  # 4 KV heads a GPU, K+V of 128, 36 layers, bf16
    assert plan.rollout.engines == 4
    fp8 = plan_values({**QWEN3_4B, **LAUNCH, "--sglang-kv-cache-dtype": "fp8_e4m3"}, "H100-80GB")
    assert fp8.rollout.kv_bytes_per_token * 2 == plan.rollout.kv_bytes_per_token
    assert fp8.rollout.kv_pool_tokens > 1.9 * plan.rollout.kv_pool_tokens


def test_more_tokens_per_gpu_more_activation_memory():
    small = plan_values({**QWEN3_4B, **LAUNCH}, "H100-80GB").training.terms
    big = plan_values({**QWEN3_4B, **LAUNCH, "--max-tokens-per-gpu": "36864"}, "H100-80GB").training.terms
    assert big["activations"] > 3.5 * small["activations"] and big["logits"] > 3.5 * small["logits"]
    assert big["weights"] == small["weights"]


def test_an_oversized_micro_batch_will_not_fit_with_numbers_and_a_fix(tmp_path):
    values = {**QWEN3_4B, **LAUNCH, "--tensor-model-parallel-size": "1", "--max-tokens-per-gpu": "131072",
              "--recompute-granularity": "selective"}
    plan = plan_values(values, "A100-40GB")
    [verdict] = [v for v in plan.verdicts if v.code == "PLAN001"]
    assert verdict.severity.value == "error" and "GiB" in verdict.message and "will not fit" in verdict.message
    assert "--max-tokens-per-gpu" in verdict.fix
    assert not plan.ok


def test_a_tiny_mem_fraction_leaves_no_kv_pool():
    plan = plan_values({**QWEN3_4B, **LAUNCH, "--rollout-num-gpus-per-engine": "1",
                        "--sglang-mem-fraction-static": "0.05"}, "RTX-4090")
    assert plan.rollout.kv_pool_tokens == 0
    assert any(v.code == "PLAN002" and v.severity.value == "error" for v in plan.verdicts)


def test_few_concurrent_sequences_is_a_warning():
    plan = plan_values({**QWEN3_4B, **LAUNCH, "--rollout-max-response-len": "65536", "--rollout-batch-size": "512",
                        "--sglang-mem-fraction-static": "0.5"}, "H100-80GB")
    [verdict] = [v for v in plan.verdicts if v.code == "PLAN002"]
    assert verdict.severity.value == "warning" and "sequences" in verdict.message


def test_host_memory_short_when_the_node_ram_is_given():
    values = {**QWEN3_4B, **LAUNCH, "--ref-load": "/ref", "--use-kl-loss": None, "--keep-old-actor": None}
    plan = plan_values(values, "H100-80GB", node_ram_gib=32)
    assert any(v.code == "PLAN003" for v in plan.verdicts)
    assert not any(v.code == "PLAN003" for v in plan_values(values, "H100-80GB", node_ram_gib=2048).verdicts)


def test_a_model_without_sizes_cannot_be_planned():
    with pytest.raises(PlanError, match="--num-layers"):
        plan_values({"--tensor-model-parallel-size": "2"}, "H100-80GB")


SCRIPT = """#!/bin/bash
MODEL_ARGS=(--num-layers 36 --hidden-size 2560 --ffn-hidden-size 9728 --num-attention-heads 32
  --group-query-attention --num-query-groups 8 --kv-channels 128 --vocab-size 151936 --swiglu
  --normalization RMSNorm --disable-bias-linear)
python3 train.py --actor-num-nodes 1 --actor-num-gpus-per-node 8 --colocate ${MODEL_ARGS[@]} \\
  --tensor-model-parallel-size 2 --sequence-parallel --use-dynamic-batch-size --max-tokens-per-gpu 9216 \\
  --rollout-batch-size 32 --n-samples-per-prompt 8 --rollout-max-response-len 8192 \\
  --rollout-num-gpus-per-engine 2 --sglang-mem-fraction-static 0.7
"""


def test_plan_script_reads_the_flags_like_the_checker():
    plan = plan_script(SCRIPT, "H100-80GB")
    assert plan.training.parallel["tp"] == 2 and plan.model["layers"] == 36 and plan.rollout.engines == 4


def test_cli_json_has_one_object_and_exit_codes(tmp_path, capsys):
    script = tmp_path / "run.sh"
    script.write_text(SCRIPT, encoding="utf-8")
    assert main(["plan", str(script), "--gpu", "H100-80GB", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {"gpu", "training", "rollout", "host", "time", "verdicts"} <= set(data)
    big = tmp_path / "big.sh"
    big.write_text(SCRIPT.replace("9216", "262144"), encoding="utf-8")
    assert main(["plan", str(big), "--gpu", "RTX-4090", "--format", "text"]) == 1
    out = capsys.readouterr().out
    assert "PLAN001" in out and "Traceback" not in out
    assert main(["plan", str(script), "--gpu", "no-such-gpu"]) == 2
    assert "known:" in capsys.readouterr().err
    assert main(["plan", str(tmp_path / "missing.sh"), "--gpu", "H100"]) == 2
    assert main(["plan", str(tmp_path), "--gpu", "H100"]) == 2
    empty = tmp_path / "empty.sh"
    empty.write_text("echo hello\n", encoding="utf-8")
    assert main(["plan", str(empty), "--gpu", "H100"]) == 2


def test_plan_is_a_registered_command():
    from core.cli import COMMANDS

    assert COMMANDS["plan"][0] == "core.cli.plan"


def test_a_fix_is_a_change_that_was_re_planned_and_fits():
    values = {**QWEN3_4B, **LAUNCH, "--tensor-model-parallel-size": "1", "--max-tokens-per-gpu": "32768",
              "--recompute-granularity": "selective"}
    [verdict] = [v for v in plan_values(values, "H100-80GB").verdicts if v.code == "PLAN001"]
    # fewer tokens cannot help: one 9216-token sample (8192 + a 1024-token prompt) is a micro-batch of its own
    assert verdict.fix.startswith("raise --tensor-model-parallel-size to 4") and "GiB a GPU" in verdict.fix
    fixed = plan_values({**values, "--tensor-model-parallel-size": "4"}, "H100-80GB")
    assert not any(v.code == "PLAN001" for v in fixed.verdicts)


def test_check_args_with_gpu_merges_the_plan_verdicts(tmp_path, capsys):
    big = tmp_path / "big.sh"
    big.write_text(SCRIPT.replace("9216", "262144"), encoding="utf-8")
    assert main(["check-args", str(big), "--format", "json"]) in (0, 1)
    without = json.loads(capsys.readouterr().out)
    assert not any(f["code"].startswith("PLAN") for f in without["findings"])
    assert main(["check-args", str(big), "--gpu", "RTX-4090", "--format", "json"]) == 1
    with_gpu = json.loads(capsys.readouterr().out)
    assert any(f["code"] == "PLAN001" and f["severity"] == "error" for f in with_gpu["findings"])
    assert main(["check-args", str(big), "--gpu", "no-such-gpu", "--format", "json"]) in (0, 1)
    assert any(f["code"] == "PLAN000" for f in json.loads(capsys.readouterr().out)["findings"])


@pytest.mark.parametrize("flag,value", [("--num-layers", "10" * 9), ("--pipeline-model-parallel-size", "99999999"),
                                        ("--num-experts", "9" * 12), ("--decoder-first-pipeline-num-layers", "500"),
                                        ("--tensor-model-parallel-size", "1e300"), ("--num-layers", "nan")])
def test_hostile_numbers_are_a_plain_message_in_bounded_time(flag, value):
    values = {**QWEN3_4B, **LAUNCH, "--pipeline-model-parallel-size": "2", flag: value}
    try:
        plan = plan_values(values, "H100-80GB")
    except PlanError as exc:
        assert flag in str(exc) or "--num-layers" in str(exc) or "decoder" in str(exc)
    else:
        assert plan.training.peak_bytes > 0


def test_mfu_and_eta():
    from core.plan import eta_seconds, low_mfu_fix, mfu_of

    assert mfu_of(494.7, "H100-80GB") == pytest.approx(0.5, rel=1e-3)
    assert "--max-tokens-per-gpu" in low_mfu_fix()
    assert eta_seconds(3000, 1000, [60.0, 62.0, 58.0, float("inf")]) == pytest.approx(2000 * 60.0)
    assert eta_seconds(10, 12, [5.0]) == 0 and eta_seconds(10, 0, []) is None
