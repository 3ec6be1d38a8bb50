"""Read problems become Findings with a code, a severity and the monitoring card; the checklist text."""

from __future__ import annotations

import numpy as np

from core.monitor.report import checklist_text, read_findings
from core.monitor.tensorboard.run import read_run
from core.monitor.tensorboard.synthetic import (
    Scenario,
    file_version_event,
    frame_record,
    scalar_event,
    write_slime_like_run,
)
from core.monitor.verdicts import run_verdicts


def _codes(findings):
    return {f.code for f in findings}


def test_damage_garbage_empty_and_missing_reward_are_reported(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    good = b"".join(frame_record(p) for p in [file_version_event()] + [scalar_event("train/loss", 1.0, s)
                                                                        for s in range(5)])
    (run_dir / "events.out.tfevents.1.a").write_bytes(good[:-3])  # still being written
    (run_dir / "events.out.tfevents.2.b").write_bytes(np.random.default_rng(1).bytes(3000))
    (run_dir / "events.out.tfevents.3.c").write_bytes(b"")
    findings = read_findings(read_run(run_dir))
    assert {"MON101", "MON102", "MON103", "MON120"} <= _codes(findings)
    assert all(f.card == "monitoring" for f in findings)
    garbage = next(f for f in findings if f.code == "MON101")
    assert "events.out.tfevents.2.b" in garbage.message and garbage.severity.value == "error"


def test_restart_and_recovered_scalars_are_reported(tmp_path):
    write_slime_like_run(tmp_path, Scenario(rollouts=10))
    write_slime_like_run(tmp_path, Scenario(rollouts=5, first_rollout=8, seed=3, wall_start=1_760_000_000.0))
    findings = read_findings(read_run(tmp_path))
    restarts = [f for f in findings if f.code == "MON110"]
    assert any("back to step 8:" in f.message for f in restarts)  # rollout-stepped tags
    assert any("back to step 16:" in f.message for f in restarts)  # train/* at 8 x 2 steps per rollout


def test_checklist_text_lists_every_verdict(tmp_path):
    write_slime_like_run(tmp_path, Scenario(rollouts=12, reward="flat_zero"))
    run = read_run(tmp_path)
    text = checklist_text([(run, run_verdicts(run))])
    assert text.count("[") >= 11 and "[FAIL] MON002" in text and "adjust:" in text


def test_checklist_summary_is_worded_for_people(tmp_path):
    """The Monitor's status line (issue 28, first hour 9): no "0 item(s) to look at"."""
    from core.memory.workflows import checklist_summary
    from core.monitor.runs import RunData
    from core.monitor.verdicts import Verdict

    def verdicts(*statuses: str) -> list[Verdict]:
        return [Verdict(code=f"MON{i:03d}", title="t", status=s, message="m") for i, s in enumerate(statuses, 1)]

    write_slime_like_run(tmp_path / "run", Scenario(rollouts=12, seed=1))
    run = read_run(tmp_path / "run", name="uploaded-run")
    empty = RunData(name="other", path="/x")
    assert checklist_summary([(run, verdicts("ok", "unknown"))]) == (
        'Run "uploaded-run": every check that could judge it is fine')
    assert checklist_summary([(run, verdicts("warn", "ok"))]) == 'Run "uploaded-run": 1 check warns'
    assert checklist_summary([(run, verdicts("fail", "warn", "warn"))]) == 'Run "uploaded-run": 1 check fails and 2 warn'
    assert checklist_summary([(run, verdicts("fail", "fail")), (empty, verdicts("unknown"))]) == (
        'Runs "uploaded-run", "other": 2 checks fail and 1 of them has too little data to judge')
    for text in (checklist_summary([(run, verdicts("ok"))]), checklist_summary([(empty, [])])):
        assert "item(s)" not in text and "0 " not in text
