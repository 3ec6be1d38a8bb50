""""How many GPUs do I need for <model>?": the question recognised, the model and GPU found in it, the fewest
GPUs that fit by the plan's own numbers, an honest "not found", and the `ask` command's sizing block and key."""

from __future__ import annotations

import json

import pytest

from core.model_scripts import load_model_scripts
from core.plan import plan_values, sizing_answer
from core.plan.models import GIB
from core.plan.sizing import (
    GPU_COUNTS,
    _layouts,
    _values,
    find_gpu_in,
    find_model,
    is_sizing_question,
    response_len_in,
    sizing_text,
)

SCRIPTS = {s.name: s for s in load_model_scripts()}


@pytest.mark.parametrize("text", [
    "how many GPUs do I need for Qwen3-32B?", "How many H100s do I need for Qwen3-32B with 16k responses?",
    "what's the minimum number of GPUs for qwen3-8b", "which gpus would I need to train GLM-4.5",
    "enough GPUs for Qwen3-30B-A3B?", "训练 Qwen3-8B 需要多少张卡", "Qwen3-4B 要几块 GPU",
], ids=str)
def test_sizing_questions_are_recognised(text):
    assert is_sizing_question(text)


@pytest.mark.parametrize("text", [
    "what does --rollout-batch-size do", "CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.11 GiB total)",
    "how many samples per prompt", "Traceback (most recent call last): how many GPUs " + "x" * 600,
], ids=lambda t: t[:40])
def test_other_questions_are_not(text):
    assert not is_sizing_question(text) and sizing_answer(text) is None


@pytest.mark.parametrize("text, script", [
    ("Qwen3-32B", "qwen3-32B"), ("qwen3 32b", "qwen3-32B"), ("Qwen/Qwen3-4B-Instruct-2507", "qwen3-4B-Instruct-2507"),
    ("Qwen3-4B", "qwen3-4B"), ("Llama-3.1-8B", "llama3.1-8B-Instruct"), ("GLM-4.5-355B-A32B", "glm4.5-355B-A32B"),
    ("deepseek v3", "deepseek-v3"), ("Kimi-K2-Thinking", "kimi-k2-thinking"), ("MiMo-7B", "mimo-7B-rl"),
    ("qwen3-30b-a3b", "qwen3-30B-A3B"), ("Qwen3-72B", None), ("my model", None),
], ids=str)
def test_the_model_is_the_longest_script_named(text, script):
    found = find_model(f"how many GPUs for {text}?")
    assert (found.name if found else None) == script


def test_gpu_type_and_response_length_are_read_from_the_question():
    assert find_gpu_in("how many H100s for qwen3-8b") == "H100-80GB"
    assert find_gpu_in("on 4 A100-40GB cards") == "A100-40GB" and find_gpu_in("on mi300x") == "MI300X"
    assert find_gpu_in("Qwen3-32B") is None
    assert response_len_in("with 16k responses") == 16384 and response_len_in("8192 tokens of output") == 8192
    assert response_len_in("Qwen3-32B") is None


def _fits(plan) -> bool:
    codes = {(f.code, f.severity.value) for f in plan.verdicts}
    return ("PLAN002", "error") not in codes and plan.training.high_bytes <= plan.gpu.memory_bytes


@pytest.mark.parametrize("model, gpu", [("qwen3-8B", "H100-80GB"), ("qwen3-32B", "H100-80GB"),
                                        ("qwen3-30B-A3B", "H200")], ids=str)
def test_the_answer_fits_and_one_count_fewer_does_not(model, gpu):
    answer = sizing_answer(f"how many {gpu} do I need for {model}")
    assert answer.status == "found" and answer.model == model and answer.gpu == gpu
    lay = answer.layout
    plan = plan_values(_values(SCRIPTS[model], lay.gpus, lay.tp, lay.pp, lay.ep, lay.engine_gpus, 8192,
                               lay.max_tokens_per_gpu), gpu, search_fixes=False)
    assert _fits(plan) and answer.training_peak_gib == round(plan.training.peak_bytes / GIB, 1)
    assert answer.kv_pool_tokens == plan.rollout.kv_pool_tokens > 0
    fewer = GPU_COUNTS[GPU_COUNTS.index(lay.gpus) - 1] if lay.gpus > 1 else None
    if fewer:  # no layout of the fewer GPUs keeps the training peak's upper band inside the GPU
        s = SCRIPTS[model]
        for tp, pp, ep in _layouts(fewer, int(s.values["num-layers"]), int(s.values.get("num-experts") or 0)):
            p = plan_values(_values(s, fewer, tp, pp, ep, 1, 8192, lay.max_tokens_per_gpu), gpu, search_fixes=False)
            assert p.training.high_bytes > p.gpu.memory_bytes
    assert f"at least {lay.gpus} {gpu}" in answer.message and "KV tokens" in answer.message


