"""AppTest of the Ask page, the flag reference page, the Ask box on every page and the flag links."""

from __future__ import annotations

import re
from pathlib import Path

from core.memory.profile import Profile
from core.memory.store import Store

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "scripts"
# An unescaped tag, or a link anywhere but to the upstream sources we cite.
ACTIVE = re.compile(r"(?<!\\)<(img|script)|(?<!\\)\]\((?!https://github\.com/)(https?|javascript):")


def rendered(at) -> list[str]:
    out = [e.value for e in (*at.markdown, *at.caption, *at.info, *at.success, *at.warning, *at.error)]
    return out + [e.label for e in at.expander]


def flat(at) -> str:
    return " ".join(rendered(at)).replace("\\", "")


def test_ask_page_finds_a_pasted_traceback_and_explains_it_inert(app_env, make_app):
    at = make_app("pages/ask.py")
    at.query_params["q"] = ('Traceback (most recent call last):\n  File "/root/slime/slime/utils/arguments.py", '
                            'line 1846, in slime_validate_args\nAssertionError: Only one of kl_coef and '
                            'kl_loss_coef can be set <img src=x onerror=alert(1)> [x](http://evil.example)')
    at.run()
    assert not at.exception
    assert at.text_area(key="ask_query").value.startswith("Traceback")
    assert [s.value for s in at.subheader][0] == "Error messages (slime, Megatron-LM, SGLang)"
    assert at.expander[0].label.replace("\\", "") == ("matches: AssertionError: Only one of kl_coef and kl_loss_coef "
                                                     "can be set")
    text = flat(at)
    assert ("The message of your final exception has every fixed word of this one, in order; your traceback also "
            "points at this line (/root/slime/slime/utils/arguments.py, line 1846).") in text
    assert "Read from your paste: AssertionError: Only one of kl_coef" in text and "(raised in slime, at /root/slime/slime/utils/arguments.py, line 1846" in text
    assert "passes through slime at" in text and "slime/utils/arguments.py:1846@624b824a" in text
    assert "slime_validate_args" in text and "SLIME003" in text and "slime/utils/arguments.py:1846@624b824a" in text
    assert not any(ACTIVE.search(t) for t in rendered(at))


def test_ask_page_says_plainly_when_no_indexed_message_matches(app_env, make_app):
    at = make_app("pages/ask.py")
    at.query_params["q"] = ('Traceback (most recent call last):\n  File "/usr/lib/python3/site-packages/torch/x.py", '
                            "line 3, in f\ntorch.FrobnicatorError: the frobnicator <b>refused</b> to spin twice")
    at.run()  # (a CUDA out-of-memory error is answered by the runtime-message table, so it is not the example)
    assert not at.exception
    warning = at.warning[0].value.replace("\\", "")
    assert warning.startswith("No message of slime, Megatron-LM or SGLang at the pinned commits matches")
    assert "shown as closest, not as the answer" in warning and "raised there, not by slime" in warning
    labels = [e.label for e in at.expander] + [c.value for c in at.caption]
    assert any(label.startswith("closest, not a match") for label in labels)
    assert not any(ACTIVE.search(t) for t in rendered(at))


def test_ask_page_says_a_normal_log_line_is_normal(app_env, make_app):
    at = make_app("pages/ask.py")
    at.query_params["q"] = ("(RolloutManager pid=42, ip=10.0.0.2) [2026-01-01 10:00:00] INFO arguments.py:1942 - "
                            "Ignoring --offload-train because --release-train releases train actors instead.")
    at.run()
    assert not at.exception
    assert at.subheader[0].value == "slime log lines"
    assert at.expander[0].label.replace("\\", "").startswith("matches: info line: Ignoring --offload-train")
    text = flat(at)
    assert "Normal: slime prints this info line in slime_validate_args" in text and "Nothing to fix" in text
    assert "10.0.0.2" not in " ".join(c.value for c in at.caption if c.value.startswith("Read from"))


def test_ask_page_typed_query_groups_results_and_links_flags(app_env, make_app):
    at = make_app("pages/ask.py").run()
    assert not at.exception and any("Type or paste" in i.value for i in at.info)
    at.text_area(key="ask_query").input("rollout_batch_size").run()
    assert not at.exception
    assert at.subheader[0].value == "Flags"
    first_link = at.get("page_link")[0].proto
    assert (first_link.page, first_link.query_string) == ("flags", "flag=--rollout-batch-size")
    assert first_link.label.replace("\\", "") == "--rollout-batch-size (slime)"
    at.multiselect(key="ask_kinds").set_value(["rule"]).run()
    assert {s.value for s in at.subheader} == {"Our checks"}
    at.text_area(key="ask_query").input("qqzzxxyy").run()
    assert any("Nothing found" in i.value for i in at.info)


