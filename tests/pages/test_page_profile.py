"""The Profile page (issue 28, first hour item 2): a profile created from the current answers becomes the
active one, and the page says so."""

from __future__ import annotations

from core.memory.profile import Profile
from core.memory.store import Store


def _flat(at) -> str:
    return " ".join(str(x.value) for group in (at.success, at.info, at.error, at.markdown) for x in group).replace("\\", "")


def test_a_profile_created_from_the_current_answers_is_made_active_and_said(app_env, make_app):
    store = Store(app_env)
    store.create_profile(Profile(name="default", model="Qwen3-4B", data_path="/data/train.jsonl", gpus_total=8))
    store.set_active("default")
    at = make_app("pages/profile.py").run()
    assert not at.exception
    at.text_input(key="prof_new_name").input("qwen3-8b-math")
    next(b for b in at.button if "Create from the current answers" in str(b.label)).click().run()
    assert not at.exception
    assert Store(app_env).active_profile().name == "qwen3-8b-math"
    assert at.selectbox(key="prof_active").value == "qwen3-8b-math"
    assert "Created the profile qwen3-8b-math" in _flat(at) and "made it active" in _flat(at)
    copy = Store(app_env).get_profile("qwen3-8b-math")
    assert copy.model == "Qwen3-4B" and copy.gpus_total == 8
    at.run()  # the message is said once; the new profile stays active
    assert Store(app_env).active_profile().name == "qwen3-8b-math" and "Created the profile" not in _flat(at)
    at.selectbox(key="prof_active").select("default").run()  # switching back still works
    assert Store(app_env).active_profile().name == "default"


def test_the_gpu_model_is_saved_kept_on_other_edits_and_carried_to_a_new_profile(app_env, make_app):
    store = Store(app_env)
    store.create_profile(Profile(name="default", model="Qwen3-4B", data_path="/data/train.jsonl", gpus_total=8))
    store.set_active("default")
    at = make_app("pages/profile.py").run()
    assert at.selectbox(key="prof_gpu_model").value == "not said"
    at.selectbox(key="prof_gpu_model").select("H200")
    next(b for b in at.button if "Save changes" in str(b.label)).click().run()
    assert not at.exception and Store(app_env).get_profile("default").gpu_model == "H200"
    at.text_input(key="prof_gpus").input("16")
    next(b for b in at.button if "Save changes" in str(b.label)).click().run()
    kept = Store(app_env).get_profile("default")
    assert kept.gpus_total == 16 and kept.gpu_model == "H200"  # another edit keeps it
    at.text_input(key="prof_new_name").input("second")
    next(b for b in at.button if "Create from the current answers" in str(b.label)).click().run()
    assert Store(app_env).get_profile("second").gpu_model == "H200"
