"""Each checklist rule called directly on small constructed runs: ok, warn, fail and unknown."""

from __future__ import annotations

import numpy as np
import pytest

from core.knowledge.cards import get_card
from core.monitor import verdicts as v
from core.monitor.runs import RunData, Series

RNG = np.random.default_rng(7)


def make_run(curves: dict[str, tuple]) -> RunData:
    run = RunData(name="r", path="/r")
    for tag, (steps, values) in curves.items():
        steps = np.asarray(steps, dtype=np.int64)
        run.series[tag] = Series(tag=tag, steps=steps, values=np.asarray(values, dtype=np.float64),
                                 wall_times=1_750_000_000.0 + steps.astype(float), files=np.zeros(len(steps), np.int32))
    return run


N = 60
R = np.arange(N)
T = np.arange(2 * N)
noise = RNG.normal(0, 0.03, N)

CASES = [
    ("reward rising ok", v.check_reward_rising, {"rollout/raw_reward": (R, 0.2 + 0.5 * R / N + noise)}, "ok"),
    ("reward noisy flat warns", v.check_reward_rising, {"rollout/raw_reward": (R, 0.4 + noise)}, "warn"),
    ("reward falling fails", v.check_reward_rising, {"rollout/raw_reward": (R, 0.7 - 0.5 * R / N + noise)}, "fail"),
    ("reward too short", v.check_reward_rising, {"rollout/raw_reward": (R[:5], noise[:5])}, "unknown"),
    ("no reward tag", v.check_reward_rising, {"train/loss": (R, noise)}, "unknown"),
    ("one spike does not make a trend", v.check_reward_rising,
     {"rollout/raw_reward": (R, np.where(R == N // 2, 50.0, 0.4 + noise))}, "warn"),
    ("reward zero from start fails", v.check_reward_flat_zero, {"rollout/raw_reward": (R, np.zeros(N))}, "fail"),
    ("reward constant warns", v.check_reward_flat_zero, {"rollout/raw_reward": (R, np.ones(N))}, "warn"),
    ("reward varies ok", v.check_reward_flat_zero, {"rollout/raw_reward": (R, 0.4 + noise)}, "ok"),
    ("kl steady ok", v.check_kl_growth, {"train/kl_loss": (T, 0.002 + np.abs(RNG.normal(0, 3e-4, 2 * N)))}, "ok"),
    ("kl 5x warns", v.check_kl_growth, {"train/kl_loss": (T, 0.002 * (1 + 4.5 * T / (2 * N)))}, "warn"),
    ("kl exploding fails", v.check_kl_growth, {"train/kl_loss": (T, 0.001 * np.exp(5 * T / (2 * N)))}, "fail"),
    ("ppo_kl used without kl_loss", v.check_kl_growth, {"train/ppo_kl": (T, 0.001 * np.exp(5 * T / (2 * N)))}, "fail"),
    ("logprob diff growing fails", v.check_logprob_diff,
     {"train/train_rollout_logprob_abs_diff": (T, 0.01 + 0.2 * T / (2 * N))}, "fail"),
    ("entropy collapse fails", v.check_entropy, {"train/entropy_loss": (T, 0.6 * np.exp(-6 * T / (2 * N)) + 0.001)},
     "fail"),
    ("entropy gentle decline ok", v.check_entropy, {"train/entropy_loss": (T, 0.55 - 0.1 * T / (2 * N))}, "ok"),
    ("truncation climbing fails", v.check_length_and_truncation,
     {"rollout/truncated_ratio": (R, np.minimum(0.9, 0.02 + 0.8 * R / N))}, "fail"),
    ("length collapse warns", v.check_length_and_truncation,
     {"rollout/response_len/mean": (R, 1200 - 1000 * R / N)}, "warn"),
    ("grad spike warns", v.check_grad_spikes,
     {"train/grad_norm": (T, np.where(T == 77, 30.0, 0.3 + np.abs(RNG.normal(0, 0.02, 2 * N))))}, "warn"),
    ("grad nan fails", v.check_grad_spikes, {"train/grad_norm": (T, np.where(T == 5, np.nan, 0.3))}, "fail"),
    ("grad steady ok", v.check_grad_spikes, {"train/grad_norm": (T, 0.3 + np.abs(RNG.normal(0, 0.02, 2 * N)))}, "ok"),
    ("eval stalled warns", v.check_eval_tracks_training,
     {"rollout/raw_reward": (R, 0.2 + 0.5 * R / N + noise), "eval/aime": (R[9::10], [0.3, 0.31, 0.29, 0.3, 0.3, 0.29])},
     "warn"),
    ("eval follows ok", v.check_eval_tracks_training,
     {"rollout/raw_reward": (R, 0.2 + 0.5 * R / N + noise), "eval/aime": (R[9::10], [0.2, 0.3, 0.35, 0.4, 0.5, 0.55])},
     "ok"),
    ("no eval", v.check_eval_tracks_training, {"rollout/raw_reward": (R, noise)}, "unknown"),
    ("rollout dominates warns", v.check_time_split, {"perf/wait_time_ratio": (R, np.full(N, 0.8))}, "warn"),
    ("training dominates warns", v.check_time_split,
     {"perf/rollout_time": (R, np.full(N, 30.0)), "perf/train_time": (R, np.full(N, 100.0))}, "warn"),
    ("balanced ok", v.check_time_split, {"perf/wait_time_ratio": (R, np.full(N, 0.3)),
                                         "perf/rollout_time": (R, np.full(N, 30.0)),
                                         "perf/train_time": (R, np.full(N, 40.0))}, "ok"),
    ("no perf", v.check_time_split, {"train/loss": (R, noise)}, "unknown"),
    ("nan loss fails", v.check_non_finite, {"train/loss": (R, np.where(R == 3, np.inf, 1.0))}, "fail"),
    ("finite loss ok", v.check_non_finite, {"train/loss": (R, noise)}, "ok"),
    ("no checked curve is unknown", v.check_non_finite, {"perf/train_time": (R, np.full(N, 40.0))}, "unknown"),
    ("empty checked curve is unknown", v.check_non_finite, {"train/loss": ([], [])}, "unknown"),
]


@pytest.mark.parametrize(("name", "check", "curves", "status"), CASES, ids=[c[0] for c in CASES])
def test_check_status(name, check, curves, status):
    verdict = check(make_run(curves))
    assert verdict.status == status, verdict.message
    assert verdict.cards and all(get_card(c) for c in verdict.cards)
    if status in ("warn", "fail"):
        assert verdict.fix and verdict.evidence


def test_evidence_carries_values_and_steps():
    verdict = v.check_reward_rising(make_run({"rollout/raw_reward": (R, 0.2 + 0.5 * R / N + noise)}))
    assert verdict.evidence["first_step"] == 0 and verdict.evidence["last_step"] == N - 1
    assert verdict.evidence["last_10pct_mean"] > verdict.evidence["first_10pct_mean"]
    assert verdict.evidence["mann_kendall_z"] > 1.96
    assert verdict.source.startswith("slime/ray/rollout.py:")


def test_normalized_reward_fallback_is_explained():
    verdict = v.check_reward_rising(make_run({"rollout/rewards": (R, noise)}))
    assert "normalized" in verdict.message


def test_gpu_verdict_drafts_nvidia_smi_and_names_perf_metrics():
    verdict = v.check_gpu_signals(make_run({"perf/tokens_per_gpu_per_sec": (R, np.full(N, 1500.0))}))
    assert any(c.startswith("nvidia-smi dmon") for c in verdict.commands)
    assert verdict.evidence["perf/tokens_per_gpu_per_sec:median"] == 1500.0


def test_time_split_points_at_async_and_batch_cards():
    verdict = v.check_time_split(make_run({"perf/wait_time_ratio": (R, np.full(N, 0.8))}))
    assert {"monitoring", "async-training", "batch-size"} <= set(verdict.cards)
    assert "train_async.py" in verdict.fix


def test_mann_kendall_sign_and_ties():
    assert v.mann_kendall_z(np.arange(20.0)) > 1.96
    assert v.mann_kendall_z(-np.arange(20.0)) < -1.96
    assert v.mann_kendall_z(np.ones(20)) == 0.0


def test_every_verdict_on_an_empty_run_is_unknown():
    out = v.run_verdicts(make_run({}))
    assert len(out) == len(v.CHECKS)
    assert [x.code for x in out if x.status != "unknown"] == []


def test_finite_verdict_names_the_curves_it_checked():
    verdict = v.check_non_finite(make_run({"train/loss": (R, noise), "train/grad_norm": (R, noise + 1)}))
    assert verdict.status == "ok"
    assert verdict.evidence["tags_checked"] == ["train/loss", "train/grad_norm"]
    assert "train/loss" in verdict.message and "rollout/raw_reward" not in verdict.message
