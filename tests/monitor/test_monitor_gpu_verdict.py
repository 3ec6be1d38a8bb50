"""MON012 "GPUs are busy" on real-format GPU logs beside slime-like runs; `logs --gpu-log` and `runs[].gpus`."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from core.cli import main
from core.monitor.gpu import read_gpu_data, read_run_gpus
from core.monitor.gpu.judge import THRESHOLDS, check_gpus_busy
from core.monitor.gpu.phases import Phases, assign_roles
from core.monitor.gpu.synthetic import Layout, write_job_log, write_nvidia_smi_csv, write_wandb_stats_file
from core.monitor.runs import RunData
from core.monitor.sources import find_runs, open_run
from core.monitor.tensorboard.synthetic import Scenario, write_slime_like_run
from core.monitor.wandb.log import WandbRunInfo

SCENARIO = Scenario(rollouts=12, seed=1)
SPLIT = Layout(nodes=2, gpus_per_node=4, training_gpus=4)


def tb_run(root: Path, layout: Layout | None = None, *, csv: bool = True, job_log: bool = False,
           offset: float = 0.0) -> RunData:
    run_dir = root / "run"
    write_slime_like_run(run_dir, SCENARIO)
    if csv:
        for node in range((layout or SPLIT).nodes):
            write_nvidia_smi_csv(run_dir / f"gpu-node{node}.csv", layout or SPLIT, node, SCENARIO,
                                 utc_offset_hours=offset)
    if job_log:
        write_job_log(run_dir / "job.log", layout or SPLIT, SCENARIO)
    return open_run(find_runs(run_dir)[0])


def test_disaggregated_rollout_gpus_waiting_while_training(tmp_path):
    g = read_run_gpus(tb_run(tmp_path))
    roles = {(s.node, s.gpu): s.role for s in g.data.series}
    assert roles == {**{("node0", i): "training" for i in range(4)}, **{("node1", i): "rollout" for i in range(4)}}
    v = g.verdict()
    assert v.code == "MON012" and v.status == "warn"
    assert v.evidence["rollout:utilization_median"] < THRESHOLDS["busy_median_pct"]
    assert v.evidence["rollout:idle_fraction"] > 0.5 and v.evidence["training:utilization_median"] > 80
    assert v.evidence["rollout_gpus_while_training_median"] == 0.0
    assert v.evidence["gpus_that_stay_idle"] == []
    assert v.evidence["layout"].startswith("disaggregated")
    assert "train_async.py" in v.fix and "--colocate" in v.fix
    assert {"async-training", "gpu-placement"} <= set(v.cards)
    assert "rules of thumb" in v.evidence["thresholds_from"] and "utilization.gpu" in v.evidence["thresholds_from"]


def test_a_gpu_that_never_works_fails(tmp_path):
    layout = Layout(nodes=2, gpus_per_node=4, training_gpus=4, idle=[(1, 3)])
    v = read_run_gpus(tb_run(tmp_path, layout)).verdict()
    assert v.status == "fail" and v.evidence["gpus_that_stay_idle"] == ["node1 GPU 3"]
    assert "reserved but unused" in v.fix and "--rollout-num-gpus" in v.fix


def test_colocated_gpus_busy_in_both_phases_are_ok(tmp_path):
    layout = Layout(nodes=1, gpus_per_node=4, colocated=True)
    g = read_run_gpus(tb_run(tmp_path, layout))
    assert {s.role for s in g.data.series} == {"colocated"}
    assert all("busy in both phases" in s.role_how for s in g.data.series)
    v = g.verdict()
    assert v.status == "ok", v.message
    assert v.evidence["colocated:utilization_median"] >= 75 and "no GPU stays idle" in v.message
    assert v.evidence["layout"].startswith("colocated")


def test_colocate_in_the_config_decides_the_role():
    run = RunData(name="r", path="/r", source="wandb", wandb=WandbRunInfo(config={"colocate": True}))
    data = read_gpu_data([])
    from core.monitor.gpu.models import GpuSeries

    data.series = [GpuSeries(source="wandb", node="n", gpu=0, times=np.arange(20.0), utilization=np.full(20, 90.0))]
    assign_roles(data, run, Phases())
    assert data.series[0].role == "colocated" and "--colocate" in data.series[0].role_how


def test_placement_decides_without_phases():
    from core.monitor.gpu.models import GpuSeries

    config = {"colocate": False, "actor_num_nodes": 1, "actor_num_gpus_per_node": 2, "rollout_num_gpus": 2}
    run = RunData(name="r", path="/r", source="wandb", wandb=WandbRunInfo(config=config))
    data = read_gpu_data([])
    data.series = [GpuSeries(source="wandb", node="n", gpu=i, times=np.arange(20.0),
                             utilization=np.full(20, 90.0)) for i in range(4)]
    assign_roles(data, run, Phases())
    assert [s.role for s in data.series] == ["training", "training", "rollout", "rollout"]
    assert "placement" in data.series[0].role_how


def test_local_time_of_the_nodes_is_put_on_the_run_clock(tmp_path):
    g = read_run_gpus(tb_run(tmp_path, offset=5.5, job_log=False))
    assert any("nvidia-smi times" in n and "moved by -5.5 h" in n for n in g.data.notes), g.data.notes
    assert {s.role for s in g.data.series} == {"training", "rollout"}


def test_no_gpu_data_is_unknown_and_says_how_to_record(tmp_path):
    run = tb_run(tmp_path, csv=False)
    g = read_run_gpus(run)
    v = g.verdict()
    assert v.status == "unknown"
    assert "W&B system metrics" in v.message and "nvidia-smi CSV logs" in v.message and "Memory-Usage" in v.message
    assert str(tmp_path / "run") in v.message and "x_disable_stats" in v.message
    assert v.commands and v.commands[0].startswith("nvidia-smi --query-gpu=timestamp,index,utilization.gpu,")
    assert "--format=csv -l 5" in v.commands[0]


def test_memory_only_is_unknown_with_the_memory_evidence(tmp_path):
    run = tb_run(tmp_path, csv=False, job_log=True)
    g = read_run_gpus(run)
    assert g.phases.update_exact and len(g.phases.update) == SCENARIO.rollouts
    v = g.verdict()
    assert v.status == "unknown" and v.message.startswith("slime's Memory-Usage lines give each rank's memory")
    assert v.evidence["training:memory_max_fraction"] == pytest.approx(58.33 / 79.65, abs=0.01)


def test_memory_near_full_on_training_gpus_warns():
    from core.monitor.gpu.models import GpuData, GpuSeries

    n = 40
    full = GpuSeries(source="nvidia-smi", node="n", gpu=0, role="training", times=np.arange(n, dtype=float),
                     utilization=np.full(n, 95.0), memory_used=np.full(n, 80000.0), memory_total=np.full(n, 81559.0))
    v = check_gpus_busy(GpuData(series=[full]))
    assert v.status == "warn" and "--max-tokens-per-gpu" in v.fix and "gpu-memory" in v.cards


# -- the command line --------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def beside(tmp_path_factory):
    """A run directory with no GPU logs in it, and the logs of its two nodes in another folder."""
    root = tmp_path_factory.mktemp("beside")
    write_slime_like_run(root / "run", SCENARIO)
    logs = root / "gpu-logs"
    write_nvidia_smi_csv(logs / "gpu-node0.csv", SPLIT, 0, SCENARIO, units=False)
    write_nvidia_smi_csv(logs / "gpu-node1.csv", SPLIT, 1, SCENARIO, header=False, units=False)
    write_job_log(logs / "job.txt", SPLIT, SCENARIO)
    return root


def test_cli_gpu_logs_json(beside, capsys):
    logs = beside / "gpu-logs"
    rc = main(["logs", str(beside / "run"), "--format", "json", "--no-cache", "--gpu-log", str(logs / "gpu-node0.csv"),
               "--gpu-log", str(logs / "gpu-node1.csv"), "--gpu-log", str(logs / "job.txt")])
    payload = json.loads(capsys.readouterr().out)
    run = payload["runs"][0]
    gpus = run["gpus"]
    assert len(gpus) == 12  # 8 GPUs from nvidia-smi, 4 ranks from the job log
    first = gpus[0]
    assert {"source", "node", "gpu", "samples", "utilization_median", "utilization_p10", "utilization_p90",
            "memory_max_mib", "role", "idle_fraction"} <= set(first)
    assert first["source"] == "nvidia-smi" and first["node"] == "node0" and first["samples"] > 100
    assert first["utilization_p10"] <= first["utilization_median"] <= first["utilization_p90"]
    ranks = [g for g in gpus if g["source"] == "slime-log"]
    assert len(ranks) == 4 and all(g["utilization_median"] is None and g["memory_max_mib"] > 50_000 for g in ranks)
    mon012 = next(v for v in run["verdicts"] if v["code"] == "MON012")
    assert mon012["status"] == "warn"
    assert [f["kind"] for f in run["gpu_data"]["files"]] == ["nvidia-smi", "nvidia-smi", "slime-log"]
    assert rc == 0  # a warning is not a failure


def test_cli_finds_logs_in_the_run_directory_and_text_lists_gpus(tmp_path, capsys):
    tb_run(tmp_path)
    main(["logs", str(tmp_path / "run"), "--no-cache"])
    out = capsys.readouterr().out
    assert "WARN    MON012 GPUs are busy" in out
    assert "gpu data: " + str(tmp_path / "run" / "gpu-node0.csv") + ": nvidia-smi CSV log, 4 GPU(s)" in out
    assert "node1 GPU 2 [nvidia-smi CSV log, rollout]" in out


def test_cli_gpu_log_that_cannot_be_read_is_a_problem(beside, capsys, tmp_path):
    empty = tmp_path / "empty.csv"
    empty.write_text("", encoding="utf-8")
    rc = main(["logs", str(beside / "run"), "--no-cache", "--format", "json", "--gpu-log", str(tmp_path / "nope.csv"),
               "--gpu-log", "/dev/null", "--gpu-log", str(empty)])
    payload = json.loads(capsys.readouterr().out)
    assert rc == 2
    assert any("nope.csv: no such file" in p for p in payload["problems"])
    assert any("/dev/null" in p and "not a regular file" in p for p in payload["problems"])
    files = payload["runs"][0]["gpu_data"]["files"]
    assert files[0]["kind"] == "none" and "no GPU samples found" in files[0]["notes"][0]


@pytest.mark.wandb_sdk
def test_wandb_run_with_system_metrics_of_two_nodes(tmp_path, capsys):
    pytest.importorskip("wandb")
    from core.monitor.wandb.synthetic import write_wandb_run

    write_wandb_run(tmp_path, SCENARIO, run_id="gpurun")
    for node in range(2):  # the system metrics of the writers on the two nodes (no GPU on this machine)
        write_wandb_stats_file(tmp_path, SPLIT, node, run_id="gpurun", scenario=SCENARIO, seq=node + 1)
    main(["logs", str(tmp_path / "wandb"), "--format", "json", "--no-cache"])
    payload = json.loads(capsys.readouterr().out)
    run = payload["runs"][0]
    assert {(g["source"], g["node"]) for g in run["gpus"]} == {("wandb", "node-0"), ("wandb", "node-1")}
    assert len(run["gpus"]) == 8
    roles = {g["node"]: g["role"] for g in run["gpus"]}
    assert roles == {"node-0": "training", "node-1": "rollout"}
    hosts = {h["node"]: h for h in run["gpu_data"]["hosts"]}
    assert hosts["node-0"]["cpu_percent_median"] == 12.5 and hosts["node-1"]["host_memory_percent_max"] == 9.5
    assert next(v for v in run["verdicts"] if v["code"] == "MON012")["status"] == "warn"


def test_gpu_logs_of_another_day_are_named(tmp_path):
    run = tb_run(tmp_path, csv=False)
    other = Scenario(rollouts=12, seed=1, wall_start=SCENARIO.wall_start + 3 * 86400)
    write_nvidia_smi_csv(tmp_path / "run" / "gpu-node0.csv", SPLIT, 0, other)
    g = read_run_gpus(run)
    assert any("hardly overlap the run" in n for n in g.data.notes), g.data.notes
    assert {s.role for s in g.data.series} == {"unknown"}


# -- MON010 and MON012 agree (issue 28, hostile item 11) -----------------------------------------------------
NO_GPU_METRIC = "slime logs no GPU-utilization metric"


def test_with_gpu_data_mon010_refers_to_mon012(tmp_path):
    from core.monitor.verdicts import run_verdicts, with_gpu_verdict

    run = tb_run(tmp_path)
    gpu = read_run_gpus(run).verdict()
    assert gpu.status != "unknown"
    alone = next(v for v in run_verdicts(run) if v.code == "MON010")
    assert NO_GPU_METRIC in alone.message and alone.commands  # what MON010 says with no GPU data
    joined = with_gpu_verdict(run_verdicts(run), gpu)
    assert [v.code for v in joined][-2:] == ["MON011", "MON012"]
    mon010 = next(v for v in joined if v.code == "MON010")
    assert NO_GPU_METRIC not in mon010.message and not mon010.commands
    assert mon010.message.startswith("GPU utilization from the nvidia-smi CSV log is judged in MON012 (GPUs are busy)")
    assert mon010.evidence == alone.evidence and mon010.status == alone.status  # the perf/* numbers stay


def test_without_gpu_utilization_mon010_keeps_its_message(tmp_path):
    from core.monitor.verdicts import run_verdicts, with_gpu_verdict

    run = tb_run(tmp_path, csv=False, job_log=True)  # Memory-Usage lines: memory, not utilization
    gpu = read_run_gpus(run).verdict()
    assert gpu.status == "unknown"
    mon010 = next(v for v in with_gpu_verdict(run_verdicts(run), gpu) if v.code == "MON010")
    assert NO_GPU_METRIC in mon010.message and mon010.commands


def test_cli_with_gpu_log_mon010_does_not_contradict_mon012(beside, capsys):
    logs = beside / "gpu-logs"
    main(["logs", str(beside / "run"), "--no-cache", "--gpu-log", str(logs / "gpu-node0.csv"),
          "--gpu-log", str(logs / "gpu-node1.csv")])
    out = capsys.readouterr().out
    [line] = [s for s in out.splitlines() if "MON010" in s]
    assert NO_GPU_METRIC not in line and "is judged in MON012 (GPUs are busy)" in line
    assert "WARN    MON012 GPUs are busy" in out
    main(["logs", str(beside / "run"), "--no-cache", "--format", "json", "--gpu-log", str(logs / "gpu-node0.csv")])
    verdicts = json.loads(capsys.readouterr().out)["runs"][0]["verdicts"]
    assert "is judged in MON012" in next(v for v in verdicts if v["code"] == "MON010")["message"]
    main(["logs", str(beside / "run"), "--no-cache"])  # no GPU log: MON010 says how to record one
    assert NO_GPU_METRIC in capsys.readouterr().out


def test_follow_mon010_refers_to_mon012_once_gpu_data_arrives(tmp_path):
    from core.monitor.follow import Follower

    run = tb_run(tmp_path)
    follower = Follower(find_runs(Path(run.path))[0], gpu_logs=[])
    mon010 = next(v for v in follower.verdicts if v.code == "MON010")
    assert "is judged in MON012" in mon010.message
