"""`logs DIR --follow`: the verdicts once, then one line (or JSON object) per change, until interrupted."""

from __future__ import annotations

import json

import pytest

from core.cli import logs_follow, main
from core.monitor.tensorboard.synthetic import file_version_event, frame_record, scalar_event


def _rows(lo: int, hi: int, reward=lambda r: 0.1 + 0.01 * r) -> bytes:
    out = b""
    for r in range(lo, hi):
        out += frame_record(scalar_event("rollout/raw_reward", reward(r), r, wall_time=1e9 + r))
        out += frame_record(scalar_event("train/grad_norm", 1.0, r, wall_time=1e9 + r))
    return out


@pytest.fixture
def growing(tmp_path, monkeypatch):
    monkeypatch.setenv("SLIME_ASSISTANT_HOME", str(tmp_path / "home"))
    run = tmp_path / "run"
    run.mkdir()
    path = run / "events.out.tfevents.1.host"
    path.write_bytes(frame_record(file_version_event()) + _rows(0, 30))
    return run, path


def _script(monkeypatch, steps):
    """Replace the wait between refreshes: each wait runs the next step; after the last, Ctrl-C."""
    waits = []

    def fake_sleep(seconds):
        waits.append(seconds)
        if len(waits) > len(steps):
            raise KeyboardInterrupt
        steps[len(waits) - 1]()

    monkeypatch.setattr(logs_follow, "_sleep", fake_sleep)
    return waits


def test_follow_prints_the_checklist_then_one_line_per_change(growing, monkeypatch, capsys):
    run, path = growing

    def append(data):
        def step():
            with open(path, "ab") as fh:
                fh.write(data)
        return step

    steps = [append(_rows(30, 40)),  # more of the same: no line
             append(_rows(40, 60, reward=lambda r: float("nan"))),  # the reward turns NaN: a status line
             append(_rows(20, 25)),  # a restart from step 20
             lambda: None, lambda: None]  # nothing new: stalled after 2 intervals
    waits = _script(monkeypatch, steps)
    code = main(["logs", str(run), "--follow", "--interval", "0.5", "--stall-after", "2"])
    out, err = capsys.readouterr()
    assert waits[0] == 0.5
    assert "checklist:" in out and "following 1 run(s)" in err
    lines = out.split("checklist:")[1].splitlines()
    changes = [line for line in lines if ": MON" in line and "->" in line]
    assert [c.split(": ", 1)[1].split(":")[0] for c in changes] == ["MON011 OK -> FAIL", "MON011 FAIL -> OK"]
    assert any(" restart: " in line and "went back to step 20" in line for line in lines)
    stalled = [line for line in lines if " stalled: " in line]
    assert len(stalled) == 1 and "no new step for 2 refreshes" in stalled[0]
    assert code == 0  # what logs says of the run as it is now: the restart replaced the NaN values


def test_follow_json_is_one_object_per_line(growing, monkeypatch, capsys):
    run, path = growing

    def step():
        with open(path, "ab") as fh:
            fh.write(_rows(10, 15))
    _script(monkeypatch, [step])
    code = main(["logs", str(run), "--follow", "--format", "json", "--interval", "0"])
    lines = capsys.readouterr().out.splitlines()
    first = json.loads(lines[0])
    assert first["runs"][0]["path"] == str(run) and first["exit_code"] == code
    events = [json.loads(line) for line in lines[1:]]
    assert events and all(e["run"] and e["time"] for e in events)
    assert "restart" in [e["event"] for e in events]


def test_follow_is_safe_on_a_file_that_grows_with_junk(growing, monkeypatch, capsys):
    run, path = growing

    def junk():
        with open(path, "ab") as fh:
            fh.write(b"\xff\xfe not a record \x00" * 500)
    _script(monkeypatch, [junk, junk, junk])
    code = main(["logs", str(run), "--follow", "--interval", "0"])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err and code in (0, 1, 2, 3)


def test_follow_with_nothing_to_read_stops_at_once(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SLIME_ASSISTANT_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(logs_follow, "_sleep", lambda s: (_ for _ in ()).throw(AssertionError("waited")))
    assert main(["logs", str(tmp_path / "missing"), "--follow"]) == 2
    assert "no such file or folder" in capsys.readouterr().err


def test_damage_kept_per_file_is_bounded(tmp_path):
    from core.monitor import follow
    from core.monitor.scan import Damage

    many = [Damage(kind="bad_length", offset=i * 10, length=5, message="x") for i in range(500)]
    kept = follow._bounded(many)
    assert len(kept) == follow.MAX_DAMAGE_KEPT and kept[-1].kind == "more"
    assert kept[-1].message.startswith("301 more damaged stretches")
    again = follow._bounded(kept + many[:50])
    assert len(again) == follow.MAX_DAMAGE_KEPT and again[-1].message.startswith("351 more")
