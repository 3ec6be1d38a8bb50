"""A newcomer's first hour (issue 21): an idle server, sources found where the tests look, no stray warnings."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from core.pins import SOURCE_NAMES, pinned_source_dir

ROOT = Path(__file__).resolve().parent.parent


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

    from core.monitor.runs import read_run

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
