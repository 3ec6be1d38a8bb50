"""AppTest of the page 'Check my launch script'."""

from __future__ import annotations

from pathlib import Path

from core.memory.profile import Profile
from core.memory.store import Store

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "scripts"
PAGE = "pages/check_args.py"


def saved(app_env, gpus: int = 8) -> Store:
    store = Store(app_env)
    store.save_profile(Profile(model="Qwen3-4B", data_path="/data/train.jsonl", gpus_total=gpus))
    return store


def texts(elements) -> str:
    return " ".join(e.value for e in elements).replace("\\", "")


def test_page_works_before_the_first_visit_questions_and_invites_them(app_env, make_app):
    at = make_app(PAGE).run()
    assert not at.exception
    assert any("No profile yet: this page works without one" in c.value for c in at.caption)
    assert at.number_input(key="ca_gpus").value == 8  # a stand-in until the profile says otherwise
    at.text_area(key="ca_text").input((FIXTURES / "typo_and_batch.sh").read_text()).run()
    assert not at.exception and "ARG001" in texts(at.error)
    store = Store(app_env)
    assert store.active_profile() is None  # nothing answered for the user
    [checked] = store.accepted("default", "check_args")  # kept for the profile the questions will create
    assert "error(s)" in checked.summary


def test_the_calculator_has_its_own_page_and_takes_the_scripts_numbers(app_env, make_app):
    saved(app_env)
    at = make_app(PAGE).run()
    assert not at.exception and [n.key for n in at.number_input] == ["ca_gpus", "ca_gpus_per_node"]  # the calculator moved out
    at.text_area(key="ca_text").input((FIXTURES / "good_colocate.sh").read_text()).run()
    at.button(key="ca_to_calculator").click().run()
    assert not at.exception
    assert at.number_input(key="bc_gbs").value == 128 and at.number_input(key="bc_rbs").value == 16


def test_the_calculator_handoff_sets_every_field_from_the_script_and_clears_the_rest(app_env, make_app):
    store = saved(app_env)
    store.update_inputs("default", "batch_calculator", {"mbs": 4, "pp": 2, "dynamic": False, "num_rollout": None})
    at = make_app(PAGE).run()
    at.text_area(key="ca_text").input((FIXTURES / "good_colocate.sh").read_text()).run()
    at.button(key="ca_to_calculator").click().run()
    assert not at.exception
    got = {k: at.number_input(key=f"bc_{k}").value for k in
           ("rbs", "n", "gbs", "steps", "gpus", "tp", "pp", "cp", "mbs", "num_rollout")}
    assert got == {"rbs": 16, "n": 8, "gbs": 128, "steps": None, "gpus": 8, "tp": 2, "pp": 1, "cp": 1,
                   "mbs": None, "num_rollout": 100}  # the earlier session's micro-batch size and PP are gone
    assert at.toggle(key="bc_dynamic").value is True
    assert any("Every field below is set from your launch script" in i.value for i in at.info)
    kept = store.inputs("default", "batch_calculator").values
    assert (kept["mbs"], kept["num_rollout"], kept["dynamic"]) == (None, 100, True)


def test_pasted_script_shows_findings_categories_and_records(app_env, make_app):
    store = saved(app_env)
    at = make_app(PAGE).run()
    at.text_area(key="ca_text").input((FIXTURES / "typo_and_batch.sh").read_text()).run()
    assert not at.exception
    errors = texts(at.error)
    assert "ARG001" in errors and "n-sample-per-prompt" in errors and "BATCH004" in errors
    frame = at.dataframe[0].value
    assert dict(zip(frame["flag"], frame["owner"], strict=True))["--n-sample-per-prompt"] == "unknown"
    [checked] = store.accepted("default", "check_args")  # a check ran on the user's input: done
    assert checked.how == "ran the check" and checked.output_mime == "application/json"
    assert any("ARG001" in t for t in checked.todo_items) and "error(s)" in checked.summary


def test_clean_script_records_done(app_env, make_app):
    store = saved(app_env)
    at = make_app(PAGE).run()
    assert store.accepted("default", "check_args") == [] and store.get_record("default", "check_args") is None
    at.text_area(key="ca_text").input((FIXTURES / "good_colocate.sh").read_text()).run()
    assert not at.exception and "No errors" in texts(at.success)
    [checked] = store.accepted("default", "check_args")
    assert checked.summary.startswith("0 error(s)")