def test_flag_reference_opens_a_linked_flag_with_everything_the_source_says(app_env, make_app):
    at = make_app("pages/flags.py")
    at.query_params["flag"] = "--rollout-batch-size"
    at.run()
    assert not at.exception
    assert at.text_input(key="fl_query").value == "--rollout-batch-size"
    assert at.subheader[0].value == "--rollout-batch-size"
    text = flat(at)
    assert "required (no default" in text and "unset" not in text  # issue 28: a required flag has no default
    assert "slime/utils/arguments.py:690@624b824a" in text and "The number of prompts" in text
    assert re.search(r"Set by \d+ of \d+ launch scripts", text)
    values = at.dataframe[1].value
    assert 32 in list(values["value"]) and values["value"].dtype.kind == "i"  # numbers sort as numbers
    counts = list(values["scripts"])
    assert counts == sorted(counts, reverse=True)  # most used first
    links = [e.proto for e in at.get("page_link") if e.proto.page == "knowledge"]
    assert any(link.query_string == "card=batch-size" for link in links)
    assert any("Error messages that check it" in e.label for e in at.expander)
    assert "slime/utils/arguments.py:1974@624b824a" in flat(at)


def test_flag_reference_takes_any_link_inert(app_env, make_app):
    at = make_app("pages/flags.py")
    at.query_params["flag"] = "<script>alert(1)</script>" + "-" * 5000
    at.run()
    assert not at.exception
    assert len(at.text_input(key="fl_query").value) == 200
    assert not any(ACTIVE.search(t) for t in rendered(at))


def test_flag_reference_filters_and_suggests(app_env, make_app):
    at = make_app("pages/flags.py").run()
    assert not at.exception
    total = len(at.dataframe[0].value)
    at.multiselect(key="fl_owner").set_value(["router"]).run()
    frame = at.dataframe[0].value
    assert 0 < len(frame) < total and set(frame["owner"]) == {"router"}
    at.multiselect(key="fl_owner").set_value([]).run()
    at.toggle(key="fl_deprecated").set_value(True).run()
    assert all(at.dataframe[0].value["deprecated"])
    at.toggle(key="fl_deprecated").set_value(False).run()
    at.text_input(key="fl_query").input("--rolout-batch-sise").run()
    assert "Did you mean --rollout-batch-size" in flat(at)
    at.text_input(key="fl_query").input("<img src=x>").run()
    assert not at.exception and not any(ACTIVE.search(t) for t in rendered(at))


def test_flag_reference_follows_the_checkout_named_on_the_checker(app_env, make_app, tmp_path, monkeypatch):
    checkout = tmp_path / "my-slime"
    (checkout / "slime" / "utils").mkdir(parents=True)
    (checkout / "slime" / "utils" / "arguments.py").write_text("def broken(:\n")
    monkeypatch.setenv("SLIME_ASSISTANT_ROOTS", str(tmp_path))
    Store(app_env).save_profile(Profile(model="Qwen3-4B", data_path="/d/x.jsonl", gpus_total=8))
    at = make_app("pages/check_args.py").run()
    at.text_input(key="ca_checkout").input(str(checkout)).run()
    assert not at.exception
    at.switch_page("pages/flags.py").run()
    assert not at.exception
    text = flat(at)
    assert "Following your slime checkout" in text and "my-slime" in text
    assert "bundled catalog" in text  # the broken checkout is said so, and the bundled flags stand in


def test_every_page_has_the_ask_box_in_the_sidebar(app_env, make_app):
    Store(app_env).save_profile(Profile(model="Qwen3-4B", data_path="/d/x.jsonl", gpus_total=8))
    for page in ("pages/home.py", "pages/check_args.py", "pages/knowledge.py", "pages/flags.py", "pages/ask.py"):
        at = make_app(page).run()
        assert not at.exception, page
        assert [t.key for t in at.sidebar.text_input] == ["ask_box_sidebar"], page
    home = make_app("pages/home.py").run()
    assert "ask_box_home" in [t.key for t in home.main.text_input]


def test_findings_and_cards_link_flags_to_the_reference(app_env, make_app):
    Store(app_env).save_profile(Profile(model="Qwen3-4B", data_path="/d/x.jsonl", gpus_total=8))
    at = make_app("pages/check_args.py").run()
    at.text_area(key="ca_text").input((FIXTURES / "typo_and_batch.sh").read_text()).run()
    assert any("Flag reference: [" in e.value and "](flags?flag=--" in e.value for e in at.error)
    at = make_app("pages/knowledge.py")
    at.query_params["card"] = "batch-size"
    at.run()
    assert not at.exception
    assert any("](flags?flag=--rollout-batch-size)" in m.value for m in at.markdown)


