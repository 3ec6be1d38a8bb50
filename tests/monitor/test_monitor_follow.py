"""Following runs while they are written: real writers (tensorboardX, the W&B SDK offline) append while the
follower refreshes; every refresh must equal a fresh read of the files as they are then."""

from __future__ import annotations

import time

import diskcache
import numpy as np
import pytest

from core.monitor.follow import Follower, RunSnapshot, changes_since, snapshot
from core.monitor.sources import FoundRun
from core.monitor.tensorboard.run import read_run
from core.monitor.tensorboard.synthetic import frame_record, scalar_event
from core.monitor.verdicts import run_verdicts

TAGS = ("rollout/raw_reward", "train/grad_norm", "train/kl_loss")


def _log(writer, start: int, n: int) -> None:
    for r in range(start, start + n):
        writer.add_scalar("rollout/raw_reward", 0.1 + 0.004 * r, r)
        writer.add_scalar("train/grad_norm", 1.0 + 0.01 * (r % 7), r)
        writer.add_scalar("train/kl_loss", 0.001 * r, r)
    writer.flush()
    _settle(writer.logdir)


def _settle(run_dir) -> None:
    """Wait until tensorboardX's writer thread has put everything on disk (sizes stop changing)."""
    from pathlib import Path

    last = None
    for _ in range(200):
        sizes = sorted((p.name, p.stat().st_size) for p in Path(run_dir).iterdir())
        if sizes == last:
            return
        last = sizes
        time.sleep(0.03)


def _assert_same(followed, fresh) -> None:
    assert sorted(followed.series) == sorted(fresh.series)
    for tag, s in fresh.series.items():
        f = followed.series[tag]
        assert f.steps.tolist() == s.steps.tolist(), tag
        assert np.array_equal(f.values, s.values, equal_nan=True), tag
        assert np.array_equal(f.wall_times, s.wall_times, equal_nan=True), tag
    assert followed.scalar_count() == fresh.scalar_count()
    assert [(m.tag, m.step, m.replaced) for m in followed.restarts] == [(m.tag, m.step, m.replaced)
                                                                        for m in fresh.restarts]


@pytest.fixture
def cache(tmp_path):
    with diskcache.Cache(str(tmp_path / "cache")) as c:
        yield c


def test_tensorboard_run_followed_while_written(tmp_path, cache):
    from tensorboardX import SummaryWriter

    run_dir = tmp_path / "run"
    writer = SummaryWriter(str(run_dir))
    _log(writer, 0, 30)
    follower = Follower(FoundRun(kind="tensorboard", label="run", path=str(run_dir)), cache=cache)
    _assert_same(follower.run, read_run(run_dir))
    start = 30
    for _ in range(4):
        _log(writer, start, 25)
        start += 25
        before = follower.run.scalar_count()
        refresh = follower.refresh()
        fresh = read_run(run_dir)
        # tensorboardX's writer thread puts records on disk in its own time: compare with what is there
        assert refresh.new_scalars == fresh.scalar_count() - before > 0
        assert not refresh.reread and refresh.files_grown == 1
        assert refresh.bytes_read < 100 * 200  # only the appended records
        _assert_same(follower.run, fresh)
    assert follower.run.files[0].how == "appended"
    writer.close()


def test_a_record_cut_at_the_end_is_pending_not_damage(tmp_path, cache):
    from tensorboardX import SummaryWriter

    run_dir = tmp_path / "run"
    writer = SummaryWriter(str(run_dir))
    _log(writer, 0, 10)
    writer.close()
    [path] = list(run_dir.iterdir())
    follower = Follower(FoundRun(kind="tensorboard", label="run", path=str(run_dir)), cache=cache)
    record = frame_record(scalar_event("rollout/raw_reward", 9.5, 10, wall_time=time.time()))
    with open(path, "ab") as fh:
        fh.write(record[:20])  # the writer is in the middle of this record
    refresh = follower.refresh()
    assert refresh.new_scalars == 0 and refresh.pending_bytes == 20
    assert follower.run.files[0].damage == []
    with open(path, "ab") as fh:
        fh.write(record[20:])
    refresh = follower.refresh()
    assert refresh.new_scalars == 1 and refresh.pending_bytes == 0
    assert follower.run.series["rollout/raw_reward"].values[-1] == 9.5
    _assert_same(follower.run, read_run(run_dir))


def test_a_replaced_or_shrunk_file_is_read_again(tmp_path, cache):
    from tensorboardX import SummaryWriter

    run_dir = tmp_path / "run"
    writer = SummaryWriter(str(run_dir))
    _log(writer, 0, 40)
    writer.close()
    [path] = list(run_dir.iterdir())
    follower = Follower(FoundRun(kind="tensorboard", label="run", path=str(run_dir)), cache=cache)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])  # shrank: a copy started over
    refresh = follower.refresh()
    assert refresh.reread and [e.kind for e in refresh.events][:1] == ["replaced"]
    _assert_same(follower.run, read_run(run_dir))
    # same size, other bytes before the saved offset: replaced, read again
    other = bytearray(path.read_bytes())
    other[100] ^= 0x01  # within the 4 KiB checked before the saved offset
    path.write_bytes(bytes(other) + frame_record(scalar_event("train/kl_loss", 1.0, 99)))
    refresh = follower.refresh()
    assert refresh.reread
    _assert_same(follower.run, read_run(run_dir))


