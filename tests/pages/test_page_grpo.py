"""AppTest: the GRPO setup page drafts a checked launch script from the saved profile."""

from __future__ import annotations

from core.cli import main
from core.memory.profile import Profile
from core.memory.store import Store

PAGE = "pages/grpo.py"


def open_page(app_env, make_app, **profile):
    fields = {"model": "Qwen3-4B", "data_path": "/data/train.jsonl", "gpus_total": 8, **profile}
    Store(app_env).save_profile(Profile(**fields))
    at = make_app(PAGE).run()
    assert not at.exception
    return at


def script_of(at) -> str:
    scripts = [c.value for c in at.code if c.value.startswith("#!/bin/bash")]
    assert len(scripts) == 1
    return scripts[0]


def test_grpo_page_drafts_a_ready_colocated_script_and_records_it(app_env, make_app, capsys):
    at = open_page(app_env, make_app)
    script = script_of(at)
    assert "-- python3 train.py" in script and "--colocate" in script
    assert "--advantage-estimator grpo" in script and "--input-key prompt" in script
    still_open = " ".join(i.value for i in at.info if "passes its checks" in i.value)
    assert "Still open" in still_open and "torch\\_dist" in still_open  # unticked prerequisites, not "Ready"
    assert not any("Ready for your review" in s.value for s in at.success)
    assert {d.key for d in at.download_button} == {"grpo_download_sh", "grpo_download_md"}
    assert any("256 samples per rollout" in m.value for m in at.markdown)
    store = Store(app_env)
    assert store.get_record("default", "grpo") is None and store.accepted("default", "grpo") == []  # a visit
    at.button(key="grpo_accept").click().run()
    [accepted] = Store(app_env).accepted("default", "grpo")
    assert accepted.how == "accepted the draft" and accepted.output.rstrip("\n") == script
    assert accepted.output_name == "run-grpo-Qwen3-4B.sh" and "colocated" in accepted.summary
    assert any("Accepted" in s.value for s in at.success) and not [b for b in at.button if b.key == "grpo_accept"]
    # The command line prints the identical script for the same answers.
    main(["draft", "grpo", "--model", "Qwen3-4B", "--data", "/data/train.jsonl", "--gpus", "8"])
    assert capsys.readouterr().out.rstrip("\n") == script  # st.code drops the final newline


def test_grpo_page_answers_change_the_draft_and_stay_inert(app_env, make_app):
    at = open_page(app_env, make_app)
    at.text_input(key="grpo_input_key").input("question; $(reboot)").run()
    assert not at.exception
    assert "--input-key 'question; $(reboot)'" in script_of(at)
    at.number_input(key="grpo_n").set_value(4).run()
    script = script_of(at)
    assert "--n-samples-per-prompt 4" in script and "--global-batch-size 128" in script


def test_grpo_page_one_gpu_is_colocated_only(app_env, make_app):
    at = open_page(app_env, make_app, gpus_total=1)
    assert at.radio(key="grpo_layout").disabled
    script = script_of(at)
    assert "--actor-num-gpus-per-node 1" in script and "--colocate" in script
    assert "--tensor-model-parallel-size 1" in script
    assert any("passes its checks" in i.value for i in at.info)  # passed the launch checker


def test_grpo_page_two_nodes_disaggregated(app_env, make_app):
    at = open_page(app_env, make_app, gpus_total=16, gpus_per_node=8)
    at.radio(key="grpo_layout").set_value(at.radio(key="grpo_layout").options[1]).run()
    assert not at.exception
    script = script_of(at)
    assert "--rollout-num-gpus 8" in script and "--colocate" not in script
    assert "ray start --address" in script  # instructions for the second node, as a comment
    assert any("disaggregated" in m.value for m in at.markdown)
    assert any("passes its checks" in i.value for i in at.info)  # passed the launch checker


def test_grpo_page_unclear_model_is_not_ready_until_a_script_is_chosen(app_env, make_app):
    at = open_page(app_env, make_app, model="Qwen3-5B")
    assert any("Not ready" in e.value for e in at.error)
    assert not at.download_button and not [b for b in at.button if b.key == "grpo_accept"]
    assert Store(app_env).get_record("default", "grpo") is None
    at.selectbox(key="grpo_model_script").set_value("qwen3-8B").run()
    assert not at.exception
    assert "source scripts/models/qwen3-8B.sh" in script_of(at)
    assert any("passes its checks" in i.value for i in at.info)
    assert Store(app_env).get_record("default", "grpo").status == "started"  # changed, not accepted
    assert Store(app_env).accepted("default", "grpo") == []


def test_grpo_page_bad_answer_gets_a_message(app_env, make_app):
    at = open_page(app_env, make_app)
    at.text_input(key="grpo_input_key").input("   ").run()
    assert not at.exception
    assert any("cannot make a draft" in e.value for e in at.error)


def test_grpo_page_asks_for_a_profile_first(app_env, make_app):
    at = make_app(PAGE).run()
    assert not at.exception
    assert any("first" in i.value for i in at.info)


