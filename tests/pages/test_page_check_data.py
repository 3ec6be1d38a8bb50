"""AppTest: the "Check my data" page (uploads, paths inside roots, launch settings, the saved record)."""

from __future__ import annotations

import json
from pathlib import Path

from core.data.rules import keys_from_launch
from core.memory.profile import Profile, SavedLaunchKeys
from core.memory.store import Store

FIXTURES = Path(__file__).parents[1] / "fixtures" / "data"
PAGE = "pages/check_data.py"


def open_page(app_env, make_app, data_path: str = "/data/train.jsonl", launch: dict | None = None):
    store = Store(app_env)
    store.save_profile(Profile(model="Qwen3-4B", data_path=data_path, gpus_total=8))
    if launch is not None:
        store.save_launch_keys("default", SavedLaunchKeys(keys=keys_from_launch(launch), origin="grpo",
                                                          updated_at=1.0))
    at = make_app(PAGE)
    at.run()
    assert not at.exception
    return at


def unescaped(markdown: str) -> str:
    """Text shown through ui.common.plain, without its markdown escapes."""
    return markdown.replace("\\", "")


def upload_and_check(at, name: str, content: bytes):
    at.file_uploader(key="cd_upload").set_value((name, content, "application/octet-stream"))
    at.run()
    at.button(key="cd_run").click().run()
    assert not at.exception
    return at


def test_page_works_before_the_first_visit_questions_and_invites_them(app_env, make_app):
    at = make_app(PAGE).run()
    assert not at.exception
    assert any("No profile yet: this page works without one" in c.value for c in at.caption)
    at.text_input(key="cd_input_key").input("prompt")
    at = upload_and_check(at, "train.jsonl", b'{"prompt": "What is 1 + 1?", "label": "2"}\n')
    assert any("checked in" in s.value for s in (*at.success, *at.caption, *at.markdown, *at.info))
    assert Store(app_env).accepted("default", "check_data")


def test_a_good_upload_is_done_and_recorded(app_env, make_app):
    at = open_page(app_env, make_app)
    at.text_input(key="cd_input_key").input("prompt")
    at.text_input(key="cd_label_key").input("label")
    upload_and_check(at, "sample.jsonl", (FIXTURES / "text_ok.jsonl").read_bytes())
    assert any("would use all 10 row" in s.value for s in at.success)
    assert [m.value for m in at.metric][:4] == ["10", "10", "0", "0"]
    [record] = Store(app_env).accepted("default", "check_data")  # pressing Check marks it done
    assert record.how == "ran the check" and record.output_mime == "application/json"
    assert json.loads(record.output)["summary"]["rows_used"] == 10
    # The keys typed are kept for a new session; the last check is named on the page.
    import streamlit as st

    st.cache_resource.clear()
    again = make_app(PAGE).run()
    assert again.text_input(key="cd_input_key").value == "prompt"
    assert any("Last checked" in c.value and "sample.jsonl" in unescaped(c.value) for c in again.caption)


def test_a_bad_upload_lists_findings_and_the_flags_to_add(app_env, make_app):
    at = open_page(app_env, make_app)
    upload_and_check(at, "sample.jsonl", (FIXTURES / "mixed_problems.jsonl").read_bytes())
    errors = " ".join(e.value for e in at.error)
    assert "would skip 1 line" in errors and "DATA001" in errors
    flags = [c.value for c in at.code if "--input-key" in c.value]
    assert flags and "--input-key prompt" in flags[0]
    [record] = Store(app_env).accepted("default", "check_data")
    assert "slime would skip 1 line" in record.summary and "not usable as is" not in record.summary
    assert any("--input-key prompt" in t for t in record.todo_items)


