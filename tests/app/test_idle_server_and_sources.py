"""A newcomer's first hour (issue 21): an idle server, sources found where the tests look, no stray warnings."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from core.pins import SOURCE_NAMES, pinned_source_dir

ROOT = Path(__file__).resolve().parents[2]


def test_make_run_serves_without_a_file_watcher_and_make_dev_reloads():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["server"]["fileWatcherType"] == "none"
    assert ".venv" in config["server"]["folderWatchBlacklist"]
    makefile = (ROOT / "Makefile").read_text()
    run = makefile.split("\nrun:", 1)[1].split("\n\n", 1)[0]
    dev = makefile.split("\ndev:", 1)[1].split("\n\n", 1)[0]
    assert "fileWatcherType" not in run  # the project config's "none"
    assert "--server.fileWatcherType auto" in dev and "--server.runOnSave true" in dev


def test_make_sources_fetches_every_pin_into_the_folder_the_tests_read():
    from core.pins import MEGATRON_COMMIT, SGLANG_VERSION, SLIME_COMMIT

    makefile = (ROOT / "Makefile").read_text()
    assert SLIME_COMMIT in makefile and MEGATRON_COMMIT in makefile
    assert f"SGLANG_VERSION := {SGLANG_VERSION.removeprefix('v')}" in makefile
    assert "ROUTER_VERSION := 0.3.2" in makefile
    assert "export SLIME_ASSISTANT_SOURCES" in makefile
    for folder in ("slime", "megatron", "sglang_whl", "router"):
        assert f"$(SOURCES)/{folder}" in makefile


def test_pinned_sources_follow_the_environment_variable(tmp_path):
    env = {"SLIME_ASSISTANT_SOURCES": str(tmp_path)}
    assert {n: pinned_source_dir(n, env) for n in SOURCE_NAMES} == {
        "slime": tmp_path / "slime", "megatron": tmp_path / "megatron", "sglang": tmp_path / "sglang_whl",
        "router": tmp_path / "router"}
    assert pinned_source_dir("slime", {}) == Path("/work/src/slime")
    assert pinned_source_dir("router", {"SLIME_ASSISTANT_SOURCES": "  "}) == Path("/tmp/router/x")
    with pytest.raises(ValueError, match="unknown source"):
        pinned_source_dir("verl", env)


def test_the_tab_icon_is_drawn_locally():
    import ast

    tree = ast.parse((ROOT / "streamlit_app.py").read_text())
    icon = next(n.value.value for n in ast.walk(tree) if isinstance(n, ast.Assign)
                and getattr(n.targets[0], "id", "") == "TAB_ICON")
    assert not icon.startswith(":material") and len(icon) == 1  # an emoji: an inline SVG, no font server


def test_a_tag_whose_wall_times_are_all_nan_reads_without_a_warning(tmp_path):
    from tensorboardX import SummaryWriter

    from core.monitor.tensorboard.run import read_run

    writer = SummaryWriter(str(tmp_path / "run"))
    for step in range(3):
        writer.add_scalar("train/loss", 1.0 / (step + 1), step, walltime=float("nan"))
        writer.add_scalar("rollout/raw_reward", 0.1 * step, step, walltime=1_700_000_000.0 + step)
    writer.close()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run = read_run(tmp_path / "run")
    assert np.isnan(run.series["train/loss"].wall_times).all()
    assert run.start_time == pytest.approx(1_700_000_000.0)


def test_the_monitor_and_the_calculator_work_before_the_first_visit_questions(app_env, make_app):
    for page in ("pages/monitor.py", "pages/batch_calculator.py", "pages/ask.py"):
        at = make_app(page).run()
        assert not at.exception, page
        assert not any("Tell us your model" in i.value for i in at.info), page
    at = make_app("pages/monitor.py").run()
    assert any("No profile yet: this page works without one" in c.value for c in at.caption)
    assert at.text_input(key="mon_tb_experiment").value == "my-model-grpo"


def test_plan_inputs_come_only_from_the_flags_a_script_sets():
    from core.batch import plan_inputs_from_flags

    planned = plan_inputs_from_flags({"--rollout-batch-size": "32", "--n-samples-per-prompt": "${N}",
                                      "--use-dynamic-batch-size": None, "--tensor-model-parallel-size": "0",
                                      "--num-rollout": "9" * 40}, training_gpus=None)
    assert planned.rollout_batch_size == 32 and planned.n_samples_per_prompt is None  # unresolved: absent
    assert planned.dynamic_batching and planned.tensor_parallel == 1 and planned.num_rollout is None
    assert planned.micro_batch_size is None and planned.global_batch_size is None
    assert plan_inputs_from_flags({}, training_gpus=4).dynamic_batching is False


def _status(at) -> str:
    [line] = [c.value for c in at.caption if "counts as done in What's done when" in c.value]
    return line.replace("\\", "")


def test_the_status_line_says_done_in_the_run_that_checked(app_env, make_app):
    from core.memory.store import Store

    at = make_app("pages/check_args.py").run()
    assert "Not done yet" in _status(at)
    at.text_area(key="ca_text").input((ROOT / "tests/fixtures/scripts/good_colocate.sh").read_text()).run()
    [checked] = Store(app_env).accepted("default", "check_args")
    assert "Not done yet" not in _status(at) and f"Last checked {_when(checked.accepted_at)}" in _status(at)


def _when(timestamp: float) -> str:
    from datetime import datetime

    return datetime.fromtimestamp(timestamp).strftime("%Y-%m-%d %H:%M:%S")  # to the second


def test_the_monitor_status_follows_each_new_load_in_the_same_run(app_env, make_app, tmp_path, monkeypatch):
    from core.memory.store import Store
    from core.monitor.tensorboard.synthetic import Scenario, write_slime_like_run

    root = tmp_path / "logs"
    write_slime_like_run(root / "a" / "good", Scenario(rollouts=12))
    write_slime_like_run(root / "b" / "bad", Scenario(rollouts=12, reward="flat_zero"))
    monkeypatch.setenv("SLIME_ASSISTANT_ROOTS", str(root))
    at = make_app("pages/monitor.py").run()
    for folder in ("a", "b"):
        at.text_input(key="mon_dir").input(str(root / folder))
        at.button(key="mon_dir_add").click().run()
        assert not at.exception
        latest = Store(app_env).accepted("default", "monitor")[0]
        assert f"Last checklist {_when(latest.accepted_at)}: {latest.summary}" in _status(at)
    assert len(Store(app_env).accepted("default", "monitor")) == 2


def test_two_accepted_drafts_say_what_differs_and_when_to_the_second(app_env, make_app):
    import re

    from core.memory.profile import Profile
    from core.memory.store import Store

    Store(app_env).save_profile(Profile(model="Qwen3-4B", data_path="/data/train.jsonl", gpus_total=8))
    at = make_app("pages/grpo.py").run()
    at.button(key="grpo_accept").click().run()
    at.number_input(key="grpo_gbs").set_value(64).run()
    at.text_input(key="grpo_ckpt_hf").input("/models/q").run()
    at.button(key="grpo_accept").click().run()
    assert not at.exception
    newer, older = Store(app_env).accepted("default", "grpo")
    assert newer.input_labels["gbs"].startswith("Global batch")
    at.switch_page(str(ROOT / "pages/progress.py")).run()
    assert not at.exception
    shown = [m.value.replace("\\", "") for m in at.markdown if "accepted the draft" in m.value]
    assert len(shown) == 2 and all(re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d · ", t) for t in shown)
    [changed] = [c.value.replace("\\", "") for c in at.caption if "Changed since the one before" in c.value]
    assert "Global batch, 0 = one step per rollout (--global-batch-size): 0 → 64" in changed
    assert "Hugging Face checkpoint folder (--hf-checkpoint): empty → /models/q" in changed


def test_input_changes_in_words():
    from core.memory.profile import AcceptedOutput
    from core.memory.workflows import input_changes

    def out(inputs, labels=None):
        return AcceptedOutput(id="x", workflow="grpo", accepted_at=1.0, how="h", summary="s", inputs=inputs,
                              input_labels=labels)

    assert input_changes(out({"a": 1, "b": True}, {"a": "Alpha"}), out({"a": 2, "b": False})) == [
        "Alpha: 2 → 1", "b: off → on"]
    assert input_changes(out({"a": 1}), out(None)) == []
    assert input_changes(out({"a": 1, "new": 2}), out({"a": 1})) == []  # not kept with the older one: unknown
    many = input_changes(out({f"k{i}": i for i in range(12)}), out({f"k{i}": None for i in range(12)}), limit=3)
    assert many[-1] == "and 9 more" and len(many) == 4


def test_the_checker_flag_table_says_switch_or_unknown_instead_of_none(app_env, make_app):
    at = make_app("pages/check_args.py").run()
    at.text_area(key="ca_text").input((ROOT / "tests/fixtures/scripts/unresolved.sh").read_text()).run()
    assert not at.exception
    frame = next(d.value for d in at.dataframe if "owner" in d.value.columns)
    values = dict(zip(frame["flag"], frame["value"], strict=True))
    assert values["--colocate"] == "(switch: on)"
    assert values["--num-rollout"] == "(known only when the script runs)"
    assert values["--n-samples-per-prompt"] == "8"
    assert not frame["value"].isna().any() and "None" not in set(frame["value"])


def test_the_alternatives_summary_names_needs_in_words(app_env, make_app):
    from core.memory.profile import Profile
    from core.memory.store import Store

    Store(app_env).save_profile(Profile(model="Qwen3-4B", data_path="/data/train.jsonl", gpus_total=8))
    at = make_app("pages/alternatives.py").run()
    at.checkbox(key="alt_need_backends").check().run()
    at.button(key="alt_accept").click().run()
    assert not at.exception
    [kept] = Store(app_env).accepted("default", "alternatives")
    text = " ".join([kept.summary, *kept.done_items])
    assert "swap_backends" not in text and "swapping the training backend or inference engine" in text


def test_small_tables_are_shown_whole_and_their_cells_literally(app_env, make_app):
    from core.memory.profile import Profile
    from core.memory.store import Store

    Store(app_env).save_profile(Profile(model="Qwen3-4B", data_path="/data/train.jsonl", gpus_total=8))
    at = make_app("pages/grpo.py").run()
    [table] = [t.value for t in at.table]
    flags = {str(v).replace("\\", "") for v in table["flag"]}
    assert "--num-rollout" in flags and "--rollout-batch-size" in flags  # whole cells, not "--num-rollo"
    assert not [d for d in at.dataframe if "flag" in d.value.columns]


def test_show_table_escapes_markdown_in_every_cell(app_env):
    from streamlit.testing.v1 import AppTest

    def page():
        import pandas as pd

        from ui.common import show_table

        show_table(pd.DataFrame([{"key_name": "[x](http://attacker.example/p.png)", "value": None}]))

    at = AppTest.from_function(page).run()
    assert not at.exception
    frame = at.table[0].value
    assert list(frame.columns) == ["key name", "value"]
    assert frame.iloc[0, 0] == "\\[x\\]\\(http\\://attacker\\.example/p\\.png\\)" and frame.iloc[0, 1] == ""


def test_card_headings_are_short_and_their_sources_move_into_the_text():
    from core.knowledge.cards import display_markdown

    body = ("Intro.\n\n## Flags (slime/utils/arguments.py:122-225@624b824a)\n\nText.\n\n### Sub\n\n"
            "```bash\n## not a heading (x.py:1@624b824a)\n```\n## Defaults slime changes (reset_arg, a.py:19-32@624b824a)")
    assert display_markdown(body).splitlines() == [
        "Intro.", "", "#### Flags", "", "Source: `slime/utils/arguments.py:122-225@624b824a`", "", "Text.", "",
        "##### Sub", "", "```bash", "## not a heading (x.py:1@624b824a)", "```", "#### Defaults slime changes", "",
        "Source: `reset_arg, a.py:19-32@624b824a`"]


def test_a_conversion_accepted_with_its_default_paths_is_handed_over_and_said_so(app_env, make_app):
    from core.memory.profile import Profile
    from core.memory.store import Store

    Store(app_env).save_profile(Profile(model="Qwen3-4B", data_path="/data/train.jsonl", gpus_total=8))
    at = make_app("pages/model_checkpoint.py").run()
    at.button(key="mc_accept").click().run()
    at.switch_page(str(ROOT / "pages/grpo.py")).run()
    assert not at.exception
    assert at.text_input(key="grpo_ckpt_hf").value == "/root/Qwen3-4B"
    assert at.text_input(key="grpo_ckpt_ref").value == "/root/Qwen3-4B_torch_dist"
    assert any("From the conversion command you accepted" in c.value for c in at.caption)


def test_ask_section_titles_carry_no_citation():
    from core.knowledge.search import get_index

    sections = [d for d in get_index().docs if d.kind == "section"]
    assert sections and not [d.title for d in sections if "@624b824a" in d.title]