def test_restart_new_file_stall_and_resume(tmp_path, cache):
    from tensorboardX import SummaryWriter

    run_dir = tmp_path / "run"
    writer = SummaryWriter(str(run_dir), filename_suffix=".a")
    _log(writer, 0, 20)
    clock = [1000.0]
    follower = Follower(FoundRun(kind="tensorboard", label="run", path=str(run_dir)), cache=cache,
                        stall_after=3, clock=lambda: clock[0])
    kinds = []
    for _ in range(4):
        clock[0] += 10
        kinds += [e.kind for e in follower.refresh().events]
    assert kinds == ["stalled"]  # said once
    time.sleep(0.01)
    _log(writer, 20, 5)
    events = follower.refresh().events
    assert [e.kind for e in events] == ["resumed"]
    writer.close()
    # a restart from a checkpoint: a new writer (a new file) logs again from step 15
    time.sleep(1.1)  # tensorboardX names files by the second
    restarted = SummaryWriter(str(run_dir), filename_suffix=".b")
    _log(restarted, 15, 5)
    restarted.close()
    refresh = follower.refresh()
    kinds = [e.kind for e in refresh.events]
    assert "new_file" in kinds and "restart" in kinds
    _assert_same(follower.run, read_run(run_dir))
    # the restarted process keeps going: appended to its own file, read in place
    newest = sorted(run_dir.iterdir())[-1]
    with open(newest, "ab") as fh:
        for r in range(20, 30):
            fh.write(frame_record(scalar_event("train/kl_loss", 0.5, r)))
    refresh = follower.refresh()
    assert not refresh.reread and refresh.new_scalars == 10
    _assert_same(follower.run, read_run(run_dir))


def test_status_change_is_an_event(tmp_path, cache):
    from tensorboardX import SummaryWriter

    run_dir = tmp_path / "run"
    writer = SummaryWriter(str(run_dir))
    for r in range(30):
        writer.add_scalar("rollout/raw_reward", 0.1 + 0.01 * r, r)
    writer.flush()
    _settle(run_dir)
    follower = Follower(FoundRun(kind="tensorboard", label="run", path=str(run_dir)), cache=cache)
    before = {v.code: v.status for v in follower.verdicts}
    for r in range(30, 60):
        writer.add_scalar("rollout/raw_reward", float("nan"), r)
    writer.flush()
    _settle(run_dir)
    refresh = follower.refresh()
    after = {v.code: v.status for v in follower.verdicts}
    changed = {c for c in after if after[c] != before.get(c)}
    assert changed and {e.code for e in refresh.events if e.kind == "status"} == changed
    writer.close()


def test_changes_since_you_last_looked(tmp_path):
    from core.monitor.tensorboard.synthetic import file_version_event

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    path = run_dir / "events.out.tfevents.1.host"

    def rows(lo, hi):
        return b"".join(frame_record(scalar_event("rollout/raw_reward", 0.1 + 0.01 * r, r)) for r in range(lo, hi))

    path.write_bytes(frame_record(file_version_event()) + rows(0, 20))
    run = read_run(run_dir)
    old = snapshot(run, run_verdicts(run), now=1000.0)
    assert changes_since(None, old) is None
    with open(path, "ab") as fh:
        fh.write(rows(20, 50))
    run = read_run(run_dir)
    text = changes_since(old, snapshot(run, run_verdicts(run), now=1000.0 + 7200))
    assert text.startswith("Since you last looked (2.0 h ago): 30 new rollouts (20 -> 50)")
    assert "the reward (rollout/raw_reward, mean of the last 5) went from 0.27 to 0.57 (+0.3)" in text
    same = RunSnapshot.model_validate(old.model_dump())
    assert "no new data" in changes_since(old, same)


wandb = pytest.importorskip("wandb")


