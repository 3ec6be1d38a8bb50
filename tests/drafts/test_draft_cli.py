"""`slime-assistant draft`: the same script as the pages, printed or written, never run."""

from __future__ import annotations

import pytest

from core.cli import main
from core.drafts.launch import DraftRequest, draft_launch_script
from core.memory.profile import Profile


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["draft", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("argv,profile,kind,answers", [
    (["grpo", "--model", "Qwen3-4B", "--data", "/data/train.jsonl", "--gpus", "8"],
     Profile(model="Qwen3-4B", data_path="/data/train.jsonl", gpus_total=8), "grpo", {}),
    (["grpo", "--model", "Qwen3-4B", "--data", "/d/t.jsonl", "--gpus", "16", "--nodes", "2", "--split"],
     Profile(model="Qwen3-4B", data_path="/d/t.jsonl", gpus_total=16, gpus_per_node=8), "grpo",
     {"colocate": False}),
    (["async", "--model", "Qwen3-4B", "--data", "/d/t.jsonl", "--gpus", "8", "--staleness", "2",
      "--update-weights-interval", "2"],
     Profile(model="Qwen3-4B", data_path="/d/t.jsonl", gpus_total=8, gpus_per_node=8), "async",
     {"staleness": 2, "update_weights_interval": 2}),
], ids=str)
def test_cli_prints_the_same_script_as_the_page_request(capsys, argv, profile, kind, answers):
    code, out, err = run_cli(capsys, *argv)
    expected = draft_launch_script(DraftRequest.from_profile(profile, kind, **answers))
    assert out == expected.script
    assert code == (0 if expected.ready else 1)
    assert "Nothing was run" in err


def test_cli_writes_output_and_summary_and_refuses_to_overwrite(capsys, tmp_path):
    target, summary = tmp_path / "run.sh", tmp_path / "run.md"
    argv = ["grpo", "--model", "Qwen3-4B", "--data", "/data/my set/$(reboot).jsonl", "--gpus", "1",
            "--output", str(target), "--summary", str(summary)]
    code, out, err = run_cli(capsys, *argv)
    assert out == "" and code in (0, 1)
    assert "--prompt-data '/data/my set/$(reboot).jsonl'" in target.read_text()
    assert "samples per rollout" in summary.read_text()
    code, _, err = run_cli(capsys, *argv)
    assert code == 2 and "exists; pass --force" in err
    code, _, _ = run_cli(capsys, *argv, "--force")
    assert code in (0, 1)


@pytest.mark.parametrize("argv,message", [
    (["grpo", "--model", "Qwen3-4B", "--data", "/d/x.csv", "--gpus", "8"], "jsonl or .parquet"),
    (["grpo", "--model", "Qwen3-4B", "--data", "/d/x.jsonl", "--gpus", "0"], "--gpus must be 1 or more"),
    (["grpo", "--model", "Qwen3-4B", "--data", "/d/x.jsonl", "--gpus", "12", "--nodes", "5"], "equal nodes"),
    (["grpo", "--model", "Qwen3-4B", "--data", "/d/x.jsonl", "--gpus", "8", "--colocate", "--split"],
     "not both"),
    (["async", "--model", "Qwen3-4B", "--data", "/d/x.jsonl", "--gpus", "8", "--staleness", "0"],
     "staleness"),
], ids=str)
def test_cli_rejects_bad_input_with_a_message(capsys, argv, message):
    code, out, err = run_cli(capsys, *argv)
    assert code == 2 and out == ""
    assert message in err


def test_cli_reports_planning_errors_without_a_script(capsys):
    code, out, err = run_cli(capsys, "async", "--model", "Qwen3-4B", "--data", "/d/x.jsonl", "--gpus", "8",
                             "--colocate")
    assert code == 1 and out == ""
    assert "DRF010" in err and "train_async.py:11@624b824a" in err


def test_cli_reports_interval_above_staleness(capsys):
    code, out, err = run_cli(capsys, "async", "--model", "Qwen3-4B", "--data", "/d/x.jsonl", "--gpus", "8",
                             "--staleness", "1", "--update-weights-interval", "3")
    assert code == 1 and "DRF031" in err
    assert "python3 train_async.py" in out  # shown for reference, marked not ready on stderr
    assert "NOT ready" in err


def test_cli_unknown_workflow_is_a_usage_error(capsys):
    code, _, err = run_cli(capsys, "sft", "--model", "x", "--data", "/d/x.jsonl", "--gpus", "1")
    assert code == 2 and "invalid choice" in err


def test_out_of_range_answers_name_the_flag_typed(capsys):
    from core.cli import main

    assert main(["draft", "grpo", "--model", "Qwen3-4B", "--data", "/d/t.jsonl", "--gpus", str(10**30)]) == 2
    err = capsys.readouterr().err
    assert "--gpus" in err and "gpus_total" not in err
