"""The provider keeps each chart's figure per data version and settings: a rerun that changed nothing builds
none again; new data, other settings or other runs build anew; the number kept is bounded."""

from __future__ import annotations

import time

from core.monitor import MonitorProvider, XAxis
from core.monitor.sources import FoundRun
from core.monitor.tensorboard.synthetic import Scenario, frame_record, scalar_event, write_slime_like_run

TAG = "rollout/raw_reward"


def _open(tmp_path, name: str = "a", rollouts: int = 12) -> tuple[MonitorProvider, dict]:
    write_slime_like_run(tmp_path / name, Scenario(rollouts=rollouts))
    src = FoundRun(kind="tensorboard", label=name, path=str(tmp_path / name)).model_dump()
    provider = MonitorProvider()
    assert provider.open([src]) == []
    provider.refresh()
    return provider, src


def _figure(provider: MonitorProvider, tag: str = TAG, **settings):
    opts = {"axis": XAxis.STEP, "weight": 0.6, "ignore_outliers": False, **settings}
    return provider.figure(tag, alignments=provider.alignments(None), **opts)


def test_a_second_look_with_the_same_inputs_builds_nothing(tmp_path):
    provider, _ = _open(tmp_path)
    first = _figure(provider)
    assert provider.figures_built == 1
    assert provider.refresh() == []  # a rerun of the page: nothing was written, nothing read
    again = _figure(provider)
    assert again is first and provider.figures_built == 1
    for other in ({"weight": 0.9}, {"axis": XAxis.ROLLOUT}, {"ignore_outliers": True}, {"columns": 200}):
        assert _figure(provider, **other) is not first
    assert provider.figures_built == 5
    assert _figure(provider, weight=0.9) is not None and provider.figures_built == 5  # kept too
    assert _figure(provider, tag="train/grad_norm") is not first and provider.figures_built == 6


def test_new_data_builds_a_new_figure(tmp_path):
    provider, _ = _open(tmp_path)
    first = _figure(provider)
    points = len(first.data[1].x)
    [follower] = provider.followers()
    path = next(s.path for s in follower.states if TAG in s.tags)
    last = int(follower.run.series[TAG].steps.max())
    with open(path, "ab") as fh:
        fh.write(frame_record(scalar_event(TAG, 0.9, last + 1, wall_time=time.time())))
    provider.refresh()
    grown = _figure(provider)
    assert grown is not first and provider.figures_built == 2 and len(grown.data[1].x) == points + 1
    assert _figure(provider) is grown and provider.figures_built == 2


def test_other_runs_or_alignments_build_anew_and_the_kept_figures_are_bounded(tmp_path, monkeypatch):
    import core.monitor.provider as provider_module

    provider, src = _open(tmp_path)
    first = _figure(provider)
    write_slime_like_run(tmp_path / "b", Scenario(rollouts=15))
    other = FoundRun(kind="tensorboard", label="b", path=str(tmp_path / "b")).model_dump()
    provider.open([src, other])
    provider.refresh()
    both = _figure(provider)
    assert both is not first and len(both.data) == 4
    overridden = provider.figure(TAG, axis=XAxis.ROLLOUT, weight=0.6, ignore_outliers=False,
                                 alignments=provider.alignments(7))
    assert overridden is not _figure(provider, axis=XAxis.ROLLOUT)
    monkeypatch.setattr(provider_module, "MAX_FIGURES", 3)
    for w in (0.1, 0.2, 0.3, 0.4):
        _figure(provider, weight=w)
    assert len(provider._figures) == 3
    built = provider.figures_built
    _figure(provider, weight=0.1)  # the oldest was dropped: built again
    assert provider.figures_built == built + 1
