"""AppTest: the async training page checks the staleness answers and drafts a train_async.py script."""

from __future__ import annotations

import pytest

from core.memory.profile import Profile
from core.memory.store import Store

PAGE = "pages/async_training.py"


def open_page(app_env, make_app, **profile):
    fields = {"model": "Qwen3-4B", "data_path": "/data/train.jsonl", "gpus_total": 8, **profile}
    Store(app_env).save_profile(Profile(**fields))
    at = make_app(PAGE).run()
    assert not at.exception
    return at


def scripts_of(at) -> list[str]:
    return [c.value for c in at.code if c.value.startswith("#!/bin/bash")]


def test_async_page_states_the_facts_at_the_pin(app_env, make_app):
    at = open_page(app_env, make_app)
    text = " ".join(m.value for m in at.markdown)
    assert "no** `--async-buffer-size`" in text and "parse_known_args" in text
    assert "refuses `--colocate`" in text
    assert "generate_rollout_fully_async" in text and "--sglang-server-concurrency" in text
    assert "train/train_rollout_logprob_abs_diff" in text  # what to watch for stability


def test_async_page_default_answers_pass_both_checks_and_draft_is_ready(app_env, make_app):
    at = open_page(app_env, make_app)
    passes = [s.value for s in at.success if s.value.startswith("Pass")]
    assert len(passes) == 2
    [script] = scripts_of(at)
    assert "-- python3 train_async.py" in script and "--colocate" not in script
    assert "--update-weights-interval 1" in script and "--rollout-num-gpus 4" in script
    assert {d.key for d in at.download_button} == {"async_download_sh", "async_download_md"}
    assert Store(app_env).get_record("default", "async") is None  # visiting records nothing
    at.button(key="async_accept").click().run()
    [accepted] = Store(app_env).accepted("default", "async")
    assert "train_async.py" in accepted.output and accepted.summary.startswith("run-async")


def test_async_page_interval_above_staleness_fails_and_is_not_ready(app_env, make_app):
    at = open_page(app_env, make_app)
    at.text_input(key="async_staleness").input("2")
    at.text_input(key="async_interval").input("3").run()
    assert not at.exception
    fails = [e.value for e in at.error if e.value.startswith("Fail")]
    assert len(fails) == 1 and "interval" in fails[0]
    assert any(s.value.startswith("Pass") for s in at.success)  # the staleness itself is fine
    assert any("Not ready" in e.value for e in at.error)
    assert not at.download_button
    rec = Store(app_env).get_record("default", "async")
    assert rec.status == "started" and any("DRF031" in t for t in rec.todo_items)


@pytest.mark.parametrize("raw,words", [("0", "not positive"), ("two", "not a whole number"),
                                        ("-3", "not positive"), ("1.5", "not a whole number")], ids=str)
def test_async_page_rejects_a_bad_staleness_specifically(app_env, make_app, raw, words):
    at = open_page(app_env, make_app)
    at.text_input(key="async_staleness").input(raw).run()
    assert not at.exception
    assert any(words in e.value.replace("\\", "") for e in at.error)
    assert scripts_of(at) == []
    assert Store(app_env).get_record("default", "async").status == "started"
    assert Store(app_env).inputs("default", "async").values["staleness"] == raw


def test_async_page_fully_async_option(app_env, make_app):
    at = open_page(app_env, make_app, gpus_total=16, gpus_per_node=8)
    at.toggle(key="async_fully").set_value(True).run()
    at.number_input(key="async_concurrency").set_value(64).run()
    assert not at.exception
    [script] = scripts_of(at)
    assert "--rollout-function-path slime.rollout.fully_async_rollout.generate_rollout_fully_async" in script
    assert "--sglang-server-concurrency 64" in script
    assert "--actor-num-gpus-per-node 8" in script and "--rollout-num-gpus 8" in script


def test_async_page_one_gpu_explains_why_not(app_env, make_app):
    at = open_page(app_env, make_app, gpus_total=1)
    assert any("needs at least 2" in e.value for e in at.error)
    assert scripts_of(at) == []
    assert Store(app_env).get_record("default", "async") is None  # nothing the user did


def test_async_page_answers_are_kept(app_env, make_app):
    at = open_page(app_env, make_app, gpus_total=16, gpus_per_node=8)
    at.text_input(key="async_staleness").input("4").run()
    at.toggle(key="async_fully").set_value(True).run()
    [script] = scripts_of(at)
    import streamlit as st

    st.cache_resource.clear()
    again = make_app(PAGE).run()
    assert not again.exception and scripts_of(again) == [script]
    assert again.text_input(key="async_staleness").value == "4" and again.toggle(key="async_fully").value


def test_the_label_key_the_draft_writes_has_its_own_field_and_the_memory_advice_fits_async(app_env, make_app):
    """Issue 28, first hour item 9: the draft wrote --label-key with no field to change it, and told an async
    (never colocated) run to lower SGLang's share "if colocated runs out of memory"."""
    at = open_page(app_env, make_app)
    field = at.text_input(key="async_label_key")
    assert field.value == "label"
    [script] = scripts_of(at)
    assert "--label-key label" in script
    assert "if colocated runs out of memory" not in script and "the rollout GPUs are SGLang's alone" in script
    field.input("answer").run()
    [script] = scripts_of(at)
    assert "--label-key answer" in script
    at.text_input(key="async_label_key").input("").run()
    [script] = scripts_of(at)
    assert "--label-key" not in script


def test_a_colocated_grpo_draft_keeps_the_colocated_advice(app_env, make_app):
    Store(app_env).save_profile(Profile(model="Qwen3-4B", data_path="/data/train.jsonl", gpus_total=8))
    at = make_app("pages/grpo.py").run()
    assert not at.exception
    [script] = [c.value for c in at.code if c.value.startswith("#!/bin/bash")]
    assert "colocated, the training actor needs the rest" in script
