"""The "Will it fit?" page: pre-filled from the profile, moves with its inputs, says when it will not fit."""

from __future__ import annotations

import pytest

from core.memory.profile import Profile
from core.memory.store import Store

PAGE = "pages/plan.py"


@pytest.fixture
def open_page(app_env, make_app):
    def _open(profile: bool = True):
        if profile:
            Store(app_env).save_profile(Profile(model="Qwen3-8B", data_path="/data/train.jsonl", gpus_total=8))
        at = make_app(PAGE).run()
        assert not at.exception
        return at
    return _open


def _metric(at, label: str) -> str:
    return next(m.value for m in at.metric if m.label.startswith(label))


def test_the_model_and_gpus_come_from_the_profile(open_page):
    at = open_page()
    assert at.selectbox(key="plan_model").value == "qwen3-8B"
    assert at.number_input(key="plan_gpus").value == 8
    assert "GiB" in _metric(at, "Training peak") and _metric(at, "KV pool").replace(",", "").isdigit()
    assert not at.error  # it fits (a KV-pool warning may remain)
    assert len(at.get("plotly_chart")) >= 1


def test_more_tokens_per_gpu_moves_the_peak_and_a_small_gpu_does_not_fit(open_page):
    at = open_page()
    before = float(_metric(at, "Training peak").split()[0])
    at.number_input(key="plan_tokens").set_value(65536).run()
    after = float(_metric(at, "Training peak").split()[0])
    assert after > before
    at.selectbox(key="plan_gpu").set_value("RTX-4090").run()
    assert not at.exception
    assert any("PLAN001" in e.value for e in at.error)


def test_a_pasted_script_is_planned_and_an_empty_one_is_asked_for(open_page):
    at = open_page(profile=False)
    at.radio(key="plan_source").set_value("a launch script").run()
    assert any("Paste a launch script" in i.value for i in at.info)
    script = ("MODEL_ARGS=(--num-layers 36 --hidden-size 2560 --ffn-hidden-size 9728 --num-attention-heads 32 "
              "--group-query-attention --num-query-groups 8 --kv-channels 128 --vocab-size 151936 --swiglu "
              "--normalization RMSNorm --disable-bias-linear)\n"
              "python3 train.py --colocate ${MODEL_ARGS[@]} --tensor-model-parallel-size 2 --use-dynamic-batch-size "
              "--max-tokens-per-gpu 9216 --rollout-num-gpus-per-engine 2\n")
    at.text_area(key="plan_script").input(script).run()
    assert not at.exception and "GiB" in _metric(at, "Training peak")
    at.text_area(key="plan_script").input("echo nothing to plan\n").run()
    assert not at.exception and at.error


def test_the_gpu_type_comes_from_the_profile(app_env, make_app):
    Store(app_env).save_profile(Profile(model="Qwen3-8B", data_path="/data/train.jsonl", gpus_total=8,
                                        gpu_model="H200"))
    at = make_app(PAGE).run()
    assert not at.exception and at.selectbox(key="plan_gpu").value == "H200"
    assert "140.4 GiB" in _metric(at, "GPU memory")


def test_a_multi_turn_script_is_warned_that_no_flag_bounds_its_samples(open_page):
    at = open_page(profile=False)
    at.radio(key="plan_source").set_value("a launch script").run()
    script = ("MODEL_ARGS=(--num-layers 36 --hidden-size 2560 --ffn-hidden-size 9728 --num-attention-heads 32 "
              "--group-query-attention --num-query-groups 8 --kv-channels 128 --vocab-size 151936 --swiglu "
              "--normalization RMSNorm --disable-bias-linear)\n"
              "python3 train.py --colocate ${MODEL_ARGS[@]} --tensor-model-parallel-size 2 --use-dynamic-batch-size "
              "--max-tokens-per-gpu 9216 --rollout-num-gpus-per-engine 2 "
              "--custom-generate-function-path generate_with_retool.generate\n")
    at.text_area(key="plan_script").input(script).run()
    assert not at.exception
    warned = " ".join(w.value for w in at.warning).replace("\\", "")  # markdown escapes
    assert "PLAN005" in warned and "--rollout-max-context-len" in warned
    assert any("Longest sample: not bounded by any flag" in c.value.replace("\\", "") for c in at.caption)
