"""The batch equation: exact arithmetic, what slime would do, and fixes that really satisfy it."""

from __future__ import annotations

import pytest

from core.batch import BatchInputError, check_batch_equation, divisors, exact_fixes


@pytest.mark.parametrize(("args", "status", "code", "gbs", "steps", "dropped"), [
    ((32, 8, 256, None), "ok", None, 256, 1, 0),
    ((32, 8, 128, 2), "ok", None, 128, 2, 0),
    ((32, 8, None, 4), "ok", None, 64, 4, 0),
    ((32, 8, 64, None), "info", "BATCH002", 64, 4, 0),      # whole steps, more than the assumed 1
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
        if fix.value is None:
            assert "no whole value" in fix.message
            continue
        values[fix.variable] = fix.value
        assert values["rollout_batch_size"] * values["n_samples_per_prompt"] == \
            values["global_batch_size"] * values["num_steps_per_rollout"], fix


def test_no_integer_fix_is_said_with_the_exact_fraction():
    fixes = {f.variable: f for f in exact_fixes(32, 8, 100, 1, steps_given=True)}
    assert fixes["rollout_batch_size"].value is None and "25/2" in fixes["rollout_batch_size"].message
    assert fixes["global_batch_size"].value == 256


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
