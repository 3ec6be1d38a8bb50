"""MON013 (MFU from perf/actor_train_tflops against the GPU's peak) and MON014 (time to finish), called directly
on small constructed runs, and on a slime-like run written as event files."""

from __future__ import annotations

import numpy as np
import pytest

from core.monitor.efficiency import duration_text, efficiency_verdicts, eta_verdict, mfu_verdict
from core.monitor.runs import RunData, Series
from core.monitor.wandb.log import WandbRunInfo

N = 30
R = np.arange(N)


def make_run(curves: dict[str, tuple], wall_per_step: float = 100.0, config: dict | None = None) -> RunData:
    run = RunData(name="r", path="/r")
    for tag, (steps, values) in curves.items():
        steps = np.asarray(steps, dtype=np.int64)
        run.series[tag] = Series(tag=tag, steps=steps, values=np.asarray(values, dtype=np.float64),
                                 wall_times=1_750_000_000.0 + wall_per_step * steps.astype(float),
                                 files=np.zeros(len(steps), np.int32))
    if config is not None:
        run.source, run.wandb = "wandb", WandbRunInfo(config=config)
    return run


def perf_run(tflops: float, train_s: float = 40.0, step_s: float = 80.0, **kw) -> RunData:
    return make_run({"perf/actor_train_tflops": (R, np.full(N, tflops)),
                     "perf/actor_train_time": (R, np.full(N, train_s)),
                     "perf/step_time": (R, np.full(N, step_s))}, **kw)


def test_nothing_is_judged_unless_a_gpu_or_a_number_of_rollouts_is_named():
    assert efficiency_verdicts(perf_run(300.0)) == []
    codes = [v.code for v in efficiency_verdicts(perf_run(300.0), gpu="H100")]
    assert codes == ["MON013", "MON014"]


def test_healthy_mfu_is_ok_with_its_numbers():
    run = perf_run(316.6)
    run.series["perf/log_probs_tflops"] = Series(tag="perf/log_probs_tflops", steps=R, values=np.full(N, 98.94),
                                                 wall_times=np.zeros(N), files=np.zeros(N, np.int32))
    v = mfu_verdict(run, "H100-80GB")  # 989.4 TFLOP/s bf16 dense peak
    assert v.evidence["log_probs_mfu_pct"] == 10.0
    assert v.status == "ok"
    assert v.evidence["mfu_pct"] == 32.0 and v.evidence["peak_tflops_bf16"] == 989.4
    assert v.evidence["train_share_of_step_pct"] == 50.0 and v.evidence["mfu_whole_step_pct"] == 16.0
    assert "32% MFU" in v.message and "H100-80GB" in v.message and "train_metric_utils.py:392" in v.source


def test_low_mfu_warns_with_causes_and_the_configs_own_hints():
    config = {"optimizer_cpu_offload": True, "recompute_granularity": {"value": "full"}, "num_rollout": 100}
    v = mfu_verdict(perf_run(60.0, config=config), "H100")
    assert v.status == "warn" and "6% MFU" in v.message and "under 15%" in v.message
    assert v.fix.startswith("Your run's config: --optimizer-cpu-offload is on")
    assert "full recompute is on" in v.fix and "--max-tokens-per-gpu" in v.fix


def test_the_median_of_recent_points_decides_and_bad_points_are_skipped():
    values = np.concatenate([np.full(10, 20.0), np.full(20, 400.0)])  # warm-up steps are slow
    values[-3] = np.nan
    v = mfu_verdict(make_run({"perf/actor_train_tflops": (R, values)}), "H100")
    assert v.status == "ok" and v.evidence["actor_train_tflops_median"] == 400.0 and v.evidence["points"] == 20


def test_more_than_the_peak_points_at_the_wrong_gpu():
    v = mfu_verdict(perf_run(500.0), "A100-80GB")  # 312 TFLOP/s bf16
    assert v.status == "warn" and "more than the GPU can do" in v.message and "fp8" in v.fix


@pytest.mark.parametrize("gpu, curves, words", [
    (None, {"perf/actor_train_tflops": (R, np.full(N, 300.0))}, "Name the GPU type"),
    ("TPU-v9", {"perf/actor_train_tflops": (R, np.full(N, 300.0))}, "No GPU called 'TPU-v9'"),
    ("H100", {"perf/step_time": (R, np.full(N, 80.0))}, "logs no perf/actor_train_tflops"),
], ids=str)
def test_mfu_unknown_says_why(gpu, curves, words):
    v = mfu_verdict(make_run(curves), gpu)
    assert v.status == "unknown" and words in v.message


def test_eta_uses_the_wall_clock_between_rollouts_and_says_what_step_time_leaves_out():
    v = eta_verdict(perf_run(300.0, step_s=80.0, wall_per_step=100.0), 130)
    assert v.status == "ok"
    assert v.evidence["rollouts_logged"] == 30 and v.evidence["rollouts_left"] == 100
    assert v.evidence["seconds_per_rollout"] == 100.0 and v.evidence["eta_s"] == 10_000
    assert v.evidence["step_time_median_s"] == 80.0 and v.evidence["eta"] == "2 h 46 min"
    assert "30 of 130 rollouts" in v.message and "20 s more than perf/step_time" in v.message
    assert v.evidence["finishes_at_utc"] == "2025-06-15 18:41"  # the last point's time + 10,000 s


