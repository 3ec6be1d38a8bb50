"""AppTest: the multi-turn page checks an uploaded generate function statically and drafts once confirmed."""

from __future__ import annotations

import importlib.util
import shlex
import shutil
import subprocess
import textwrap

import pytest

from core.drafts import launch as drafts
from core.memory.profile import Profile
from core.memory.store import Store

PAGE = "pages/multi_turn.py"

AGENT = textwrap.dedent('''
    import asyncio
    import re


    async def generate(args, sample, sampling_params):
        url = f"http://{args.sglang_router_ip}:{args.sglang_router_port}/generate"
        for _ in range(args.max_turns):
            out = await post(url, {"text": sample.prompt})
            sample.append_response_tokens(args, tokens=ids(out), log_probs=lps(out))
            call = re.search(r"<tool>(.*?)</tool>", out["text"])
            if call is None:
                break
            obs = await asyncio.wait_for(run_tool(call.group(1)), timeout=30)
            sample.append_response_tokens(args, tokens=obs, trainable=False)
        sample.status = "completed"
        return sample
''').encode()


@pytest.fixture
def checker(monkeypatch):
    """The real launch-argument checker when it is installed, else a stand-in that finds nothing."""
    if importlib.util.find_spec("core.launch.check") is None:
        monkeypatch.setattr(drafts, "run_launch_checker", lambda script, gpus: [])


def open_page(app_env, make_app, **profile):
    fields = {"model": "Qwen3-4B", "data_path": "/data/train.jsonl", "gpus_total": 8, **profile}
    Store(app_env).save_profile(Profile(**fields))
    at = make_app(PAGE).run()
    assert not at.exception
    return at


def upload(at, data: bytes = AGENT, name: str = "my_agent.py"):
    at.file_uploader(key="mt_upload").set_value((name, data, "text/x-python"))
    return at.run()


def script_of(at) -> str:
    scripts = [c.value for c in at.code if c.value.startswith("#!/bin/bash")]
    assert len(scripts) == 1
    return scripts[0]


def confirm(at):
    at.checkbox(key="mt_confirm_function").check()
    at.checkbox(key="mt_confirm_data").check()
    return at.run()


def test_page_explains_the_checklist_and_waits_for_answers(app_env, make_app, checker):
    at = open_page(app_env, make_app)
    text = " ".join(m.value for m in at.markdown)
    assert "custom generate function" in text and "examples/search" in text.replace("\\", "")
    assert any("no --max-turns" in i.value.replace("\\", "") for i in at.info)
    assert not [c for c in at.code if c.value.startswith("#!/bin/bash")]
    assert Store(app_env).get_record("default", "multi_turn") is None  # visiting records nothing
    at.text_input(key="mt_input_key").input("question").run()
    rec = Store(app_env).get_record("default", "multi_turn")
    assert rec.status == "started" and "give --custom-generate-function-path" in rec.todo_items


def test_upload_is_checked_and_suggests_the_dotted_path(app_env, make_app, checker):
    at = upload(open_page(app_env, make_app))
    assert not at.exception
    assert at.text_input(key="mt_generate_path").value == "my_agent.generate"
    table = next(t.value for t in at.table if "In your file" in t.value.columns)  # shown whole: every row
    marks = {k.replace("\\", ""): v.replace("\\", "")
             for k, v in zip(table["Checklist item"], table["In your file"], strict=True)}
    assert len(marks) == 12
    assert marks["Runs tools with time limits"] == "visible"
    assert marks["Sets sample.reward, or leaves it to --custom-rm-path"] == "left to --custom-rm-path"
    assert any("checklist items are visible" in m.value for m in at.markdown)


