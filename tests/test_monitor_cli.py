"""`slime-assistant logs`: per-run tags with step ranges and counts, verdicts with evidence, exit codes."""

from __future__ import annotations

import json

import pytest

from core.cli import main
from core.monitor.synthetic import Scenario, write_slime_like_run


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("logs")
    write_slime_like_run(root / "proj" / "healthy", Scenario(rollouts=30))
    write_slime_like_run(root / "proj" / "broken", Scenario(rollouts=30, reward="flat_zero"))
    return root


def test_json_lists_runs_tags_and_verdicts(two_runs, capsys):
    rc = main(["logs", str(two_runs / "proj"), "--format", "json"])
    payload = json.loads(capsys.readouterr().out)
    runs = {r["name"]: r for r in payload["runs"]}
    assert set(runs) == {"broken", "healthy"}
    healthy = runs["healthy"]
    assert healthy["path"].endswith("proj/healthy")
    assert healthy["tags"]["rollout/raw_reward"] == {"first_step": 0, "last_step": 29, "points": 30}
    assert healthy["tags"]["train/grad_norm"] == {"first_step": 0, "last_step": 59, "points": 60}
    assert list(healthy["tags"])[0] == "rollout/raw_reward"  # reward first
    statuses = {v["code"]: v["status"] for v in healthy["verdicts"]}
    assert statuses["MON001"] == "ok"
    assert all(set(v) >= {"code", "status", "message", "evidence"} for v in healthy["verdicts"])
    assert all(v["status"] in {"ok", "warn", "fail", "unknown"} for r in payload["runs"] for v in r["verdicts"])
    broken = {v["code"]: v for v in runs["broken"]["verdicts"]}
    assert broken["MON002"]["status"] == "fail" and broken["MON002"]["evidence"]["max"] == 0.0
    assert rc == 1  # a verdict failed


def test_text_output_for_one_file(two_runs, capsys):
    f = sorted((two_runs / "proj" / "healthy").glob("*actor*"))[0]
    rc = main(["logs", str(f)])
    out = capsys.readouterr().out
    assert "rollout/raw_reward" in out and "steps 0..29" in out and "30 point(s)" in out
    assert "MON001" in out and "evidence:" in out
    assert rc == 0


def test_missing_path_and_empty_dir(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    rc = main(["logs", str(tmp_path / "nope"), str(tmp_path / "empty")])
    err = capsys.readouterr().err
    assert rc == 2
    assert "no such file or directory" in err and "no event files" in err


def test_json_has_no_nan(tmp_path, capsys):
    write_slime_like_run(tmp_path / "r", Scenario(rollouts=12, nan_reward_at=3))
    main(["logs", str(tmp_path / "r"), "--format", "json"])
    text = capsys.readouterr().out
    assert "NaN" not in text
    run = json.loads(text)["runs"][0]
    assert {v["code"]: v["status"] for v in run["verdicts"]}["MON011"] == "fail"
