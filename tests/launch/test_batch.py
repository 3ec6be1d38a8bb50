"""The batch equation: exact arithmetic, what slime would do, and fixes that really satisfy it."""

from __future__ import annotations

import pytest

from core.batch import BatchInputError, check_batch_equation, divisors, exact_fixes


@pytest.mark.parametrize(("args", "status", "code", "gbs", "steps", "dropped"), [
    ((32, 8, 256, None), "ok", None, 256, 1, 0),
    ((32, 8, 128, 2), "ok", None, 128, 2, 0),
    ((32, 8, None, 4), "ok", None, 64, 4, 0),
    ((32, 8, 64, None), "ok", None, 64, 4, 0),              # steps not given: slime takes 4, a valid setting
    ((32, 8, 100, None), "warning", "BATCH001", 100, 2, 56),  # the tail of every rollout is dropped
    ((10, 1, None, 3), "warning", "BATCH001", 3, 3, 1),       # floor division drops a sample
    ((10, 1, None, 4), "warning", "BATCH002", 2, 5, 0),       # asked 4 steps, slime takes 5
    ((32, 8, 300, None), "error", "BATCH004", 300, 0, 256),  # less than one global batch
    ((3, 1, None, 4), "error", "BATCH004", 0, 0, 3),          # derived global batch is 0
    ((32, 8, None, None), "warning", "BATCH003", None, None, None),
], ids=str)
def test_what_slime_would_do(args, status, code, gbs, steps, dropped):
    r = check_batch_equation(*args)
    assert (r.status, r.code, r.effective_global_batch_size, r.steps_per_rollout, r.dropped_samples_per_rollout) \
        == (status, code, gbs, steps, dropped)


def test_both_given_and_inconsistent_is_slimes_assertion():
    r = check_batch_equation(32, 8, 256, 2)
    assert r.status == "error" and r.code == "BATCH001" and "assertion" in r.slime_behaviour
    assert "32 x 8 // 2 = 128" in r.slime_behaviour
    assert r.source.startswith("slime/utils/arguments.py:1974@")


def test_absent_steps_are_assumed_and_said_so():
    r = check_batch_equation(32, 8, 256, None)
    assert r.steps_assumed and any("assumed" in a or "checked with 1" in a for a in r.assumptions)
    assert r.equation == "32 x 8 = 256 == 256 x 1 = 256"


def test_absent_samples_per_prompt_uses_slimes_default():
    r = check_batch_equation(32, None, 32, None)
    assert r.n_samples_per_prompt == 1 and r.status == "ok" and r.assumptions


def test_megatron_fallback_global_batch_when_the_caller_knows_it():
    r = check_batch_equation(4, 2, None, None, default_global_batch_size=8)
    assert r.status == "ok" and r.effective_global_batch_size == 8 and "Megatron" in r.slime_behaviour


def test_total_steps_over_the_run():
    assert check_batch_equation(32, 8, 64, None, num_rollout=10).total_train_steps == 40


@pytest.mark.parametrize(("rbs", "n", "gbs", "steps"), [
    (32, 8, 100, 1), (7, 3, 5, 1), (10, 1, 3, 3), (12, 5, 7, 2), (1000, 16, 999, 4), (9, 9, 9, 9),
], ids=str)
def test_every_suggested_value_satisfies_the_equation_exactly(rbs, n, gbs, steps):
    for fix in exact_fixes(rbs, n, gbs, steps, steps_given=True):
        values = {"rollout_batch_size": rbs, "n_samples_per_prompt": n, "global_batch_size": gbs,
                  "num_steps_per_rollout": steps}
        assert fix.value is not None, fix  # always a usable integer, alone or with a second flag
        values[fix.variable] = fix.value
        if fix.second_flag:
            values[fix.second_flag.removeprefix("--").replace("-", "_")] = fix.second_value
        assert values["rollout_batch_size"] * values["n_samples_per_prompt"] == \
            values["global_batch_size"] * values["num_steps_per_rollout"], fix


def test_when_no_single_value_works_the_nearest_pairs_are_offered():
    # 32 x 8 = 256 samples and 3 steps: no whole global batch works, so steps 2 or 4 come with it
    pairs = [(f.value, f.second_value) for f in exact_fixes(32, 8, 100, 3, steps_given=True)
             if f.variable == "global_batch_size"]
    assert pairs == [(128, 2), (64, 4)]
    # 32 x 8 with a global batch of 100 and 1 step: no whole rollout batch works alone
    rbs = [(f.value, f.second_value) for f in exact_fixes(32, 8, 100, 1, steps_given=True)
           if f.variable == "rollout_batch_size"]
    assert rbs == [(25, 2)]


def test_nearest_whole_step_batches_are_offered_when_steps_are_not_given():
    r = check_batch_equation(32, 8, 100, None)
    offered = sorted(f.value for f in r.fixes if f.variable == "global_batch_size" and f.value)
    assert offered == [64, 128, 256]


@pytest.mark.parametrize(("args", "message"), [
    ((0, 8, 256, None), "--rollout-batch-size must be at least 1"),
    ((32, -1, 256, None), "--n-samples-per-prompt must be at least 1"),
    ((32, 8, 0, None), "--global-batch-size must be at least 1"),
    ((32, 8, 256, 10**12), "beyond any real run"),
    ((32, 8, 2.5, None), "whole number"),
    ((True, 8, 256, None), "whole number"),
], ids=str)
def test_bad_numbers_get_a_specific_message(args, message):
    with pytest.raises(BatchInputError, match=message):
        check_batch_equation(*args)