def test_wandb_run_followed_while_the_sdk_writes(tmp_path, cache):
    from core.monitor.wandb.run import read_wandb_run
    from core.monitor.wandb.synthetic import _open, offline_wandb

    def grown(path, size, timeout=20.0):
        end = time.time() + timeout
        while time.time() < end:
            if path.exists() and path.stat().st_size > size:
                time.sleep(0.3)
                return
            time.sleep(0.05)
        raise AssertionError("the SDK wrote nothing")

    with offline_wandb(tmp_path):
        run = _open(tmp_path, "live1", {"rollout_batch_size": 4}, resume=False)
        for r in range(20):
            run.log({"rollout/raw_reward": 0.1 * r, "rollout/step": r, "_timestamp": 1e9 + r})
        [path] = list((tmp_path / "wandb").glob("*run-*live1/run-live1.wandb"))
        grown(path, 0)
        found = FoundRun(kind="wandb", label="live1", path=str(path.parent), files=[str(path)])
        follower = Follower(found, cache=cache)
        def points():
            s = follower.run.series.get("rollout/raw_reward")
            return 0 if s is None else len(s.steps)

        total = points()
        for start in (20, 60, 100):
            size = path.stat().st_size
            for r in range(start, start + 40):
                run.log({"rollout/raw_reward": 0.1 * r, "train/loss": 1.0 / (r + 1), "rollout/step": r,
                         "train/step": r, "_timestamp": 1e9 + r})
            grown(path, size)
            refresh = follower.refresh()
            assert not refresh.reread
            fresh = read_wandb_run([path])
            _assert_same(follower.run, fresh)
            assert points() >= total
            total = points()
            assert all(d.kind != "truncated" for f in follower.run.files for d in f.damage)
        size = path.stat().st_size
        run.finish()
        wandb.teardown()
    events = follower.refresh().events
    assert total > 20 and refresh.new_scalars > 0
    assert "finished" in [e.kind for e in events]
    _assert_same(follower.run, read_wandb_run([path]))
    assert follower.run.wandb.exit_code == 0


def test_a_file_growing_with_junk_keeps_refreshes_cheap(tmp_path, monkeypatch):
    from core.monitor import follow
    from core.monitor.tensorboard.synthetic import file_version_event

    monkeypatch.setattr(follow, "PENDING_MAX", 200_000)
    monkeypatch.setattr(follow, "KEEP_TAIL", 10_000)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    path = run_dir / "events.out.tfevents.1.host"
    path.write_bytes(frame_record(file_version_event()) + frame_record(scalar_event("rollout/raw_reward", 1.0, 0)))
    follower = Follower(FoundRun(kind="tensorboard", label="run", path=str(run_dir)))
    rng = np.random.default_rng(0)
    reads = []
    for _ in range(8):
        with open(path, "ab") as fh:
            fh.write(rng.integers(0, 256, 100_000, dtype=np.uint8).tobytes())
        reads.append(follower.refresh().bytes_read)
    assert max(reads[3:]) < 100_000 + 200_000 + 10_000  # never the whole junk again
    with open(path, "ab") as fh:  # a good record after the junk is still found
        fh.write(frame_record(scalar_event("rollout/raw_reward", 2.0, 1)))
    follower.refresh()
    assert follower.run.series["rollout/raw_reward"].values.tolist() == [1.0, 2.0]
    assert any(d.kind in ("bad_length", "more") for d in follower.run.files[0].damage)


# -- the provider: the monitor's one face for the page ---------------------------------------------------------

def _tb_source(root, name: str, rollouts: int) -> dict:
    from core.monitor.tensorboard.synthetic import Scenario, write_slime_like_run

    write_slime_like_run(root / name, Scenario(rollouts=rollouts))
    return FoundRun(kind="tensorboard", label="run", path=str(root / name)).model_dump()


def test_provider_opens_once_names_runs_apart_and_drops_what_is_gone(tmp_path):
    from core.monitor import MonitorProvider

    a, b = _tb_source(tmp_path, "a", 12), _tb_source(tmp_path, "b", 15)
    provider = MonitorProvider()
    assert provider.to_open([a, b]) == 2 and provider.open([a, b]) == []
    [first, second] = provider.followers()
    assert provider.refresh() == [] and [r.name for r in provider.runs()] == ["run", "run (2)"]
    assert provider.to_open([a, b]) == 0
    provider.open([b])  # a removed: b is the same follower, named alone again
    assert provider.followers() == [second] and provider.refresh() == [] and provider.runs()[0].name == "run"
    results = provider.verdicts({})
    assert results[0][0] is second.run and [v.code for v in results[0][1]] == [v.code for v in second.verdicts]
    missing = {**a, "label": "gone", "files": [str(tmp_path / "gone" / "events.out.tfevents.1")]}
    problems = provider.open([missing])
    assert [p.label for p in problems] == ["gone"] and problems[0].kind == "unreadable" and not provider.runs()


def test_provider_says_what_changed_since_the_last_look_and_keeps_the_record_bounded(tmp_path):
    from core.monitor import MonitorProvider, seen_after

    src = _tb_source(tmp_path, "a", 12)
    provider = MonitorProvider()
    provider.open([src])
    provider.refresh()
    changes, record = provider.since_last_look({}, {}, now=1000.0)
    assert changes == [] and record is not None and len(record) == 1  # a first look: nothing to compare with
    again, unchanged = MonitorProvider(), None
    again.open([src])
    again.refresh()
    [(name, text)], unchanged = again.since_last_look(record, {}, now=1060.0)
    assert name == "run" and text.startswith("Since you last looked (60 s ago): no new data") and unchanged is None
    [key] = record
    snap = RunSnapshot.model_validate(record[key])
    many = {f"k{i}": {**record[key], "seen_at": float(i)} for i in range(5)}
    kept = seen_after(many, key, snap.model_copy(update={"seen_at": 99.0}), limit=3)
    assert list(kept) == ["k3", "k4", key]