def test_confirmed_answers_give_a_ready_checked_draft_and_record_done(app_env, make_app, checker):
    at = upload(open_page(app_env, make_app))
    at.text_input(key="mt_rm_path").input("my_agent.reward_func")
    at.text_input(key="mt_module_dir").input("/root/agents dir")
    at.text_input(key="mt_config_path").input("/root/agents dir/agent.yaml")
    at.number_input(key="mt_max_turns").set_value(4)
    at = confirm(at)
    assert not at.exception
    script = script_of(at)
    assert "--custom-generate-function-path my_agent.generate" in script
    assert "--custom-rm-path my_agent.reward_func" in script
    assert "--custom-config-path '/root/agents dir/agent.yaml'" in script
    assert '"${CUSTOM_ARGS[@]}"' in script and "/root/agents dir" in script
    assert any(c.value.strip() == "max_turns: 4" for c in at.code)
    assert any("Ready for your review" in s.value for s in at.success)
    assert Store(app_env).accepted("default", "multi_turn") == []
    at.button(key="mt_accept").click().run()
    [accepted] = Store(app_env).accepted("default", "multi_turn")
    assert accepted.output.rstrip("\n") == script and "my_agent.generate" in accepted.summary
    assert "generate-function checklist confirmed" in accepted.done_items
    # The answers are kept: a new session shows the same draft (the upload itself is not kept).
    import streamlit as st

    st.cache_resource.clear()
    again = make_app(PAGE).run()
    assert not again.exception and script_of(again) == script
    if shutil.which("bash"):
        proc = subprocess.run(["bash", "-n"], input=script, text=True, capture_output=True)
        assert proc.returncode == 0, proc.stderr


def test_colon_form_is_refused_with_the_fix(app_env, make_app, checker):
    at = open_page(app_env, make_app)
    at.text_input(key="mt_generate_path").input("your_module.multiturn_logic:generate")
    at.text_input(key="mt_rm_path").input("your_module.multiturn_logic.reward_func")
    at = confirm(at)
    assert not at.exception
    assert not [c for c in at.code if c.value.startswith("#!/bin/bash")]
    errors = " ".join(e.value for e in at.error).replace("\\", "")
    assert "FP002" in errors and "your_module.multiturn_logic.generate" in errors


def test_sync_function_blocks_the_draft(app_env, make_app, checker):
    at = upload(open_page(app_env, make_app), b"def generate(args, sample, sampling_params):\n    return sample\n")
    at.text_input(key="mt_rm_path").input("my_agent.reward_func")
    at = confirm(at)
    assert not at.exception
    assert any("AGT003" in e.value for e in at.error)
    assert not [c for c in at.code if c.value.startswith("#!/bin/bash")]
    rec = Store(app_env).get_record("default", "multi_turn")
    assert rec.status == "started" and any("AGT003" in t for t in rec.todo_items)


def test_binary_and_badly_named_uploads_get_specific_messages(app_env, make_app, checker):
    at = upload(open_page(app_env, make_app), b"\x00\x01\x02", "my-agent.py")
    assert not at.exception
    errors = " ".join(e.value for e in at.error)
    assert "binary" in errors and "not an importable module name" in errors.replace("\\", "")


def test_hostile_user_values_stay_inert(app_env, make_app, checker):
    hostile_data = "/data/my set/$(reboot).jsonl"
    at = open_page(app_env, make_app, data_path=hostile_data)
    at.text_input(key="mt_generate_path").input("agent.generate")
    at.radio(key="mt_reward_mode").set_value("A built-in reward (--rm-type)")
    at.text_input(key="mt_input_key").input("q`id`")
    at = confirm(at)
    assert not at.exception
    script = script_of(at)
    if shutil.which("bash"):
        assert subprocess.run(["bash", "-n"], input=script, text=True, capture_output=True).returncode == 0
    line = next(ln for ln in script.splitlines() if ln.strip().startswith("--prompt-data"))
    assert shlex.split(line) == ["--prompt-data", hostile_data]
    line = next(ln for ln in script.splitlines() if ln.strip().startswith("--input-key"))
    assert shlex.split(line) == ["--input-key", "q`id`"]


@pytest.mark.parametrize(("gpus", "per_node", "split", "layout"), [
    (1, None, False, ["--colocate"]),
    (8, None, False, ["--actor-num-gpus-per-node 8", "--colocate"]),
    (16, 8, True, ["--actor-num-nodes 1", "--actor-num-gpus-per-node 8", "--rollout-num-gpus 8"]),
], ids=str)
def test_realistic_profiles_draft_ready_scripts(app_env, make_app, checker, gpus, per_node, split, layout):
    at = open_page(app_env, make_app, gpus_total=gpus, gpus_per_node=per_node)
    at.text_input(key="mt_generate_path").input("generate_with_search.generate")
    at.text_input(key="mt_rm_path").input("generate_with_search.reward_func")
    at = confirm(at)
    if split:
        at.radio(key="mt_layout").set_value("Disaggregated (separate actor and rollout GPUs)").run()
    assert not at.exception
    script = script_of(at)
    assert all(w in script for w in layout), layout
    assert "--custom-generate-function-path generate_with_search.generate" in script
    assert any("Ready for your review" in s.value for s in at.success)
