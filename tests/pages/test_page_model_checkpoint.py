"""AppTest: model script choice, config.json comparison, conversion draft and the record of handled work."""

import json
import shlex
import shutil
import subprocess

from core.memory.profile import Profile
from core.memory.store import Store

PAGE = "pages/model_checkpoint.py"
QWEN3_4B = {"model_type": "qwen3", "hidden_size": 2560, "num_attention_heads": 32, "num_hidden_layers": 36,
            "intermediate_size": 9728, "rms_norm_eps": 1e-6, "rope_theta": 1000000, "tie_word_embeddings": True}


def saved(app_env, model: str = "Qwen3-4B") -> Store:
    store = Store(app_env)
    store.save_profile(Profile(model=model, data_path="/data/train.jsonl", gpus_total=8))
    return store


def upload(at, data: bytes, name: str = "config.json"):
    at.file_uploader(key="mc_config_upload").set_value((name, data, "application/json"))
    return at.run()


def conversion_code(at) -> str:
    return next(c.value for c in at.code if "convert_hf_to_torch_dist.py" in c.value)


def test_known_model_picks_its_script_and_drafts_a_ready_command(app_env, make_app):
    store = saved(app_env)
    at = make_app(PAGE).run()
    assert not at.exception
    assert at.selectbox(key="mc_script").value == "qwen3-4B"
    assert any(c.value == "source scripts/models/qwen3-4B.sh" for c in at.code)
    code = conversion_code(at)
    assert "--hf-checkpoint /root/Qwen3-4B" in code and "--save /root/Qwen3-4B_torch_dist" in code
    assert any("Ready for your review" in s.value for s in at.success)
    assert store.get_record("default", "model_checkpoint") is None  # visiting records nothing
    at.button(key="mc_accept").click().run()
    [accepted] = store.accepted("default", "model_checkpoint")
    assert accepted.output.strip() == code.strip() and accepted.output_name == "convert-qwen3-4B.sh"
    assert any("compare the checkpoint's config.json" in t for t in accepted.todo_items)
    assert any("Accepted" in s.value for s in at.success)


def test_matching_config_is_reported_and_recorded(app_env, make_app):
    store = saved(app_env)
    at = upload(make_app(PAGE).run(), json.dumps(QWEN3_4B).encode())
    assert not at.exception
    assert any("Every field slime compares matches" in s.value for s in at.success)
    rec = store.get_record("default", "model_checkpoint")
    assert "config.json compared with MODEL_ARGS: no mismatch" in rec.done_items


def test_rope_variant_blocks_the_draft_until_override_is_added(app_env, make_app):
    store = saved(app_env)
    at = upload(make_app(PAGE).run(), json.dumps({**QWEN3_4B, "rope_theta": 5000000}).encode())
    assert not at.exception
    assert any("1 field(s) differ" in e.value for e in at.error)
    assert any("Not ready" in e.value for e in at.error)
    assert store.get_record("default", "model_checkpoint").status == "started"  # the upload is a change
    assert not [b for b in at.button if b.key == "mc_accept"]
    at.checkbox(key="mc_apply_overrides").check().run()
    assert not at.exception
    code = conversion_code(at)
    assert "MODEL_ARGS+=(--rotary-base 5000000)" in code
    assert any("Ready for your review" in s.value for s in at.success)
    at.button(key="mc_accept").click().run()
    assert "override" in store.accepted("default", "model_checkpoint")[0].summary


def test_binary_upload_gets_a_specific_message(app_env, make_app):
    saved(app_env)
    at = upload(make_app(PAGE).run(), b"\x00\x00\x00safetensors\x00")
    assert not at.exception
    assert any("binary" in e.value for e in at.error)


