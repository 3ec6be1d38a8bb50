"""AppTest: the model-script picker and the drafts follow the user's own slime checkout remembered in the
profile (issue 19, item 4): their model scripts are offered, their code judges the draft, and the page says
which versions it checked against."""

from __future__ import annotations

import pytest

import core.launch.versions as versions
from core.memory.profile import Profile
from core.memory.store import Store
from tests.launch.test_versions import old_tree
from tests.pages.test_page_multi_turn import confirm, upload

OWN_SCRIPT = ("#!/bin/bash\nMODEL_ARGS=(\n   --num-layers 4\n   --hidden-size 64\n   --num-attention-heads 4\n"
              "   --ffn-hidden-size 128\n)\n")


def flat(at) -> str:
    parts = [e.value for kind in ("markdown", "caption", "error", "warning", "info", "success")
             for e in getattr(at, kind)]
    return " ".join(str(p) for p in parts).replace("\\", "")


def script_of(at) -> str:
    [script] = [c.value for c in at.code if c.value.startswith("#!/bin/bash")]
    return script


@pytest.fixture
def checkout(app_env, tmp_path, monkeypatch):
    """A profile remembering an older slime checkout that ships a model script slime does not ship at the pin."""
    monkeypatch.setattr(versions, "_MEMORY", {})
    monkeypatch.setenv("SLIME_ASSISTANT_ROOTS", str(tmp_path))
    tree = old_tree(tmp_path / "my-slime", more={"scripts/models/myco-7B.sh": OWN_SCRIPT})
    Store(app_env).save_profile(Profile(model="myco-7B", data_path="/d/x.jsonl", gpus_total=8,
                                        slime_checkout=str(tree)))
    return tree


def no_checkout_profile(app_env, model: str = "myco-7B") -> None:
    Store(app_env).save_profile(Profile(model=model, data_path="/d/x.jsonl", gpus_total=8))


def test_model_checkpoint_page_picks_from_the_users_checkout(checkout, make_app):
    at = make_app("pages/model_checkpoint.py").run()
    assert not at.exception
    text = flat(at)
    assert "read from your own slime checkout" in text and "my-slime" in text
    assert "1 in your checkout" in text
    assert at.selectbox(key="mc_script").value == "myco-7B"  # matched among the checkout's scripts
    assert any(c.value == "source scripts/models/myco-7B.sh" for c in at.code)


def test_model_checkpoint_page_without_a_checkout_uses_the_pin(app_env, make_app):
    no_checkout_profile(app_env)
    at = make_app("pages/model_checkpoint.py").run()
    assert not at.exception
    assert "read from your own slime checkout" not in flat(at)
    assert "myco-7B" not in at.selectbox(key="mc_script").options
    assert "qwen3-4B" in at.selectbox(key="mc_script").options


@pytest.mark.parametrize(("page", "prefix"), [("pages/grpo.py", "grpo"), ("pages/async_training.py", "async")])
def test_drafts_source_the_checkouts_model_script_and_are_checked_by_its_code(checkout, make_app, page, prefix):
    at = make_app(page).run()
    assert not at.exception
    text = flat(at)
    assert "checked against your own slime checkout" in text and "my-slime" in text
    # The versions the draft was judged by: the checkout's slime and the SGLang/Megatron its docker file names.
    assert "Checked against: slime (commit unknown) (your checkout" in text
    assert "v0.4.9" in text
    script = script_of(at)
    assert "source scripts/models/myco-7B.sh" in script  # no model-script question: the checkout has it
    assert not any(s.key == f"{prefix}_model_script" for s in at.selectbox)


def test_a_draft_flag_the_checkout_lacks_is_reported_only_with_the_checkout(app_env, checkout, make_app, tmp_path):
    with_own = make_app("pages/grpo.py").run()
    # This small older checkout defines none of the newer flags the draft writes: its own code says so.
    assert "--advantage-estimator grpo is not a flag" in flat(with_own)
    Store(app_env).save_profile(Profile(model="Qwen3-4B", data_path="/d/x.jsonl", gpus_total=8))
    import streamlit as st

    st.cache_resource.clear()
    pinned = make_app("pages/grpo.py").run()
    assert not pinned.exception
    assert "Checked against the versions slime pins" in flat(pinned)
    assert "checked against your own slime checkout" not in flat(pinned)
    assert "--advantage-estimator grpo is not a flag" not in flat(pinned)


def test_multi_turn_draft_is_checked_against_the_checkout(checkout, make_app):
    at = upload(make_app("pages/multi_turn.py").run())
    at.text_input(key="mt_rm_path").input("my_agent.reward_func")
    at = confirm(at)
    assert not at.exception
    text = flat(at)
    assert "checked against your own slime checkout" in text and "(your checkout" in text
    assert "source scripts/models/myco-7B.sh" in script_of(at)