def test_grpo_page_records_prerequisites_as_done_or_todo(app_env, make_app):
    at = open_page(app_env, make_app)
    assert Store(app_env).get_record("default", "grpo") is None
    at.checkbox(key="grpo_pre_hf").check().run()
    assert not at.exception
    rec = Store(app_env).get_record("default", "grpo")
    assert any("Hugging Face checkpoint" in d for d in rec.done_items)
    assert sum(t.startswith("prerequisite:") for t in rec.todo_items) == 3


def test_grpo_inputs_and_draft_survive_leaving_reloading_and_a_new_server(app_env, make_app):
    at = open_page(app_env, make_app, gpus_total=16, gpus_per_node=8)
    at.radio(key="grpo_layout").set_value(at.radio(key="grpo_layout").options[1]).run()
    at.number_input(key="grpo_gbs").set_value(64).run()
    at.checkbox(key="grpo_pre_env").check().run()
    assert not at.exception
    draft = script_of(at)
    assert "--global-batch-size 64" in draft and "--colocate" not in draft
    saved = Store(app_env).inputs("default", "grpo").values
    assert saved["layout"].startswith("Disaggregated") and saved["gbs"] == 64 and saved["pre_env"] is True
    # Leave for Home and come back in the same session.
    at.switch_page("pages/home.py").run()
    at.switch_page(PAGE).run()
    assert not at.exception and script_of(at) == draft
    assert at.number_input(key="grpo_gbs").value == 64 and at.checkbox(key="grpo_pre_env").value
    # A new browser session (reload), and a new server process (the cached store dropped).
    import streamlit as st

    st.cache_resource.clear()
    again = make_app(PAGE).run()
    assert not again.exception and script_of(again) == draft
    assert again.radio(key="grpo_layout").value.startswith("Disaggregated")
    assert again.number_input(key="grpo_gbs").value == 64


def test_grpo_inputs_are_kept_per_profile(app_env, make_app):
    at = open_page(app_env, make_app)
    at.number_input(key="grpo_n").set_value(4).run()
    store = Store(app_env)
    store.save_profile(Profile(name="other", model="Qwen3-4B", data_path="/data/t.jsonl", gpus_total=8))
    store.set_active("other")
    at.switch_page("pages/home.py").run()
    at.switch_page(PAGE).run()
    assert at.number_input(key="grpo_n").value == 8  # the other profile's (default) answer
    store.set_active("default")
    at.switch_page("pages/home.py").run()
    at.switch_page(PAGE).run()
    assert at.number_input(key="grpo_n").value == 4


def test_grpo_a_later_accepted_draft_keeps_the_earlier_one(app_env, make_app):
    at = open_page(app_env, make_app)
    at.button(key="grpo_accept").click().run()
    at.number_input(key="grpo_n").set_value(4).run()
    at.button(key="grpo_accept").click().run()
    history = Store(app_env).accepted("default", "grpo")
    assert len(history) == 2 and "--n-samples-per-prompt 4" in history[0].output
    assert "--n-samples-per-prompt 8" in history[1].output


def test_grpo_draft_is_ready_once_every_prerequisite_is_ticked(app_env, make_app):
    at = open_page(app_env, make_app)
    for box in at.checkbox:
        if box.key.startswith("grpo_pre_"):
            box.check()
    at.run()
    assert not at.exception
    assert any("Ready for your review" in s.value for s in at.success)
    assert not any("Still open" in i.value for i in at.info)


def test_an_accepted_conversion_command_feeds_its_paths_into_the_drafts_visibly_and_editably(app_env, make_app):
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    at = open_page(app_env, make_app)  # the GRPO page first: its draft guesses /root/Qwen3-4B
    assert "--hf-checkpoint /root/Qwen3-4B" in script_of(at)
    assert any("Empty boxes use the guess" in c.value for c in at.caption)
    at.switch_page(str(root / "pages/model_checkpoint.py")).run()
    at.text_input(key="mc_hf").input("/models/qwen3-4b-hf").run()
    at.text_input(key="mc_save").input("/models/qwen3-4b-dist").run()
    at.button(key="mc_accept").click().run()
    assert not at.exception
    for page, prefix in (("pages/grpo.py", "grpo"), ("pages/async_training.py", "async")):
        at.switch_page(str(root / page)).run()
        assert not at.exception
        assert at.text_input(key=f"{prefix}_ckpt_hf").value == "/models/qwen3-4b-hf"
        assert at.text_input(key=f"{prefix}_ckpt_ref").value == "/models/qwen3-4b-dist"
        script = script_of(at)
        assert "--hf-checkpoint /models/qwen3-4b-hf" in script and "--ref-load /models/qwen3-4b-dist" in script
        assert "/root/Qwen3-4B" not in script
        assert any("From the conversion command you accepted" in c.value for c in at.caption)
    at.switch_page(str(root / PAGE)).run()
    at.text_input(key="grpo_ckpt_hf").input("/fast/qwen3-4b").run()  # the user's edit wins, and is kept
    assert "--hf-checkpoint /fast/qwen3-4b" in script_of(at)
    assert Store(app_env).inputs("default", "grpo").values["ckpt_hf"] == "/fast/qwen3-4b"