def test_ask_page_matches_errors_in_the_users_checkout(app_env, make_app, tmp_path, monkeypatch):
    checkout = tmp_path / "mine"
    (checkout / "slime" / "utils").mkdir(parents=True)
    (checkout / "slime" / "utils" / "arguments.py").write_text(
        "def validate(args):\n    assert args.x > 1, f'x must exceed one, got {args.x}'\n")
    monkeypatch.setenv("SLIME_ASSISTANT_ROOTS", str(tmp_path))
    Store(app_env).save_profile(Profile(model="Qwen3-4B", data_path="/d/x.jsonl", gpus_total=8))
    at = make_app("pages/check_args.py").run()
    at.text_input(key="ca_checkout").input(str(checkout)).run()
    at.switch_page("pages/ask.py").run()
    at.text_area(key="ask_query").input("AssertionError: x must exceed one, got 0").run()
    assert not at.exception
    assert at.subheader[0].value == "In your slime checkout"
    assert "slime/utils/arguments.py:2" in flat(at)


def test_a_draft_lists_its_flags_linked_to_the_reference(app_env, make_app):
    Store(app_env).save_profile(Profile(model="Qwen3-4B", data_path="/data/train.jsonl", gpus_total=8))
    at = make_app("pages/grpo.py").run()
    assert not at.exception
    box = next(e for e in at.expander if e.label.startswith("Flag reference for the"))
    text = " ".join(m.value for m in box.markdown)
    assert "](flags?flag=--rollout-batch-size)" in text and "](flags?flag=--colocate)" in text


# -- issue 28, defect 14: the pages read the profile's checkout with the same guarded reader ----------------
def hostile_profile_checkout(app_env, tmp_path, monkeypatch):
    """A profile naming a checkout whose `tools` and `examples` lead outside it (still inside the configured
    root) and whose `scripts/` holds a named pipe."""
    import os

    from tests.launch.test_versions import old_tree

    tree = old_tree(tmp_path / "my-slime", more={
        "scripts/run-mine.sh": "python3 train.py --rollout-batch-size 16\n",
        "slime/mine.py": "assert ok, 'a message of the checkout itself'\n"})
    os.mkfifo(tree / "scripts" / "stuck.sh")
    outside = tmp_path / "elsewhere"
    (outside / "tools").mkdir(parents=True)
    (outside / "tools" / "far.py").write_text("assert ok, 'a message from outside the checkout'\n")
    (outside / "run-far.sh").write_text("python3 train.py --rollout-batch-size 999\n")
    (tree / "tools").symlink_to(outside / "tools")
    (tree / "examples").symlink_to(outside)
    monkeypatch.setenv("SLIME_ASSISTANT_ROOTS", str(tmp_path))
    Store(app_env).save_profile(Profile(model="Qwen3-4B", data_path="/d/x.jsonl", gpus_total=8,
                                        slime_checkout=str(tree)))
    return tree


def test_ask_page_never_shows_files_from_outside_the_checkout(app_env, make_app, tmp_path, monkeypatch):
    hostile_profile_checkout(app_env, tmp_path, monkeypatch)
    at = make_app("pages/ask.py").run()
    at.text_area(key="ask_query").input("AssertionError: a message from outside the checkout").run()
    assert not at.exception
    assert "far.py" not in flat(at).replace("Not read from your checkout", "")
    assert not any(s.value == "In your slime checkout" for s in at.subheader)
    assert "Not read from your checkout: 2 files, a link leading outside the checkout, not followed: tools, examples" in flat(at)
    at.text_area(key="ask_query").input("AssertionError: a message of the checkout itself").run()
    assert at.subheader[0].value == "In your slime checkout" and "slime/mine.py:1" in flat(at)


def test_flag_reference_returns_with_a_fifo_in_scripts_and_reads_no_script_outside(app_env, make_app, tmp_path,
                                                                                   monkeypatch):
    hostile_profile_checkout(app_env, tmp_path, monkeypatch)
    at = make_app("pages/flags.py").run()
    assert not at.exception
    text = flat(at)
    assert "its 1 launch scripts" in text  # scripts/run-mine.sh only: not the pipe, not examples/ out there
    assert "scripts/stuck.sh" in text and "never opened" in text
    assert "examples" in text and "leading outside the checkout" in text


def test_ask_page_answers_how_many_gpus_with_the_numbers_and_the_plan_page(app_env, make_app):
    from core.memory.profile import Profile
    from core.memory.store import Store

    Store(app_env).save_profile(Profile(model="Qwen3-8B", data_path="/data/train.jsonl", gpus_total=8,
                                        gpu_model="H200"))
    at = make_app("pages/ask.py").run()
    at.text_area(key="ask_query").input("How many GPUs do I need for Qwen3-32B with 16k responses?").run()
    assert not at.exception
    box = " ".join(i.value for i in at.info).replace("\\", "")
    assert "qwen3-32B needs at least" in box and "H200 (your profile)" in box and "16384 tokens" in box
    assert any("--tensor-model-parallel-size" in c.value for c in at.code)
    assert any("Will it fit?" in str(link.label) for link in at.get("page_link"))
    at.text_area(key="ask_query").input("How many GPUs do I need for Llama-3-70B?").run()
    box = " ".join(i.value for i in at.info).replace("\\", "")
    assert "no model script for 'Llama-3-70B'" in box and not any("--tensor-model" in c.value for c in at.code)
