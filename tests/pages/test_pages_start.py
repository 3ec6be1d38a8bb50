"""AppTest: first visit, profile editing, progress page and knowledge section."""

import re

from core.memory.profile import Profile
from core.memory.store import Store


def test_first_visit_asks_three_questions_and_saves(app_env, make_app):
    at = make_app().run()
    assert not at.exception
    assert at.text_input(key="onb_model").value == ""
    at.text_input(key="onb_model").input("Qwen3-4B")
    at.text_input(key="onb_data").input("/data/my set.jsonl")
    at.text_input(key="onb_gpus").input("8")
    at.button[0].click().run()
    assert not at.exception
    saved = Store(app_env).active_profile()
    assert saved is not None and saved.model == "Qwen3-4B" and saved.data_path == "/data/my set.jsonl"
    assert any("Saved" in s.value for s in at.success)
    assert any("qwen3-4B.sh" in i.value.replace("\\", "") for i in at.info)  # model script match shown


def test_first_visit_rejects_bad_answers_specifically(app_env, make_app):
    at = make_app().run()
    at.text_input(key="onb_model").input("Qwen3-4B")
    at.text_input(key="onb_data").input("/data/train.csv")
    at.text_input(key="onb_gpus").input("-3")
    at.button[0].click().run()
    errors = " ".join(e.value for e in at.error)
    assert "not a whole number" in errors
    assert Store(app_env).active_profile() is None


def test_empty_answers_get_sentences_for_people_and_fields_start_empty(app_env, make_app):
    at = make_app().run()
    questions = [t for t in at.text_input if t.key.startswith("onb_")]  # not the Ask boxes
    assert [t.value for t in questions] == ["", "", "", ""]  # placeholders only, no pre-filled values
    assert all(t.placeholder.startswith("e.g. ") for t in questions)
    at.button[0].click().run()
    errors = [e.value.replace("\\", "") for e in at.error]
    assert len(errors) == 3 and not any("String should" in e or "character" in e for e in errors)
    assert any("for example Qwen3-4B" in e for e in errors) and any("how many GPUs" in e for e in errors)
    assert Store(app_env).active_profile() is None


def test_saved_answers_are_not_asked_again(app_env, make_app):
    Store(app_env).save_profile(Profile(model="GLM4-9B", data_path="/d/x.jsonl", gpus_total=4))
    at = make_app().run()
    assert not at.exception
    assert not [t for t in at.text_input if t.key == "onb_model"]
    assert "GLM4\\-9B" in " ".join(m.value for m in at.markdown)


def test_profile_page_edits_one_field_and_keeps_the_rest(app_env, make_app):
    Store(app_env).save_profile(Profile(model="Qwen3-4B", data_path="/d/x.jsonl", gpus_total=8))
    at = make_app("pages/profile.py").run()
    assert not at.exception
    assert at.text_input(key="prof_model").value == "Qwen3-4B"
    at.text_input(key="prof_gpus").input("16")
    at.text_input(key="prof_per_node").input("8")
    at.button[0].click().run()
    p = Store(app_env).active_profile()
    assert (p.model, p.gpus_total, p.gpus_per_node, p.nodes) == ("Qwen3-4B", 16, 8, 2)


def test_pages_ask_for_profile_first(app_env, make_app):
    at = make_app("pages/progress.py").run()
    assert not at.exception
    assert any("three" in i.value or "first" in i.value for i in at.info)


def test_hostile_data_path_is_shown_inert_on_every_page(app_env, make_app):
    hostile = "/d/![x](http://attacker.example/p.png)<img src=x>.jsonl"
    Store(app_env).save_profile(Profile(model="Qwen3-4B", data_path=hostile, gpus_total=8))
    for page in ("pages/home.py", "pages/multi_turn.py", "pages/grpo.py", "pages/check_data.py"):
        at = make_app(page).run()
        assert not at.exception
        rendered = [e.value for e in (*at.markdown, *at.caption, *at.info, *at.success, *at.warning)]
        rendered += [c.label for c in at.checkbox]
        active = re.compile(r"(?<!\\)\]\(http://attacker|(?<!\\)<img")  # the user's link or tag, live
        assert not any(active.search(t) for t in rendered), page
        assert any("attacker" in t for t in rendered), page  # the value is shown, escaped


def test_a_damaged_store_is_reported_once_and_the_app_goes_on(app_env, make_app):
    app_env.mkdir(parents=True)
    (app_env / "cache.db").write_bytes(b"not a database" * 50)
    at = make_app().run()
    assert not at.exception
    assert any("kept, unchanged, at" in w.value for w in at.warning)
    assert at.text_input(key="onb_model").value == ""  # a fresh store: the questions are asked
    at.run()
    assert not any("kept, unchanged, at" in w.value for w in at.warning)  # shown once per session