def test_the_pasted_script_is_kept_and_showing_it_again_records_nothing(app_env, make_app):
    store = saved(app_env)
    script = (FIXTURES / "good_colocate.sh").read_text()
    at = make_app(PAGE).run()
    at.text_area(key="ca_text").input(script).run()
    at.number_input(key="ca_gpus").set_value(4).run()
    assert len(store.accepted("default", "check_args")) == 2  # re-checked with another option
    at.selectbox(key="ca_entry").set_value("train_async.py").run()  # the script names its entry: same result
    assert len(store.accepted("default", "check_args")) == 2
    at.switch_page("pages/home.py").run()
    at.switch_page(PAGE).run()
    assert at.text_area(key="ca_text").value == script and at.selectbox(key="ca_entry").value == "train_async.py"
    assert at.number_input(key="ca_gpus").value == 4
    import streamlit as st

    st.cache_resource.clear()  # a new server process
    again = make_app(PAGE).run()
    assert not again.exception
    assert again.text_area(key="ca_text").value == script and "GPU003" in texts(again.error)
    assert len(store.accepted("default", "check_args")) == 2  # the remembered script shown again: no new entry


def test_gpu_count_from_profile_feeds_the_layout_check(app_env, make_app):
    saved(app_env, gpus=4)
    at = make_app(PAGE).run()
    at.text_area(key="ca_text").input((FIXTURES / "good_colocate.sh").read_text()).run()
    assert "GPU003" in texts(at.error)


def test_user_text_is_shown_literally(app_env, make_app):
    saved(app_env)
    at = make_app(PAGE).run()
    at.text_area(key="ca_text").input("python3 train.py --rollout-batch-size 8 --**bold**_x_ 1").run()
    assert not at.exception
    assert any("\\*\\*bold\\*\\*" in e.value for e in at.error)  # markdown escaped, not rendered


def test_checkout_outside_the_roots_is_refused(app_env, make_app, monkeypatch, tmp_path):
    monkeypatch.setenv("SLIME_ASSISTANT_ROOTS", str(tmp_path))
    saved(app_env)
    at = make_app(PAGE).run()
    at.text_area(key="ca_text").input("--rollout-batch-size 8").run()
    at.text_input(key="ca_checkout").input("/etc").run()
    assert not at.exception and "outside" in texts(at.error)
    (tmp_path / "notslime").mkdir()
    at.text_input(key="ca_checkout").input(str(tmp_path / "notslime")).run()
    assert "not a slime checkout" in texts(at.error)


def test_bare_list_uses_the_chosen_entry(app_env, make_app):
    saved(app_env)
    at = make_app(PAGE).run()
    at.selectbox(key="ca_entry").set_value("train_async.py")
    at.text_area(key="ca_text").input("--rollout-batch-size 8 --colocate").run()
    assert "ENTRY001" in texts(at.error)


def test_pasted_script_with_odd_whitespace_shows_a_finding(app_env, make_app):
    """Lone CR, NBSP, VT, FF, U+2028 and U+3000 used to stop the bash reader with a traceback (issue 15)."""
    saved(app_env)
    at = make_app(PAGE).run()
    script = "python3 train.py --lr\xa01e-6 --seed 1\r--x\x0b1 --y\x0c2 --z\u20283 --w\u30004\n"
    at.text_area(key="ca_text").input(script).run()
    assert not at.exception
    assert "SCRIPT014" in texts(at.warning) + texts(at.error) + texts(at.markdown) + texts(at.info)


