"""Following a run's GPU data (issue 20): nvidia-smi CSVs appended while the run is followed are read on from
their saved offsets, MON012 joins the verdicts, and `logs --follow` prints its status change as a change line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.cli import logs_follow, main
from core.monitor.follow import Follower
from core.monitor.gpu.synthetic import Layout, write_nvidia_smi_csv
from core.monitor.sources import find_runs, list_gpu_files
from core.monitor.tensorboard.synthetic import Scenario, write_slime_like_run

SCENARIO = Scenario(rollouts=12, seed=1)
SPLIT = Layout(nodes=2, gpus_per_node=4, training_gpus=4)


def csv_lines(tmp: Path, node: int) -> list[str]:
    """The lines nvidia-smi writes for one node of the scenario (header first)."""
    return write_nvidia_smi_csv(tmp / f"full-node{node}.csv", SPLIT, node, SCENARIO).read_text().splitlines()


@pytest.fixture
def run_and_logs(tmp_path, monkeypatch):
    monkeypatch.setenv("SLIME_ASSISTANT_HOME", str(tmp_path / "home"))
    write_slime_like_run(tmp_path / "run", SCENARIO)
    full = [csv_lines(tmp_path / "full", n) for n in range(2)]
    logs = tmp_path / "gpu-logs"
    logs.mkdir()
    paths = [logs / f"gpu-node{n}.csv" for n in range(2)]
    for p, lines in zip(paths, full, strict=True):
        p.write_text(lines[0] + "\n")  # nvidia-smi has written its header, no sample yet
    return tmp_path / "run", paths, full


def append(path: Path, text: str) -> None:
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(text)


def test_a_followed_csv_is_read_on_from_its_offset_and_mon012_changes(run_and_logs):
    run_dir, paths, full = run_and_logs
    follower = Follower(find_runs(run_dir)[0], gpu_logs=[str(p) for p in paths])
    mon012 = next(v for v in follower.verdicts if v.code == "MON012")
    assert mon012.status == "unknown" and follower.gpu_sample_count() == 0
    half = [len(lines) // 2 for lines in full]
    for p, lines, h in zip(paths, full, half, strict=True):
        append(p, "\n".join(lines[1:h]) + "\n")
    r = follower.refresh()
    assert r.gpu_samples == sum(h - 1 for h in half)  # one sample per line
    [status] = [e for e in r.events if e.kind == "status" and e.code == "MON012"]
    assert status.old == "unknown" and status.new != "unknown"
    offsets = {k: c.state.offset for k, c in follower.gpu_cursors.items()}
    assert sorted(offsets.values()) == sorted(p.stat().st_size for p in paths)
    # A line cut at the end is still being written: it waits for the next refresh.
    rest = "\n".join(full[0][half[0]:]) + "\n"
    append(paths[0], rest[:40])
    r = follower.refresh()
    assert r.gpu_samples == 0 and not [e for e in r.events if e.kind == "status"]
    append(paths[0], rest[40:])
    r = follower.refresh()
    assert r.gpu_samples == len(full[0]) - half[0]
    assert follower.gpu_sample_count() == len(full[0]) - 1 + half[1] - 1
    # Nothing new: the GPU logs are not read again.
    before = dict(follower.gpu_cursors)
    assert follower.refresh().gpu_samples == 0 and follower.gpu_cursors == before


def test_a_gpu_log_that_appears_in_the_run_folder_is_a_change(run_and_logs, tmp_path):
    run_dir, _, _ = run_and_logs
    follower = Follower(find_runs(run_dir)[0], gpu_logs=[])
    assert list_gpu_files(follower.run) == []
    write_nvidia_smi_csv(run_dir / "gpu-node0.csv", SPLIT, 0, SCENARIO)
    r = follower.refresh()
    assert [e.kind for e in r.events if e.kind == "gpu_file"] == ["gpu_file"]
    assert r.gpu_samples > 0 and follower.gpus.data.files[0].kind == "nvidia-smi"


def test_a_follower_without_gpu_logs_has_no_mon012(run_and_logs):
    run_dir, _, _ = run_and_logs
    follower = Follower(find_runs(run_dir)[0])
    assert follower.gpus is None and "MON012" not in {v.code for v in follower.verdicts}


def _script(monkeypatch, steps):
    waits = []

    def fake_sleep(seconds):
        waits.append(seconds)
        if len(waits) > len(steps):
            raise KeyboardInterrupt
        steps[len(waits) - 1]()

    monkeypatch.setattr(logs_follow, "_sleep", fake_sleep)
    return waits


def test_logs_follow_prints_the_gpu_data_and_the_mon012_change(run_and_logs, monkeypatch, capsys):
    run_dir, paths, full = run_and_logs

    def grow(upto: float):
        def step():
            for p, lines in zip(paths, full, strict=True):
                have = len(p.read_text().splitlines())
                append(p, "".join(line + "\n" for line in lines[have:int(len(lines) * upto)]))
        return step

    _script(monkeypatch, [grow(0.5), grow(1.0)])
    code = main(["logs", str(run_dir), "--follow", "--interval", "0.2", "--no-cache",
                 "--gpu-log", str(paths[0]), "--gpu-log", str(paths[1])])
    out, err = capsys.readouterr()
    assert "--gpu-log is not read" not in err
    assert "following 1 run(s)" in err
    lines = out.splitlines()
    checklist = next(i for i, line in enumerate(lines) if "UNKNOWN MON012 GPUs are busy" in line)
    assert any(str(paths[0]) in line and "gpu data" in line for line in lines)  # the files read, listed
    changes = [i for i, line in enumerate(lines) if ": MON012 " in line and "->" in line]
    assert len(changes) == 1 and "MON012 UNKNOWN -> WARN" in lines[changes[0]] and changes[0] > checklist
    assert code == 0


def test_logs_follow_json_has_runs_gpus_and_the_change_object(run_and_logs, monkeypatch, capsys):
    run_dir, paths, full = run_and_logs

    def step():
        for p, lines in zip(paths, full, strict=True):
            append(p, "".join(line + "\n" for line in lines[1:]))

    _script(monkeypatch, [step])
    main(["logs", str(run_dir), "--follow", "--format", "json", "--interval", "0", "--no-cache",
          "--gpu-log", str(paths[0]), "--gpu-log", str(paths[1])])
    lines = capsys.readouterr().out.splitlines()
    doc = json.loads(lines[0])
    assert doc["runs"][0]["gpus"] == [] and "gpu_data" in doc["runs"][0]
    assert next(v for v in doc["runs"][0]["verdicts"] if v["code"] == "MON012")["status"] == "unknown"
    events = [json.loads(line) for line in lines[1:]]
    [change] = [e for e in events if e.get("code") == "MON012"]
    assert change["event"] == "status" and change["from"] == "unknown" and change["to"] == "warn"


def test_logs_follow_names_a_gpu_log_that_cannot_be_read(run_and_logs, monkeypatch, capsys, tmp_path):
    run_dir, _, _ = run_and_logs
    _script(monkeypatch, [])
    code = main(["logs", str(run_dir), "--follow", "--interval", "0", "--no-cache",
                 "--gpu-log", str(tmp_path / "nope.csv")])
    err = capsys.readouterr().err
    assert "--gpu-log " + str(tmp_path / "nope.csv") + ": no such file" in err
    assert err.count("nope.csv") == 1 and code == 2
