"""`slime-assistant logs`: per-run tags with step ranges and counts, verdicts with evidence, exit codes."""

from __future__ import annotations

import json
import os

import pytest

from core.cli import main
from core.monitor.tensorboard.synthetic import (
    Scenario,
    file_version_event,
    scalar_event,
    write_raw_event_file,
    write_slime_like_run,
)


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
    assert "no such file or folder" in err and "no event files" in err


def test_json_has_no_nan(tmp_path, capsys):
    write_slime_like_run(tmp_path / "r", Scenario(rollouts=12, nan_reward_at=3))
    main(["logs", str(tmp_path / "r"), "--format", "json"])
    text = capsys.readouterr().out
    assert "NaN" not in text
    run = json.loads(text)["runs"][0]
    assert {v["code"]: v["status"] for v in run["verdicts"]}["MON011"] == "fail"


def _file(path, data: bytes):
    path.write_bytes(data)
    return path


UNREADABLE = [
    ("random bytes named like an event file", lambda d: _file(d / "events.out.tfevents.1", os.urandom(3000)),
     "not a TensorBoard event file"),
    ("empty event file", lambda d: _file(d / "events.out.tfevents.2", b""), "no scalar value could be read (empty"),
    ("zip file", lambda d: _file(d / "runs.zip", b"PK\x05\x06" + bytes(18)), "not a TensorBoard event file"),
    ("event file with no scalar", lambda d: write_raw_event_file(d / "events.out.tfevents.3", [file_version_event()]),
     "no scalar value could be read"),
]


@pytest.mark.parametrize(("name", "make", "message"), UNREADABLE, ids=[c[0] for c in UNREADABLE])
def test_unreadable_input_exits_2_and_never_says_ok(name, make, message, tmp_path, capsys):
    path = make(tmp_path)
    rc = main(["logs", str(path)])
    captured = capsys.readouterr()
    assert rc == 2
    assert message in captured.err
    assert "OK " not in captured.out  # MON011 no longer calls missing curves finite
    assert "UNKNOWN MON011" in captured.out


def test_unreadable_input_in_json_lists_the_problem(tmp_path, capsys):
    path = _file(tmp_path / "events.out.tfevents.1", os.urandom(3000))
    rc = main(["logs", str(path), "--format", "json"])
    payload = json.loads(capsys.readouterr().out)
    assert rc == 2 and payload["exit_code"] == 2
    assert any("not a TensorBoard event file" in p for p in payload["problems"])
    assert {v["code"]: v["status"] for v in payload["runs"][0]["verdicts"]}["MON011"] == "unknown"


@pytest.mark.parametrize("kind", ["char device", "named pipe"], ids=str)
def test_special_files_are_named_as_such(kind, tmp_path, capsys):
    if kind == "char device":
        path = "/dev/zero"
    else:
        path = str(tmp_path / "events.out.tfevents.pipe")
        os.mkfifo(path)
    rc = main(["logs", path])
    err = capsys.readouterr().err
    assert rc == 2
    assert "not a regular file or directory" in err and "no such file" not in err


def test_dangling_link_is_named_as_such(tmp_path, capsys):
    (tmp_path / "link").symlink_to(tmp_path / "gone")
    assert main(["logs", str(tmp_path / "link")]) == 2
    assert "symbolic link whose target does not exist" in capsys.readouterr().err


def test_non_slime_scalars_exit_3_with_a_note(tmp_path, capsys):
    path = write_raw_event_file(tmp_path / "events.out.tfevents.4",
                                [file_version_event()] + [scalar_event("my/metric", 1.0, s) for s in range(20)])
    rc = main(["logs", str(path)])
    captured = capsys.readouterr()
    assert rc == 3
    assert "my/metric" in captured.out and "no check had enough data" in captured.err
    assert "OK " not in captured.out and "FAIL" not in captured.out


def test_help_documents_every_exit_code(capsys):
    assert main(["logs", "--help"]) == 0
    out = capsys.readouterr().out
    for code, words in ((0, "no check failed"), (1, "a check failed"), (2, "could not be read"),
                        (3, "every verdict is")):
        assert f"  {code}  " in out and words in " ".join(out.split())


def test_logs_uses_the_pages_cache_unless_told_not_to(tmp_path, monkeypatch, capsys):
    """Issue 15 item 15: `logs` keeps parsed logs in the store's bulk cache (the Monitor page's cache)."""
    import diskcache

    from core.memory.store import Store

    home = tmp_path / "home"
    monkeypatch.setenv("SLIME_ASSISTANT_HOME", str(home))
    write_slime_like_run(tmp_path / "run", Scenario(rollouts=12))
    assert main(["logs", str(tmp_path / "run"), "--no-cache", "--format", "json"]) in (0, 1, 3)
    assert not (home / "bulk").exists()
    first = json.loads(capsys.readouterr().out)
    assert main(["logs", str(tmp_path / "run"), "--format", "json"]) in (0, 1, 3)
    second = json.loads(capsys.readouterr().out)
    assert first["runs"] == second["runs"]
    store = Store(home)
    keys = list(store.bulk_cache.iterkeys())
    assert any(str(k).startswith("monitor:run:") for k in keys)
    assert isinstance(store.bulk_cache, diskcache.Cache)
    from core.monitor.tensorboard.run import read_run

    again = read_run(tmp_path / "run", cache=store.bulk_cache)
    assert {f.how for f in again.files} == {"cached"}