def test_checkout_files_linking_outside_the_roots_never_show(app_env, make_app, tmp_path, monkeypatch):
    """A checkout inside the roots whose model script links outside: its content is not read (issue 15)."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "evil.sh").write_text("MODEL_ARGS=(--secret-from-outside 1)\n")
    checkout = tmp_path / "root" / "slime"
    (checkout / "scripts" / "models").mkdir(parents=True)
    (checkout / "slime" / "utils").mkdir(parents=True)
    (checkout / "slime" / "utils" / "arguments.py").symlink_to(outside / "evil.sh")
    (checkout / "scripts" / "models" / "evil.sh").symlink_to(outside / "evil.sh")
    monkeypatch.setenv("SLIME_ASSISTANT_ROOTS", str(tmp_path / "root"))
    saved(app_env)
    at = make_app(PAGE).run()
    at.text_input(key="ca_checkout").input(str(checkout)).run()
    at.text_area(key="ca_text").input('source scripts/models/evil.sh\npython3 train.py "${MODEL_ARGS[@]}"\n').run()
    assert not at.exception
    shown = " ".join(str(e.value) for kind in ("markdown", "error", "warning", "info", "success", "caption")
                     for e in getattr(at, kind))
    shown += " ".join(str(df.value.to_dict()) for df in at.dataframe)
    assert "secret-from-outside" not in shown
    assert "outside the directories" in shown or "leads outside" in shown or "cannot read" in shown


def test_an_uploaded_script_is_checked_once_and_marks_the_check_done(app_env, make_app):
    store = saved(app_env)
    at = make_app(PAGE).run()
    at.radio(key="ca_source").set_value("Upload a file").run()
    assert store.accepted("default", "check_args") == []
    at.file_uploader(key="ca_upload").set_value(("run.sh", (FIXTURES / "good_colocate.sh").read_bytes(),
                                                 "text/x-shellscript")).run()
    assert not at.exception and "No errors" in texts(at.success)
    assert len(store.accepted("default", "check_args")) == 1
    at.run()  # the same upload shown again is not a new check
    assert len(store.accepted("default", "check_args")) == 1
    assert store.inputs("default", "check_args").values["source"] == "Upload a file"


def test_the_profiles_gpus_per_node_checks_num_gpus_per_node(app_env, make_app):
    store = Store(app_env)
    store.save_profile(Profile(model="Qwen3-4B", data_path="/data/train.jsonl", gpus_total=12, gpus_per_node=4))
    at = make_app(PAGE).run()
    assert at.number_input(key="ca_gpus_per_node").value == 4  # from the profile
    at.text_area(key="ca_text").input("python3 train.py --actor-num-gpus-per-node 4 --rollout-num-gpus 8 "
                                      "--rollout-batch-size 8 --n-samples-per-prompt 8 --global-batch-size 64 "
                                      "--num-rollout 2 --hf-checkpoint /m").run()
    assert not at.exception
    errors = texts(at.error)
    assert "GPU004" in errors and "Your nodes have 4 GPUs each (your profile)" in errors
    at.number_input(key="ca_gpus_per_node").set_value(0).run()  # not said: a one-node actor is not judged
    assert "GPU004" not in texts(at.error)


def test_the_calculator_gets_the_gpus_the_check_used_when_the_script_counts_them_at_run_time(app_env, make_app):
    """Issue 28, first hour item 6: slime's scripts set NUM_GPUS=${NUM_GPUS:-$(nvidia-smi ...)}; the check used
    the profile's 8, and the calculator's Training GPUs get them too (so Megatron's start-up checks run)."""
    saved(app_env)
    script = (FIXTURES / "good_colocate.sh").read_text().replace("--actor-num-gpus-per-node ${GPUS}",
                                                                 "--actor-num-gpus-per-node ${NUM_GPUS}")
    script = script.replace("#!/bin/bash\n", "#!/bin/bash\nNUM_GPUS=${NUM_GPUS:-$(nvidia-smi -L | wc -l)}\n", 1)
    assert "${NUM_GPUS}" in script
    at = make_app(PAGE).run()
    at.text_area(key="ca_text").input(script).run()
    at.button(key="ca_to_calculator").click().run()
    assert not at.exception
    assert at.number_input(key="bc_gpus").value == 8
    assert any("the 8 GPUs the check used" in i.value for i in at.info)


def test_the_gpu_type_comes_from_the_profile_and_adds_the_plans_verdicts(app_env, make_app):
    Store(app_env).save_profile(Profile(model="Qwen3-4B", data_path="/data/train.jsonl", gpus_total=8,
                                        gpu_model="A100-40GB"))
    at = make_app(PAGE).run()
    assert at.selectbox(key="ca_gpu").value == "A100-40GB"
    at.text_area(key="ca_text").input((FIXTURES / "good_colocate.sh").read_text()).run()
    assert not at.exception
    assert "PLAN001" in texts(at.warning) and "A100-40GB of 40.0 GiB" in texts(at.warning)
    at.selectbox(key="ca_gpu").set_value("not said (no memory plan)").run()
    assert "PLAN001" not in texts(at.warning)  # no GPU type, no memory verdicts


def test_plan_this_scripts_memory_hands_the_script_and_gpu_to_will_it_fit(app_env, make_app):
    saved(app_env)
    at = make_app(PAGE).run()
    assert at.selectbox(key="ca_gpu").value == "not said (no memory plan)"  # the profile names no GPU type
    script = (FIXTURES / "good_colocate.sh").read_text()
    at.text_area(key="ca_text").input(script).run()
    at.selectbox(key="ca_gpu").set_value("H200").run()
    at.button(key="ca_to_plan").click().run()
    assert not at.exception
    assert at.radio(key="plan_source").value == "a launch script" and at.text_area(key="plan_script").value == script
    assert at.selectbox(key="plan_gpu").value == "H200" and at.number_input(key="plan_gpus").value == 8
    assert any("launch-script checker" in i.value for i in at.info)
    assert any(m.label.startswith("Training peak") and "GiB" in m.value for m in at.metric)
