"""The longest sample (core.plan.longest, PLAN005): what bounds a sample's length, and the longest one a
micro-batch of its own can hold on the GPU."""

from __future__ import annotations

import pytest

from core.plan import plan_values
from tests.plan.test_plan import LAUNCH, QWEN3_4B

RETOOL = QWEN3_4B | LAUNCH | {"--custom-generate-function-path": "generate_with_retool.generate"}


def _plan005(plan):
    return [v for v in plan.verdicts if v.code == "PLAN005"]


def test_a_custom_generate_function_without_a_context_flag_is_unbounded_and_warned_with_the_length_that_fits():
    plan = plan_values(RETOOL, "H100-80GB")
    [verdict] = _plan005(plan)
    limit = plan.sample.fits_tokens
    assert plan.sample.bound_tokens is None and verdict.severity.value == "warning"
    assert f"longer than about {limit} tokens does not fit on a H100-80GB" in verdict.message
    assert "fp32 logits" in verdict.message and "152064" in verdict.message  # the padded vocabulary at TP 2
    assert f"--rollout-max-context-len {limit}" in verdict.fix and "generate_with_retool.py:244" in verdict.fix
    assert verdict.flag == "--custom-generate-function-path"
    assert 20_000 < limit < 200_000
    assert plan_values(RETOOL, "H200").sample.fits_tokens > limit  # more memory, a longer sample


@pytest.mark.parametrize("extra", [
    {},
    {"--tensor-model-parallel-size": "1"},
    {"--tensor-model-parallel-size": "4", "--context-parallel-size": "2"},
    {"--log-probs-max-tokens-per-gpu": "65536"},
    {"--log-probs-chunk-size": "1024", "--recompute-granularity": "selective"},
], ids=["tp2", "tp1", "tp4-cp2", "logprob-cap", "chunked-selective"])
def test_the_length_that_fits_is_where_the_training_peak_meets_the_gpu(extra):
    """A micro-batch of the limit's tokens a GPU fits the GPU (central estimate), one a little longer does not."""
    plan = plan_values(RETOOL | extra, "H100-80GB")
    limit, memory = plan.sample.gpu_tokens, plan.gpu.memory_bytes
    assert plan.sample.fits_tokens == limit * int(extra.get("--context-parallel-size", 1))
    budget = {"--max-tokens-per-gpu": str(limit), "--log-probs-max-tokens-per-gpu":
              str(max(limit, int(extra.get("--log-probs-max-tokens-per-gpu", 0))))}
    at = plan_values(QWEN3_4B | LAUNCH | extra | budget, "H100-80GB")
    budget["--max-tokens-per-gpu"] = str(limit + 64)
    budget["--log-probs-max-tokens-per-gpu"] = str(max(limit + 64, int(extra.get("--log-probs-max-tokens-per-gpu",
                                                                                   0))))
    over = plan_values(QWEN3_4B | LAUNCH | extra | budget, "H100-80GB")
    assert at.training.peak_bytes <= memory < over.training.peak_bytes
    assert plan.sample.bytes_per_token == pytest.approx((over.training.peak_bytes - at.training.peak_bytes) / 64,
                                                        rel=0.02)


@pytest.mark.parametrize("extra", [
    {"--rollout-max-context-len": "32768"},  # the multi-turn examples stop there
    {"--custom-generate-function-path": None},  # None here: the flag is dropped, slime generates
], ids=["context-flag", "slime-generation"])
def test_a_bounded_sample_gets_no_plan005(extra):
    values = {k: v for k, v in (RETOOL | extra).items() if not (k in extra and extra[k] is None)}
    plan = plan_values(values, "H100-80GB")
    assert plan.sample.bound_tokens is not None and not _plan005(plan)


def test_slimes_own_rollout_functions_generate_with_bounded_responses():
    values = QWEN3_4B | LAUNCH | {"--rollout-function-path":
                                  "slime.rollout.fully_async_rollout.generate_rollout_fully_async"}
    plan = plan_values(values, "H100-80GB")
    assert plan.sample.bound_tokens == 8192 + 1024 and not _plan005(plan)


def test_the_sft_rollout_trains_on_the_data_as_it_is():
    values = QWEN3_4B | LAUNCH | {"--rollout-function-path": "slime.rollout.sft_rollout.generate_rollout"}
    [verdict] = _plan005(plan_values(values, "H100-80GB"))
    assert "SFT rollout" in verdict.message and "keep the data's samples to at most" in verdict.fix
    assert verdict.flag == "--rollout-function-path"


def test_without_dynamic_batching_a_micro_batch_holds_micro_batch_size_samples():
    values = {k: v for k, v in RETOOL.items() if k not in ("--use-dynamic-batch-size", "--max-tokens-per-gpu")}
    one = plan_values(values | {"--micro-batch-size": "1"}, "H100-80GB").sample
    two = plan_values(values | {"--micro-batch-size": "2"}, "H100-80GB").sample
    assert two.samples_per_micro_batch == 2 and abs(two.fits_tokens * 2 - one.fits_tokens) <= 2
    [verdict] = _plan005(plan_values(values | {"--micro-batch-size": "2"}, "H100-80GB"))
    assert "Without dynamic batching a micro-batch is --micro-batch-size 2 sample(s)" in verdict.message
    assert "micro-batch of its own" in _plan005(plan_values(RETOOL, "H100-80GB"))[0].message


def test_the_trial_plans_of_a_search_skip_the_longest_sample():
    assert plan_values(RETOOL, "H100-80GB", search_fixes=False).sample is None


def test_no_sample_fits_when_the_static_state_fills_the_gpu():
    big = RETOOL | {"--num-layers": "400", "--tensor-model-parallel-size": "1", "--actor-num-gpus-per-node": "1"}
    [verdict] = _plan005(plan_values(big, "RTX-4090"))
    assert "no sample fits" in verdict.message


def test_a_micro_batch_size_beyond_what_the_gpu_holds_says_so():
    values = {k: v for k, v in RETOOL.items() if k not in ("--use-dynamic-batch-size", "--max-tokens-per-gpu")}
    plan = plan_values(values | {"--micro-batch-size": "10000000"}, "H100-80GB")
    [verdict] = _plan005(plan)
    assert plan.sample.fits_tokens == 0 < plan.sample.gpu_tokens
    assert "lower --micro-batch-size" in verdict.message