def test_eta_falls_back_on_step_time_and_on_the_wandb_config():
    run = make_run({"perf/step_time": (R[-2:], np.full(2, 80.0))}, config={"num_rollout": 40})
    v = eta_verdict(run, None)
    assert v.status == "ok" and v.evidence["num_rollout_from"].startswith("the W&B run's config")
    assert v.evidence["pace_from"] == "perf/step_time" and v.evidence["eta_s"] == 10 * 80


def test_eta_counts_rollouts_under_the_train_step_stride():
    steps = R * 4  # --wandb-always-use-train-step: rollout steps are multiples of 4
    run = make_run({"rollout/raw_reward": (steps, np.full(N, 0.5)), "train/grad_norm": (np.arange(4 * N), np.ones(4 * N)),
                    "perf/step_time": (steps, np.full(N, 50.0))}, wall_per_step=10.0)
    v = eta_verdict(run, 50)
    assert v.evidence["rollouts_logged"] == 30 and v.evidence["seconds_per_rollout"] == 40.0


@pytest.mark.parametrize("num_rollout, curves, status, words", [
    (None, {"perf/step_time": (R, np.full(N, 80.0))}, "unknown", "Give the run's --num-rollout"),
    (20, {"perf/step_time": (R, np.full(N, 80.0))}, "ok", "the run has finished"),
    (50, {"train/loss": (R, np.zeros(N))}, "unknown", "No rollout is logged yet"),
    (50, {"rollout/raw_reward": (R[:2], np.zeros(2))}, "unknown", "how long one takes"),
], ids=str)
def test_eta_edges(num_rollout, curves, status, words):
    v = eta_verdict(make_run(curves), num_rollout)
    assert v.status == status and words in v.message


def test_durations_read_as_words():
    assert [duration_text(s) for s in (40, 720, 12_000, 200_000)] == ["40 s", "12 min", "3 h 20 min", "2 d 7 h"]


def write_perf_run(run_dir, tflops: float, rollouts: int = 12):
    from core.monitor.tensorboard.synthetic import file_version_event, scalar_event, write_raw_event_file

    payloads = [file_version_event()]
    for r in range(rollouts):
        wall = 1_750_000_000.0 + 90.0 * r
        payloads += [scalar_event("rollout/raw_reward", 0.3 + 0.01 * r, r, wall),
                     scalar_event("perf/actor_train_tflops", tflops, r, wall),
                     scalar_event("perf/actor_train_time", 30.0, r, wall),
                     scalar_event("perf/step_time", 60.0, r, wall)]
    return write_raw_event_file(run_dir / "events.out.tfevents.1750000000.host.1.0", payloads)


def test_logs_cli_prints_mfu_and_eta_with_gpu_and_num_rollout(tmp_path, capsys):
    import json

    from core.cli import main

    write_perf_run(tmp_path / "run", tflops=50.0)
    main(["logs", str(tmp_path / "run"), "--no-cache"])
    plain = capsys.readouterr().out
    assert "MON013" not in plain and "MON014" not in plain  # unchanged without the flags
    main(["logs", str(tmp_path / "run"), "--no-cache", "--gpu", "H100", "--num-rollout", "100"])
    out = capsys.readouterr().out
    assert "WARN    MON013 Training uses the GPUs' compute: Training runs at about 5% MFU" in out
    assert "adjust: likely causes" in out and "MFU (%) 5.1" in out
    assert "OK      MON014 Time to finish: 12 of 100 rollouts are logged; the 88 left take about 2 h 12 min" in out
    main(["logs", str(tmp_path / "run"), "--no-cache", "--num-rollout", "100", "--format", "json"])
    verdicts = {v["code"]: v for v in json.loads(capsys.readouterr().out)["runs"][0]["verdicts"]}
    assert verdicts["MON013"]["status"] == "unknown" and verdicts["MON014"]["evidence"]["eta_s"] == 88 * 90


def test_logs_cli_refuses_an_unknown_gpu_and_a_bad_number(tmp_path, capsys):
    from core.cli import main

    write_perf_run(tmp_path / "run", tflops=300.0)
    assert main(["logs", str(tmp_path / "run"), "--gpu", "Voodoo3"]) == 2
    assert "logs: --gpu: No GPU called 'Voodoo3'" in capsys.readouterr().err
    assert main(["logs", str(tmp_path / "run"), "--num-rollout", "0"]) == 2
    assert "not between 1" in capsys.readouterr().err


def test_logs_follow_judges_mfu_and_eta_in_its_first_report(tmp_path, monkeypatch, capsys):
    from core.cli import logs_follow, main

    def interrupted(seconds):
        raise KeyboardInterrupt

    monkeypatch.setenv("SLIME_ASSISTANT_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(logs_follow, "_sleep", interrupted)
    write_perf_run(tmp_path / "run", tflops=400.0)
    main(["logs", str(tmp_path / "run"), "--follow", "--gpu", "H100", "--num-rollout", "12"])
    out = capsys.readouterr().out
    assert "OK      MON013 Training uses the GPUs' compute: Training runs at about 40% MFU" in out
    assert "MON014 Time to finish: All 12 rollouts are logged" in out


def test_absurd_numbers_give_words_not_errors():
    run = perf_run(300.0, step_s=80.0, wall_per_step=1e7)  # a rollout every 116 days
    v = eta_verdict(run, 10**9)
    assert v.status == "ok" and "finishes_at_utc" not in v.evidence and v.evidence["eta"].endswith(" h")
    assert mfu_verdict(perf_run(float("inf")), "H100").status == "unknown"  # no finite point
    assert mfu_verdict(perf_run(1e30), "H100").status == "warn"