def test_a_binary_upload_headline_says_slime_stops_at_start_up(app_env, make_app):
    at = open_page(app_env, make_app)
    upload_and_check(at, "x.jsonl", bytes((i * 7919 + i // 3) % 256 for i in range(3000)))
    errors = [unescaped(e.value) for e in at.error]
    assert any(e.startswith("slime would stop at start-up on x.jsonl: The file contains NUL bytes") for e in errors)
    assert not any("skip 0 line" in e for e in errors) and any("DATA024" in e for e in errors)
    [record] = Store(app_env).accepted("default", "check_data")
    assert record.summary.startswith("x.jsonl: slime would stop at start-up: The file contains NUL bytes")
    assert json.loads(record.output)["summary"]["would_fail"] is True


def test_a_non_utf8_upload_headline_names_the_line_and_counts_the_rest(app_env, make_app):
    at = open_page(app_env, make_app)
    at.text_input(key="cd_input_key").input("prompt")
    upload_and_check(at, "d.jsonl", b'{"prompt":"ok"}\n{"prompt":"caf\xe9"}\n{"prompt":"ok"}\n')
    headline = unescaped(at.error[0].value)
    assert headline.startswith("slime would stop at start-up on d.jsonl at line 2: Byte 0xe9")
    assert "once that is fixed" in headline
    assert [m.label for m in at.metric][1] == "Rows otherwise usable"
    assert [m.value for m in at.metric][:4] == ["3", "2", "0", "1"]


def test_non_utf8_bytes_are_said_once_without_key_follow_ons(app_env, make_app):
    at = open_page(app_env, make_app)
    at.text_input(key="cd_label_key").input("label")
    upload_and_check(at, "d.jsonl", b'{"prompt":"caf\xe9","label":"1"}\n' * 4)
    errors = [unescaped(e.value) for e in at.error]
    assert errors[0].startswith("slime would stop at start-up on d.jsonl at line 1: Byte 0xe9")
    assert "3 later line(s)" in errors[0] and "once that is fixed" in errors[0]
    findings = [e for e in errors[1:] if e.startswith("DATA")]
    assert len(findings) == 1 and findings[0].startswith("DATA016")
    assert not [c for c in at.code if "--input-key" in c.value or "--label-key" in c.value]


def test_uploaded_text_is_never_rendered_as_markdown_or_html(app_env, make_app):
    at = open_page(app_env, make_app)
    at.text_input(key="cd_input_key").input("prompt")
    hostile = b'{"prompt": "<img src=x onerror=alert(1)> **bold** [link](http://evil)", "label": "1"}\n'
    upload_and_check(at, "<b>x</b>.jsonl", hostile)
    rendered = [e.value for kind in (at.markdown, at.caption, at.error, at.warning, at.info, at.success)
                for e in kind]
    assert any("\\<b\\>x" in text for text in rendered)  # the file name is shown, escaped
    assert not any("<img" in text or "<b>" in text or "](http://evil" in text for text in rendered)
    assert any("<img src=x" in c.value for c in at.code)  # shown literally, as code


def test_saved_launch_keys_prefill_the_keys(app_env, make_app):
    at = open_page(app_env, make_app, launch={"--input-key": "question", "--label-key": "answer",
                                               "--apply-chat-template": True})
    assert any("GRPO draft" in c.value for c in at.caption)
    assert at.text_input(key="cd_input_key").value == "question"
    assert at.text_input(key="cd_label_key").value == "answer"
    assert at.checkbox(key="cd_template").value is True


def test_a_path_inside_the_roots_is_checked(app_env, make_app, tmp_path, monkeypatch):
    data = tmp_path / "roots" / "train.jsonl"
    data.parent.mkdir()
    data.write_bytes((FIXTURES / "chat_ok.jsonl").read_bytes())
    monkeypatch.setenv("SLIME_ASSISTANT_ROOTS", str(data.parent))
    at = open_page(app_env, make_app, data_path=str(data))
    at.radio(key="cd_source").set_value("A file on this machine").run()
    assert at.text_input(key="cd_path").value == str(data)  # pre-filled from the profile
    at.text_input(key="cd_input_key").input("prompt")
    at.checkbox(key="cd_template").check()
    at.button(key="cd_run").click().run()
    assert not at.exception
    assert any("would use all 10 row" in s.value for s in at.success)


def test_paths_outside_the_roots_or_without_roots_are_refused(app_env, make_app, tmp_path, monkeypatch):
    inside = tmp_path / "allowed"
    inside.mkdir()
    outside = tmp_path / "secret.jsonl"
    outside.write_text('{"input": "a"}\n')
    monkeypatch.setenv("SLIME_ASSISTANT_ROOTS", str(inside))
    at = open_page(app_env, make_app)
    at.radio(key="cd_source").set_value("A file on this machine").run()
    at.text_input(key="cd_path").input(str(outside)).run()
    at.button(key="cd_run").click().run()
    assert any("outside the directories" in e.value for e in at.error)
    at.text_input(key="cd_path").input(str(inside)).run()
    at.button(key="cd_run").click().run()
    assert any("directory" in e.value for e in at.error)
    monkeypatch.delenv("SLIME_ASSISTANT_ROOTS")
    at.button(key="cd_run").click().run()
    assert any("no roots are configured" in e.value for e in at.error)
    assert Store(app_env).accepted("default", "check_data") == []  # no check ran


def test_invalid_keys_disable_the_check_with_a_message(app_env, make_app):
    at = open_page(app_env, make_app)
    at.text_input(key="cd_multimodal").input("{not json").run()
    assert any("multimodal" in e.value for e in at.error)
    assert at.button(key="cd_run").disabled


def test_keys_of_a_checked_launch_script_reach_the_data_page(app_env, make_app):
    Store(app_env).save_profile(Profile(model="Qwen3-4B", data_path="/data/train.jsonl", gpus_total=8))
    at = make_app("pages/check_args.py").run()
    script = ("python3 train.py --prompt-data /data/train.jsonl --input-key question --label-key answer "
              "--apply-chat-template --rollout-batch-size 8 --n-samples-per-prompt 8 --num-rollout 10\n")
    at.text_area(key="ca_text").input(script).run()
    assert not at.exception
    saved = Store(app_env).launch_keys("default")
    assert saved is not None and saved.origin == "check_args"
    assert (saved.keys.input_key, saved.keys.label_key, saved.keys.apply_chat_template) == (
        "question", "answer", True)
    data_page = make_app(PAGE).run()
    assert data_page.text_input(key="cd_input_key").value == "question"
    assert data_page.checkbox(key="cd_template").value is True


def test_a_ready_grpo_draft_saves_its_keys_for_the_data_page(app_env, make_app):
    Store(app_env).save_profile(Profile(model="Qwen3-4B", data_path="/data/train.jsonl", gpus_total=8))
    at = make_app("pages/grpo.py").run()
    at.text_input(key="grpo_input_key").input("problem").run()
    assert not at.exception
    assert Store(app_env).launch_keys("default") is None  # a draft is not the user's until accepted
    at.button(key="grpo_accept").click().run()
    saved = Store(app_env).launch_keys("default")
    assert saved is not None and saved.origin == "grpo" and saved.keys.input_key == "problem"
    assert make_app(PAGE).run().text_input(key="cd_input_key").value == "problem"


def test_with_a_tokenizer_directory_the_page_shows_drops_lengths_and_rendered_prompts(app_env, make_app, tmp_path,
                                                                                    monkeypatch):
    import pytest

    pytest.importorskip("transformers")
    from tests.tokenizer_builder import build_tokenizer

    tok_dir = build_tokenizer(tmp_path / "model")
    monkeypatch.setenv("SLIME_ASSISTANT_ROOTS", str(tmp_path))
    at = open_page(app_env, make_app)
    at.text_input(key="cd_input_key").input("prompt")
    at.checkbox(key="cd_template").check()
    at.radio(key="cd_tok_source").set_value("A directory on this machine").run()
    at.text_input(key="cd_tok_path").input(str(tok_dir))
    at.number_input(key="cd_prompt_len").set_value(30)
    rows = [{"prompt": "hello world"}, {"prompt": "hello world " * 20}, {"prompt": "<b>bold</b>"}]
    upload_and_check(at, "d.jsonl", b"".join(json.dumps(r).encode() + b"\n" for r in rows))
    assert any("drops 1 row(s) longer than 30 tokens" in w.value for w in at.warning)
    assert any(unescaped(e.value).startswith("slime would drop 1 row for length of d.jsonl") for e in at.error)
    assert any("DATA043" in w.value for w in at.warning)
    rendered = [c.value for c in at.code if "<|im_start|>" in c.value]
    assert rendered[0].startswith("<|im_start|>user\nhello world<|im_end|>") and "<b>bold</b>" in rendered[-1]
    [record] = Store(app_env).accepted("default", "check_data")
    assert json.loads(record.output)["summary"]["dropped_for_length"] == 1


def test_a_tokenizer_that_needs_remote_code_is_refused_and_rows_still_checked(app_env, make_app, tmp_path,
                                                                           monkeypatch):
    import pytest

    pytest.importorskip("transformers")
    from tests.tokenizer_builder import build_tokenizer

    tok_dir = build_tokenizer(tmp_path / "model")
    config = json.loads((tok_dir / "tokenizer_config.json").read_text())
    config["auto_map"] = {"AutoTokenizer": ["x.Tok", None]}
    at = open_page(app_env, make_app)
    at.radio(key="cd_tok_source").set_value("Upload tokenizer files").run()
    at.file_uploader(key="cd_tok_upload").set_value([
        ("tokenizer.json", (tok_dir / "tokenizer.json").read_bytes(), "application/json"),
        ("tokenizer_config.json", json.dumps(config).encode(), "application/json")])
    at.run()
    upload_and_check(at, "d.jsonl", (FIXTURES / "text_ok.jsonl").read_bytes())
    assert any("never runs code" in w.value for w in at.warning)
    assert [m.value for m in at.metric][:2] == ["10", "0"]


def test_hostile_multimodal_keys_and_surrogate_keys_do_not_break_the_page(app_env, make_app):
    at = open_page(app_env, make_app)
    at.text_input(key="cd_multimodal").input("[" * 5000).run()
    assert not at.exception and any("--multimodal-keys" in unescaped(e.value) for e in at.error)
    at.text_input(key="cd_multimodal").input('{"image": "\\ud800"}').run()
    upload_and_check(at, "d.jsonl", b'{"input":"x","\\ud800k":1}\n')
    assert not at.exception


def test_a_row_slice_with_5000_digits_is_a_message_on_the_page(app_env, make_app, tmp_path, monkeypatch):
    data = tmp_path / "x.jsonl"
    data.write_text('{"input": "a"}\n')
    monkeypatch.setenv("SLIME_ASSISTANT_ROOTS", str(tmp_path))
    at = open_page(app_env, make_app)
    at.radio(key="cd_source").set_value("A file on this machine").run()
    at.text_input(key="cd_path").input(f"{data}@[{'9' * 5000}:]").run()
    at.button(key="cd_run").click().run()
    assert not at.exception and any("4,300 digits" in unescaped(e.value) for e in at.error)


def test_a_chat_template_linked_out_of_the_roots_is_refused_and_never_shown(app_env, make_app, tmp_path,
                                                                           monkeypatch):
    """Issue 22, defect 3: a tokenizer directory inside the roots whose chat_template.jinja links to a file
    outside them; the file's text was shown under "Rendered prompts"."""
    import pytest

    pytest.importorskip("transformers")
    from tests.tokenizer_builder import build_tokenizer

    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("TOP-SECRET-LINE {{ messages }}")
    tok_dir = build_tokenizer(tmp_path / "roots" / "model")
    (tok_dir / "chat_template.jinja").symlink_to(secret)
    monkeypatch.setenv("SLIME_ASSISTANT_ROOTS", str(tmp_path / "roots"))
    at = open_page(app_env, make_app)
    at.text_input(key="cd_input_key").input("prompt")
    at.checkbox(key="cd_template").check()
    at.radio(key="cd_tok_source").set_value("A directory on this machine").run()
    at.text_input(key="cd_tok_path").input(str(tok_dir))
    upload_and_check(at, "d.jsonl", b'{"prompt": "hello world"}\n')
    assert any("chat_template.jinja leads outside the directories this app may read" in unescaped(w.value)
               for w in at.warning)
    shown = [c.value for c in at.code] + [m.value for m in at.markdown] + [w.value for w in at.warning]
    assert not any("TOP-SECRET" in text for text in shown)


def test_an_uploaded_hostile_template_is_stopped_and_the_page_says_why(app_env, make_app, tmp_path):
    """Issue 22, defect 2, the page's path: a template with a ten-megabyte output, uploaded."""
    import pytest

    pytest.importorskip("transformers")
    from tests.tokenizer_builder import build_tokenizer

    tok_dir = build_tokenizer(tmp_path / "model", chat_template="{% for i in range(100000) %}{{ 'y' * 100 }}"
                                                                "{% endfor %}")
    at = open_page(app_env, make_app)
    at.text_input(key="cd_input_key").input("prompt")
    at.checkbox(key="cd_template").check()
    at.radio(key="cd_tok_source").set_value("Upload tokenizer files").run()
    at.file_uploader(key="cd_tok_upload").set_value([
        (name, (tok_dir / name).read_bytes(), "application/json") for name in ("tokenizer.json",
                                                                               "tokenizer_config.json")])
    at.run()
    upload_and_check(at, "d.jsonl", b'{"prompt": "hello world"}\n')
    messages = " ".join(unescaped(e.value) for e in [*at.error, *at.warning, *at.markdown])
    assert "(tokenizer_config.json) was stopped on this row: its output passed" in messages
    assert "Traceback" not in messages


# -- the last report stays; a refusal never shows another file's report (issue 28, first hour 3) --------------
def findings_shown(at) -> list[str]:
    """The findings' lines as shown (code · line N · message)."""
    return [unescaped(e.value) for e in (*at.error, *at.warning) if " · line " in e.value]


def test_the_last_report_is_shown_again_after_leaving_the_page_and_in_a_new_session(app_env, make_app):
    import streamlit as st

    at = open_page(app_env, make_app)
    upload_and_check(at, "sample.jsonl", (FIXTURES / "mixed_problems.jsonl").read_bytes())
    first = findings_shown(at)
    assert any(line.startswith("DATA001 · line 3 · ") for line in first)
    metrics = [m.value for m in at.metric]
    # Another page, then back, in the same session.
    at.switch_page("pages/progress.py").run()
    assert not at.exception and not findings_shown(at)
    at.switch_page("pages/check_data.py").run()
    assert not at.exception
    assert findings_shown(at) == first and [m.value for m in at.metric] == metrics
    # A new session (a reload, or a link opened in a new tab): the report comes back from the saved record.
    st.cache_resource.clear()
    again = make_app(PAGE).run()
    assert not again.exception
    assert findings_shown(again) == first and [m.value for m in again.metric] == metrics
    assert any("Your last check" in i.value and "Press Check" in i.value for i in again.info)
    assert any("would skip 1 line" in e.value for e in again.error)  # the headline too
    assert len(Store(app_env).accepted("default", "check_data")) == 1  # showing it again recorded nothing


def test_a_refused_path_does_not_show_the_previous_files_report(app_env, make_app, tmp_path, monkeypatch):
    inside = tmp_path / "allowed"
    inside.mkdir()
    data = inside / "train.jsonl"
    data.write_bytes((FIXTURES / "mixed_problems.jsonl").read_bytes())
    outside = tmp_path / "secret.jsonl"
    outside.write_text('{"input": "a"}\n')
    monkeypatch.setenv("SLIME_ASSISTANT_ROOTS", str(inside))
    at = open_page(app_env, make_app, data_path=str(data))
    at.radio(key="cd_source").set_value("A file on this machine").run()
    at.button(key="cd_run").click().run()
    assert findings_shown(at) and at.metric  # the file inside the roots: its report
    at.text_input(key="cd_path").input(str(outside)).run()
    at.button(key="cd_run").click().run()
    assert not at.exception
    assert any("outside the directories" in e.value for e in at.error)
    assert not findings_shown(at) and not at.metric  # no report of train.jsonl under the refusal
    assert not any("train.jsonl" in unescaped(e.value) for e in (*at.error, *at.success, *at.warning))
    at.run()  # and not on the next run either
    assert not findings_shown(at) and not at.metric
