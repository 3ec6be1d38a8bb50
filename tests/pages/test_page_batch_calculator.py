"""The batch-size calculator page: pre-filled from the profile, says what slime derives, never crashes."""

from __future__ import annotations

import pytest

from core.memory.profile import Profile
from core.memory.store import Store

PAGE = "pages/batch_calculator.py"


@pytest.fixture
def open_page(app_env, make_app):
    def _open(profile: bool = True):
        if profile:
            Store(app_env).save_profile(Profile(model="Qwen3-4B", data_path="/data/train.jsonl", gpus_total=8))
        at = make_app(PAGE).run()
        assert not at.exception
        return at
    return _open


def _texts(at) -> str:
    parts = [e.value for e in at.markdown] + [e.value for e in at.success] + [e.value for e in at.warning] \
        + [e.value for e in at.error] + [e.value for e in at.info] + [e.value for e in at.caption] \
        + [e.value for e in at.code]
    return "\n".join(str(p) for p in parts)


def test_training_gpus_come_from_the_profile_and_the_example_is_valid(open_page):
    at = open_page()
    assert at.number_input(key="bc_gpus").value == 8
    assert at.number_input(key="bc_steps").value is None
    assert "32 x 8 = 256 == 256 x 1 = 256" in _texts(at)
    assert at.success[0].value.startswith("slime and Megatron accept")


def test_global_64_is_four_steps_and_valid(open_page):
    at = open_page()
    at.number_input(key="bc_gbs").set_value(64).run()
    text = _texts(at)
    assert not at.exception and "4 optimizer steps" in text and "assumes 1 step" in text
    assert not at.error


def test_dynamic_batching_with_a_derived_85_fails_megatrons_check(open_page):
    at = open_page()
    at.number_input(key="bc_gbs").set_value(None).run()
    at.number_input(key="bc_steps").set_value(3).run()
    at.number_input(key="bc_tp").set_value(2).run()
    at.toggle(key="bc_dynamic").set_value(True).run()
    assert not at.exception
    errors = " ".join(e.value for e in at.error)
    assert "85" in errors and "dynamic batching" in errors
    assert "set --num-steps-per-rollout 2 (global batch 128)" in _texts(at).replace("\\", "")


def test_without_a_profile_the_layout_waits_for_gpus(open_page):
    at = open_page(profile=False)
    assert at.number_input(key="bc_gpus").value is None
    assert "Enter the training GPUs" in _texts(at)


def test_the_cards_example_links_open_with_their_numbers(open_page, app_env, make_app):
    at = open_page()
    at.query_params.update({"rbs": "32", "n": "8", "gbs": "", "steps": "3", "gpus": "8", "tp": "2"})
    at.run()
    assert not at.exception
    assert at.number_input(key="bc_steps").value == 3 and at.number_input(key="bc_gbs").value is None
    assert "85" in " ".join(e.value for e in at.error)


def test_a_hostile_link_value_is_ignored_and_said_so(open_page):
    at = open_page()
    at.query_params.update({"rbs": "9" * 5000, "steps": "<b>x</b>"})
    at.run()
    assert not at.exception and at.number_input(key="bc_rbs").value == 32
    assert any("left out" in c.value for c in at.caption)


def test_inputs_are_kept_per_profile_across_sessions(open_page, make_app):
    at = open_page()
    at.number_input(key="bc_gbs").set_value(None).run()
    at.number_input(key="bc_steps").set_value(4).run()
    later = make_app(PAGE).run()  # a new browser session, or after a restart
    assert not later.exception
    assert later.number_input(key="bc_steps").value == 4 and later.number_input(key="bc_gbs").value is None


def test_visiting_saves_nothing(open_page, app_env):
    open_page()
    assert Store(app_env).inputs("default", "batch_calculator") is None