def test_longer_responses_need_more_tokens_per_gpu_and_the_profiles_gpu_is_used():
    short = sizing_answer("how many GPUs do I need for Qwen3-8B")
    long = sizing_answer("how many GPUs do I need for Qwen3-8B with 32k responses", default_gpu="H200")
    assert short.gpu == "H100-80GB" and short.gpu_from.startswith("assumed")
    assert long.gpu == "H200" and long.gpu_from == "your profile" and long.response_len == 32768
    assert long.layout.max_tokens_per_gpu == 33792 > short.layout.max_tokens_per_gpu
    named = sizing_answer("how many A100-40GB do I need for Qwen3-8B", default_gpu="H200")
    assert named.gpu == "A100-40GB" and named.gpu_from == "your question"


def test_an_unknown_model_is_said_honestly_with_its_family():
    unknown = sizing_answer("how many GPUs do I need for Qwen3-72B?")
    assert unknown.status == "unknown_model" and unknown.min_gpus is None
    assert "no model script for 'Qwen3-72B'" in unknown.message and "qwen3-32B" in unknown.candidates
    stranger = sizing_answer("how many GPUs do I need for Mistral-7B")
    assert stranger.status == "unknown_model" and not stranger.candidates
    none = sizing_answer("how many GPUs do I need?")
    assert none.status == "no_model" and "Name the model" in none.message


def test_the_text_block_gives_the_flags_and_where_to_plan():
    text = sizing_text(sizing_answer("how many GPUs for Qwen3-30B-A3B"))
    assert text.startswith("How many GPUs: qwen3-30B-A3B needs at least")
    assert "--expert-tensor-parallel-size 1" in text and "slime-assistant plan YOUR_SCRIPT.sh --gpu H100-80GB" in text
    assert "scripts/models/qwen3-30B-A3B.sh@624b824a" in text


def test_ask_prints_the_sizing_block_and_its_json_key(capsys):
    from core.cli import main

    assert main(["ask", "how many GPUs do I need for Qwen3-8B?"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("How many GPUs: qwen3-8B needs at least") and "Model scripts:" in out
    assert main(["ask", "--format", "json", "how", "many", "H200", "for", "Qwen3-72B"]) in (0, 1)
    sizing = json.loads(capsys.readouterr().out)["sizing"]
    assert sizing["status"] == "unknown_model" and sizing["gpu"] == "H200" and sizing["min_gpus"] is None
    main(["ask", "--format", "json", "--rollout-batch-size"])
    assert "sizing" not in json.loads(capsys.readouterr().out)  # other questions: the output as before


def test_cpu_adam_is_offered_when_it_needs_fewer_gpus_with_the_host_memory_it_takes():
    answer = sizing_answer("how many H100s do I need for Qwen3-30B-A3B?")
    option = answer.cpu_adam
    assert option is not None and option.gpus < answer.min_gpus
    lay = option.layout
    plan = plan_values(_values(SCRIPTS["qwen3-30B-A3B"], lay.gpus, lay.tp, lay.pp, lay.ep, lay.engine_gpus, 8192,
                               lay.max_tokens_per_gpu, cpu_adam=True), "H100", search_fixes=False)
    assert _fits(plan) and plan.training.terms["optimizer"] == 0
    assert option.host_gib_per_node == round(plan.host.bytes_per_node / GIB) > 100
    assert f"{option.gpus} GPU(s) are enough" in answer.message and "host memory" in answer.message
    text = sizing_text(answer)
    assert f"flags with CPU Adam ({option.gpus} GPUs):" in text and text.count("--optimizer-cpu-offload") >= 2
