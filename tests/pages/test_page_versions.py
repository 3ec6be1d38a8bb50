"""AppTest of the user's own versions on the pages: the checker's inputs, the profile's fields, and the flag
reference following the profile's checkout (issue 19)."""

from __future__ import annotations

import pytest

import core.launch.versions as versions
from core.memory.profile import Profile
from core.memory.store import Store
from tests.launch.test_versions import BASE, old_tree

CHECKER = "pages/check_args.py"


def flat(at) -> str:
    parts = [e.value for kind in ("markdown", "caption", "error", "warning", "info", "success")
             for e in getattr(at, kind)]
    return " ".join(str(p) for p in parts).replace("\\", "")


@pytest.fixture
def setup(app_env, tmp_path, monkeypatch):
    monkeypatch.setattr(versions, "_MEMORY", {})
    monkeypatch.setenv("SLIME_ASSISTANT_ROOTS", str(tmp_path))
    store = Store(app_env)
    store.save_profile(Profile(model="Qwen3-4B", data_path="/d/x.jsonl", gpus_total=8))
    return store, old_tree(tmp_path / "my-slime")


def test_the_checker_judges_by_the_named_checkout_and_shows_the_versions(setup, make_app):
    store, tree = setup
    at = make_app(CHECKER).run()
    at.text_area(key="ca_text").input(" ".join([*BASE, "--use-slime-router"])).run()
    assert "--use-slime-router" in flat(at)  # unknown at the pin
    at.text_input(key="ca_checkout").input(str(tree)).run()
    assert not at.exception
    text = flat(at)
    assert "Checked against: slime (commit unknown) (your checkout" in text
    assert "SGLang v0.5.15.post1 (bundled pin); your environment runs v0.4.9" in text
    assert not [e for e in at.error if "ARG001" in e.value]
    assert "FSDP backend flags: read" in flat(at)  # how the checkout's parser was read
    at.button(key="ca_remember_versions").click().run()
    assert store.get_profile("default").slime_checkout == str(tree)


def test_the_checker_refuses_a_source_that_is_not_one(setup, make_app, tmp_path):
    _, tree = setup
    at = make_app(CHECKER).run()
    at.text_input(key="ca_checkout").input(str(tree)).run()
    at.text_input(key="ca_sglang_source").input(str(tmp_path)).run()
    assert not at.exception and "neither an installed sglang package nor an SGLang checkout" in flat(at)
    at.text_input(key="ca_sglang_source").input("/etc").run()
    assert "outside" in flat(at) or "may be read" in flat(at)


def test_the_profile_remembers_the_versions_and_the_flag_reference_follows_them(setup, make_app, tmp_path):
    store, tree = setup
    at = make_app("pages/profile.py").run()
    at.text_input(key="prof_slime_checkout").input(str(tmp_path / "nothing-here"))
    form_button = next(b for b in at.button if "Save my versions" in str(b.label))
    form_button.click().run()
    assert not at.exception and store.get_profile("default").slime_checkout is None
    assert "not" in flat(at)
    at.text_input(key="prof_slime_checkout").input(str(tree))
    next(b for b in at.button if "Save my versions" in str(b.label)).click().run()
    assert store.get_profile("default").slime_checkout == str(tree)
    flags = make_app("pages/flags.py").run()
    assert not flags.exception
    text = flat(flags)
    assert "Following your slime checkout" in text and "my-slime" in text and "Checked against" in text