def test_unknown_model_is_said_to_be_outside_scope(app_env, make_app):
    store = saved(app_env, "Gemma-3-4B")
    at = make_app(PAGE).run()
    assert not at.exception
    assert any("outside what slime ships support for" in e.value for e in at.error)
    assert at.selectbox(key="mc_script").value == "(choose)"
    assert store.get_record("default", "model_checkpoint") is None
    at.selectbox(key="mc_script").set_value("qwen3-4B").run()
    at.text_input(key="mc_megatron").input("/opt/Megatron-LM").run()
    import streamlit as st

    st.cache_resource.clear()
    again = make_app(PAGE).run()
    assert again.selectbox(key="mc_script").value == "qwen3-4B"
    assert "/opt/Megatron-LM" in conversion_code(again)
    assert store.get_record("default", "model_checkpoint").status == "started"


def test_hostile_paths_are_quoted_and_the_command_parses(app_env, make_app):
    saved(app_env)
    hostile = "/models/my set/$(reboot);`id`"
    at = make_app(PAGE).run()
    at.text_input(key="mc_hf").input(hostile).run()
    assert not at.exception
    code = conversion_code(at)
    command = code[code.index("PYTHONPATH="):].replace("\\\n", " ")
    words = shlex.split(command)
    assert words[words.index("--hf-checkpoint") + 1] == hostile
    assert words[words.index("--save") + 1] == hostile + "_torch_dist"
    if shutil.which("bash"):
        assert subprocess.run(["bash", "-n"], input=code, text=True, capture_output=True).returncode == 0


def test_server_path_needs_configured_roots(app_env, make_app, tmp_path, monkeypatch):
    saved(app_env)
    cfg = tmp_path / "ckpt" / "config.json"
    cfg.parent.mkdir()
    cfg.write_text(json.dumps(QWEN3_4B))
    monkeypatch.delenv("SLIME_ASSISTANT_ROOTS", raising=False)
    at = make_app(PAGE).run()
    at.text_input(key="mc_config_path").input(str(cfg)).run()
    assert any("Reading files on this machine is off" in e.value for e in at.error)
    monkeypatch.setenv("SLIME_ASSISTANT_ROOTS", str(tmp_path / "ckpt"))
    at.run()
    assert not at.exception
    assert any("Every field slime compares matches" in s.value for s in at.success)


def test_too_many_conversion_processes_is_an_error(app_env, make_app):
    saved(app_env)
    at = make_app(PAGE).run()
    at.number_input(key="mc_nproc").set_value(64).run()
    assert not at.exception
    assert any("Not ready" in e.value for e in at.error)


def test_the_conversion_command_is_shown_one_argument_a_line_not_soft_wrapped(app_env, make_app):
    """Issue 28, first hour item 9: a soft-wrapped command looked broken; each argument now has its own line
    with a continuation, in a code block that does not wrap."""
    saved(app_env)
    at = make_app(PAGE).run()
    assert not at.exception
    code = conversion_code(at)
    block = next(c for c in at.code if c.value == code)
    assert not block.proto.wrap_lines
    command = code[code.index("PYTHONPATH="):].rstrip().splitlines()
    assert all(line.endswith(" \\") for line in command[:-1]) and not command[-1].endswith("\\")
    assert command[1].lstrip().startswith(("python ", "torchrun ")) and all(len(line) < 100 for line in command)


def test_a_rerun_gives_each_kept_widget_its_current_value_as_default(app_env, make_app):
    # The browser falls back to a widget's default when it has lost the widget's value (two runs close together
    # on a loaded machine) and sends it back as a choice: the default must be the value the page holds, or the
    # matched script turns into "(choose)" as the user clicks Accept (seen in the browser test before).
    saved(app_env)
    at = make_app(PAGE).run()
    select = at.selectbox(key="mc_script")
    assert select.value == "qwen3-4B" and select.proto.set_value  # first run: the value comes from the state
    at.text_input(key="mc_hf").set_value("/models/qwen3-4b-hf").run()
    select, hf, nproc = at.selectbox(key="mc_script"), at.text_input(key="mc_hf"), at.number_input(key="mc_nproc")
    assert not at.exception and select.value == "qwen3-4B"
    assert select.options[select.proto.default] == "qwen3-4B"
    assert hf.proto.default == "/models/qwen3-4b-hf" and nproc.proto.default == 1
    assert any("/models/qwen3-4b-hf_torch_dist" in c.value for c in at.code)
