"""Restarts stitched the way TensorBoard's data server does it, marked; rollout index alignment."""

from __future__ import annotations

import numpy as np
import pytest

from core.monitor.runs import restart_summary
from core.monitor.slime_metrics import infer_steps_per_rollout
from core.monitor.tensorboard.run import read_run
from core.monitor.tensorboard.synthetic import (
    Scenario,
    file_version_event,
    scalar_event,
    write_raw_event_file,
    write_slime_like_run,
)
from core.monitor.views import RolloutAlignment, rollout_index


def _file(d, name, points, wall=1_750_000_000.0):
    payloads = [file_version_event(wall_time=wall)]
    payloads += [scalar_event("rollout/raw_reward", v, s, wall + i) for i, (s, v) in enumerate(points)]
    return write_raw_event_file(d / name, payloads)


def test_second_file_replaces_overlapping_steps(tmp_path):
    _file(tmp_path, "events.out.tfevents.100.a", [(0, 0.25), (1, 0.5), (2, 0.75), (3, 1.0)])
    _file(tmp_path, "events.out.tfevents.200.b", [(2, 0.7), (3, 0.85), (4, 0.9)], wall=1_760_000_000.0)
    run = read_run(tmp_path)
    s = run.series["rollout/raw_reward"]
    assert s.steps.tolist() == [0, 1, 2, 3, 4]
    assert s.values.tolist() == pytest.approx([0.25, 0.5, 0.7, 0.85, 0.9], rel=1e-6)
    assert [f.name for f in np.array(run.files)[s.files]] == ["events.out.tfevents.100.a"] * 2 + [
        "events.out.tfevents.200.b"] * 3
    assert restart_summary(run) == [{"file": "events.out.tfevents.200.b", "step": 2, "tags": 1, "replaced": 2,
                                     "wall_time": 1_760_000_000.0}]


def test_step_going_back_within_a_file_keeps_the_newer_values(tmp_path):
    _file(tmp_path, "events.out.tfevents.1.a", [(0, 1.0), (1, 1.0), (2, 1.0), (1, 5.0), (2, 6.0), (3, 7.0)])
    run = read_run(tmp_path)
    s = run.series["rollout/raw_reward"]
    assert s.steps.tolist() == [0, 1, 2, 3]
    assert s.values.tolist() == [1.0, 5.0, 6.0, 7.0]
    assert [(m.step, m.replaced) for m in run.restarts] == [(1, 2)]


def test_repeated_step_keeps_only_the_last_value(tmp_path):
    _file(tmp_path, "events.out.tfevents.1.a", [(0, 1.0), (0, 2.0), (0, 3.0)])
    s = read_run(tmp_path).series["rollout/raw_reward"]
    assert s.steps.tolist() == [0] and s.values.tolist() == [3.0]


def test_slime_restart_run_stitches_every_tag(tmp_path):
    write_slime_like_run(tmp_path, Scenario(rollouts=20, seed=1))
    write_slime_like_run(tmp_path, Scenario(rollouts=10, first_rollout=15, seed=2, wall_start=1_760_000_000.0))
    run = read_run(tmp_path)
    assert run.series["rollout/raw_reward"].steps.tolist() == list(range(25))
    assert run.series["train/grad_norm"].steps.tolist() == list(range(50))
    rewinds = {(r["step"]) for r in restart_summary(run)}
    # rollout-stepped tags go back to 15, train/* to 15 * 2, eval/* (every 10th rollout) to 19
    assert rewinds == {15, 19, 30}


@pytest.mark.parametrize(("rollout", "train", "expected"), [
    (range(10), range(20), (1, 2)),
    (range(5, 10), range(10, 20), (1, 2)),
    (range(0, 40, 4), range(40), (4, 4)),
    ([], range(3), (1, 1)),
], ids=str)
def test_steps_per_rollout_inferred(rollout, train, expected):
    stride, k, how = infer_steps_per_rollout(list(rollout), list(train))
    assert (stride, k) == expected and how


def test_rollout_index_lines_up_train_and_rollout():
    align = RolloutAlignment(stride=1, steps_per_rollout=4, how="")
    assert rollout_index("train/loss", np.array([0, 3, 4, 11]), align).tolist() == [0, 0, 1, 2]
    assert rollout_index("rollout/raw_reward", np.array([0, 1, 2]), align).tolist() == [0, 1, 2]
    assert rollout_index("eval/aime", np.array([9]), align).tolist() == [9]
