"""Hostile W&B run files (issue 22): deeply nested values, oversized records, many files."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("wandb")

from core.cli import main  # noqa: E402
from core.monitor.wandb.run import read_wandb_run  # noqa: E402
from core.monitor.wandb.synthetic import frame_wandb_records, history_record, metric_record  # noqa: E402


def _config_record(config: dict[str, str]) -> bytes:
    from core.monitor.wandb.proto import record_class

    record = record_class()()
    for key, text in config.items():
        item = record.config.update.add()
        item.key = key
        item.value_json = text
    return record.SerializeToString()


def _summary_record(summary: dict[str, str]) -> bytes:
    from core.monitor.wandb.proto import record_class

    record = record_class()()
    for key, text in summary.items():
        item = record.summary.update.add()
        item.key = key
        item.value_json = text
    return record.SerializeToString()


def _run_record(config: dict[str, str]) -> bytes:
    from core.monitor.wandb.proto import record_class

    record = record_class()()
    record.run.run_id = "deep"
    for key, text in config.items():
        item = record.run.config.update.add()
        item.key = key
        item.value_json = text
    return record.SerializeToString()


def _rows(n: int = 5) -> list[bytes]:
    out = [metric_record("rollout/*", "rollout/step")]
    out += [history_record({"rollout/raw_reward": 0.1 * r, "rollout/step": r, "_timestamp": 1e9 + r})
            for r in range(n)]
    return out


@pytest.mark.parametrize("levels", [500, 1000, 100_000])
def test_deeply_nested_values_are_reported_and_skipped(tmp_path, levels, monkeypatch, capsys):
    deep = "[" * levels + "]" * levels
    records = [_run_record({"lr": "1e-06", "deep_run": deep}), _config_record({"deep_cfg": deep, "ok": "3"}),
               *_rows(), _summary_record({"deep_sum": deep, "fine": "1"})]
    path = tmp_path / "wandb" / "offline-run-20250101_000000-deep" / "run-deep.wandb"
    path.parent.mkdir(parents=True)
    path.write_bytes(frame_wandb_records(records))
    run = read_wandb_run([path])
    assert run.series["rollout/raw_reward"].values.tolist() == pytest.approx([0.0, 0.1, 0.2, 0.3, 0.4])
    info = run.wandb
    assert info.config["lr"] == 1e-06 and info.config["ok"] == 3 and "deep_cfg" not in info.config
    assert info.summary["fine"] == 1 and "deep_sum" not in info.summary
    assert sorted(info.skipped_values) == ["deep_cfg", "deep_run", "deep_sum"]
    kinds = [d.kind for d in run.files[0].damage]
    assert kinds.count("skipped_value") == 3
    # the CLI, cache on (the cache stores the run: it must not fail either), then JSON
    monkeypatch.setenv("SLIME_ASSISTANT_HOME", str(tmp_path / "home"))
    for _ in range(2):
        code = main(["logs", str(tmp_path / "wandb")])
        out, err = capsys.readouterr()
        assert "Traceback" not in out + err and "RecursionError" not in out + err
        assert "nested more than 64 levels deep" in out and "'deep_cfg'" in out
        assert code in (0, 3)
    assert main(["logs", str(tmp_path / "wandb"), "--format", "json"]) in (0, 3)
    payload = json.loads(capsys.readouterr().out)
    assert any(d["kind"] == "skipped_value" for f in payload["runs"][0]["files"] for d in f["damage"])


def test_brackets_inside_strings_are_not_nesting(tmp_path):
    text = json.dumps({"prompt": "[" * 500})
    path = tmp_path / "run-s.wandb"
    path.write_bytes(frame_wandb_records([_config_record({"template": text}), *_rows(2)]))
    run = read_wandb_run([path])
    assert run.wandb.config["template"] == {"prompt": "[" * 500} and not run.wandb.skipped_values


def test_run_and_file_limits_say_what_they_left_out(tmp_path, monkeypatch):
    """The run limit holds inside one folder, and files past a run's limit are named in a note (issue 22)."""
    from core.monitor.sources import find_runs
    from core.monitor.wandb import run as wandb_run

    monkeypatch.setattr(wandb_run, "MAX_RUNS", 5)
    monkeypatch.setattr(wandb_run, "MAX_FILES_PER_RUN", 3)
    flat = tmp_path / "flat"
    flat.mkdir()
    for i in range(40):
        (flat / f"run-r{i:03d}.wandb").write_bytes(frame_wandb_records([]))
    notes: list[str] = []
    found = find_runs(flat, notes=notes)
    assert len(found) == 5
    assert any("stopped at 5 W&B runs" in n and "35 run file(s)" in n for n in notes)
    same = tmp_path / "same" / "wandb"
    for i in range(5):
        d = same / f"offline-run-20250101_00000{i}-one"
        d.mkdir(parents=True)
        (d / "run-one.wandb").write_bytes(frame_wandb_records([]))
    notes = []
    [run] = find_runs(tmp_path / "same", notes=notes)
    assert len(run.files) == 3
    assert any("more than 3 run files" in n and "2 more were left out" in n for n in notes)
