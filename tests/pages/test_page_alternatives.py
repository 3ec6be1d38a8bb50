"""AppTest: the alternatives page recommends by need and records the answer."""

from core.memory.profile import Profile
from core.memory.store import Store


def saved(app_env) -> Store:
    store = Store(app_env)
    store.save_profile(Profile(model="Qwen3-4B", data_path="/data/train.jsonl", gpus_total=8))
    return store


def test_asks_first_and_records_nothing_until_answered(app_env, make_app):
    store = saved(app_env)
    at = make_app("pages/alternatives.py").run()
    assert not at.exception
    assert any("Tick at least one" in i.value for i in at.info)
    assert store.get_record("default", "alternatives") is None


def test_no_special_need_says_slime_fits_and_records_done(app_env, make_app):
    store = saved(app_env)
    at = make_app("pages/alternatives.py").run()
    at.checkbox(key="alt_need_none").check().run()
    assert not at.exception
    assert [h.value for h in at.subheader][-1].endswith(": slime")
    assert any("slime fits" in m.value for m in at.markdown)
    rec = store.get_record("default", "alternatives")
    assert rec.status == "started" and store.accepted("default", "alternatives") == []  # answered, not accepted
    at.button(key="alt_accept").click().run()
    [accepted] = store.accepted("default", "alternatives")
    assert "slime" in accepted.summary and accepted.output_name == "alternatives.md"
    import streamlit as st

    st.cache_resource.clear()  # a new server: the ticked need is kept
    assert make_app("pages/alternatives.py").run().checkbox(key="alt_need_none").value


def test_needs_map_to_miles_and_torchforge_with_scope_notes(app_env, make_app):
    store = saved(app_env)
    at = make_app("pages/alternatives.py").run()
    at.checkbox(key="alt_need_enterprise").check()
    at.checkbox(key="alt_need_pytorch").check().run()
    assert not at.exception
    heads = [h.value for h in at.subheader]
    assert any(h.endswith(": miles") for h in heads) and any(h.endswith(": torchforge") for h in heads)
    text = " ".join(m.value for m in at.markdown)
    assert "Maturity" in text and "experimental" in text
    captions = " ".join(c.value for c in at.caption)
    assert "radixark/miles" in captions.replace("\\", "")
    assert "miles for enterprise" in store.get_record("default", "alternatives").summary


def test_backend_swap_recommends_verl(app_env, make_app):
    saved(app_env)
    at = make_app("pages/alternatives.py").run()
    at.checkbox(key="alt_need_backends").check().run()
    assert not at.exception
    assert any(h.value.endswith(": verl") for h in at.subheader)