@pytest.mark.parametrize(("value", "expected"), [(1, [1]), (12, [1, 2, 3, 4, 6, 12]), (49, [1, 7, 49])], ids=str)
def test_divisors(value, expected):
    assert divisors(value) == expected


# -- the calculator: the equation plus Megatron's start-up checks of the layout -------------------------

from core.batch import BatchPlanInputs, plan_batch  # noqa: E402


def test_calculator_says_slime_derives_four_steps_and_that_it_is_valid():
    plan = plan_batch(BatchPlanInputs(rollout_batch_size=32, n_samples_per_prompt=8, global_batch_size=64,
                                      training_gpus=8))
    assert plan.status == "ok" and plan.equation.steps_per_rollout == 4
    assert "assumes 1 step" in plan.equation.slime_behaviour and "4 optimizer steps" in plan.equation.slime_behaviour
    assert plan.data_parallel_size == 8 and plan.micro_batches_per_step == 8


def test_dynamic_batching_does_not_skip_the_start_up_divisibility_check():
    # 32 x 8 // 3 = 85 samples per step; 4 data-parallel ranks x micro batch 1 do not divide 85
    plan = plan_batch(BatchPlanInputs(rollout_batch_size=32, n_samples_per_prompt=8, num_steps_per_rollout=3,
                                      training_gpus=8, tensor_parallel=2, dynamic_batching=True))
    assert plan.equation.effective_global_batch_size == 85 and plan.data_parallel_size == 4
    failing = [c for c in plan.layout if c.status == "error"]
    assert len(failing) == 1 and "85" in failing[0].message and "dynamic batching" in failing[0].message
    assert failing[0].source.startswith("megatron/core/num_microbatches_calculator.py:340@")
    assert failing[0].fixes[:2] == ["set --num-steps-per-rollout 2 (global batch 128)",
                                   "set --num-steps-per-rollout 4 (global batch 64)"]


def test_gpus_that_do_not_split_into_model_replicas_stop_megatron():
    plan = plan_batch(BatchPlanInputs(rollout_batch_size=32, n_samples_per_prompt=8, global_batch_size=256,
                                      training_gpus=6, tensor_parallel=4))
    assert plan.status == "error" and plan.data_parallel_size is None
    assert "6 training GPUs" in plan.layout[0].message


def test_total_optimizer_steps_for_the_run():
    plan = plan_batch(BatchPlanInputs(rollout_batch_size=32, n_samples_per_prompt=8, global_batch_size=64,
                                      num_rollout=100))
    assert plan.total_optimizer_steps == 400
    assert any("training GPUs" in n for n in plan.notes)


@pytest.mark.parametrize(("inputs", "words"), [
    (BatchPlanInputs(), "--rollout-batch-size"),
    (BatchPlanInputs(rollout_batch_size=32, training_gpus=0), "training GPUs"),
    (BatchPlanInputs(rollout_batch_size=32, micro_batch_size=10**12), "--micro-batch-size"),
    (BatchPlanInputs(rollout_batch_size=32, global_batch_size=-4), "--global-batch-size"),
], ids=str)
def test_unusable_inputs_get_a_sentence_not_an_exception(inputs, words):
    plan = plan_batch(inputs)
    assert plan.status == "error" and words in plan.problem and plan.equation is None


def test_a_derived_global_batch_with_a_remainder_gets_step_and_rollout_fixes():
    r = check_batch_equation(32, 8, None, 3)
    assert [f.message for f in r.fixes] == [  # the smallest change to the given values first
        "set --rollout-batch-size 33 (global batch 88)", "set --rollout-batch-size 30 (global batch 80)",
        "set --num-steps-per-rollout 4 (global batch 64)", "set --num-steps-per-rollout 2 (global batch 128)"]


def test_exact_fixes_no_one_would_choose_are_left_out():
    # 15 x 8 = 120 samples, a global batch of 128: 128 samples per prompt with 15 steps is exact, and absurd
    r = check_batch_equation(15, 8, 128, 1)
    messages = [f.message for f in r.fixes]
    assert messages == ["remove --global-batch-size and slime derives 120", "set --rollout-batch-size 16 (now 15)",
                        "set --global-batch-size 120 (now 128)"]
    assert not any("--n-samples-per-prompt 128" in m for m in messages)
    # when every exact fix is a big change, the smallest one is still offered
    only = check_batch_equation(1, 1, 97, None)  # 1 sample, a global batch of 97: every fix is a 97x change
    assert [f.message for f in only.fixes] == ["set --rollout-batch-size 97 (now 1)",
                                               "set --n-samples-per-prompt 97 (now 1)",
                                               "set --global-batch-size 1 (now 97)"]


def test_actual_steps_and_the_learning_rate_schedule_are_told_apart():
    plan = plan_batch(BatchPlanInputs(rollout_batch_size=32, n_samples_per_prompt=8, num_steps_per_rollout=3,
                                      num_rollout=100))
    assert plan.total_optimizer_steps == 300
    assert any("301 steps" in n and "--lr-decay-iters" in n for n in plan.notes)


def test_neither_flag_falls_back_to_micro_batch_times_data_parallel():
    plan = plan_batch(BatchPlanInputs(rollout_batch_size=32, n_samples_per_prompt=8, training_gpus=8,
                                      tensor_parallel=2))
    assert plan.equation.effective_global_batch_size == 4 and plan.equation.steps_per_rollout == 64
    assert "Megatron falls back" in plan.equation.slime_behaviour
