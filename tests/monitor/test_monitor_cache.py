"""diskcache by (path, size, mtime): re-opening is a cache hit; a grown file re-reads only its new bytes."""

from __future__ import annotations

import os
import time

import diskcache
import numpy as np
import pytest

from core.monitor.cache import PREFIX
from core.monitor.tensorboard.events import scan_event_file
from core.monitor.tensorboard.run import read_run, read_scan
from core.monitor.tensorboard.synthetic import file_version_event, frame_record, scalar_event


def _write(path, steps, start=0.0):
    payloads = [scalar_event("rollout/raw_reward", float(s) + start, s) for s in steps]
    return b"".join(frame_record(p) for p in payloads)


def test_reopen_unchanged_file_is_a_cache_hit(tmp_path):
    f = tmp_path / "events.out.tfevents.1.a"
    f.write_bytes(frame_record(file_version_event()) + _write(f, range(50)))
    with diskcache.Cache(str(tmp_path / "cache")) as cache:
        first, how1 = read_scan(f, cache)
        second, how2 = read_scan(f, cache)
        assert (how1, how2) == ("read", "cached")
        assert np.array_equal(first.values, second.values)
        assert all(isinstance(k, str) and k.startswith(PREFIX) for k in cache.iterkeys())


def test_grown_file_reads_only_the_appended_part(tmp_path):
    f = tmp_path / "events.out.tfevents.1.a"
    head = frame_record(file_version_event()) + _write(f, range(50))
    tail = _write(f, range(50, 80))
    f.write_bytes(head + tail[:25])  # the last record is still being written
    with diskcache.Cache(str(tmp_path / "cache")) as cache:
        partial, _ = read_scan(f, cache)
        assert [d.kind for d in partial.damage] == ["truncated"]
        time.sleep(0.01)
        f.write_bytes(head + tail)
        os.utime(f, ns=(time.time_ns(), time.time_ns()))
        grown, how = read_scan(f, cache)
        assert how == "appended"
        full = scan_event_file(f)
        assert grown.steps.tolist() == full.steps.tolist() == list(range(80))
        assert np.array_equal(grown.values, full.values)
        assert grown.damage == [] and grown.compat_scalars == 80


def test_rewritten_file_is_read_again(tmp_path):
    f = tmp_path / "events.out.tfevents.1.a"
    f.write_bytes(frame_record(file_version_event()) + _write(f, range(10)))
    with diskcache.Cache(str(tmp_path / "cache")) as cache:
        read_scan(f, cache)
        f.write_bytes(frame_record(file_version_event()) + _write(f, range(20), start=100.0))
        scan, how = read_scan(f, cache)
        assert how == "read" and scan.values[0] == 100.0


def test_run_reopen_uses_cache(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    f = run_dir / "events.out.tfevents.1.a"
    f.write_bytes(frame_record(file_version_event()) + _write(f, range(30)))
    with diskcache.Cache(str(tmp_path / "cache")) as cache:
        read_run(run_dir, cache=cache)
        again = read_run(run_dir, cache=cache)
        assert [x.how for x in again.files] == ["cached"]


def test_damaged_cache_entry_is_a_miss(tmp_path):
    f = tmp_path / "events.out.tfevents.1.a"
    f.write_bytes(frame_record(file_version_event()) + _write(f, range(5)))
    with diskcache.Cache(str(tmp_path / "cache")) as cache:
        read_scan(f, cache)
        for key in list(cache.iterkeys()):
            if ":scan:" in key:
                cache.set(key, b"garbage")
        scan, how = read_scan(f, cache)
        assert how == "read" and len(scan.values) == 5


def test_cache_holds_data_not_pickles_and_refuses_a_planted_pickle(tmp_path):
    """Issue 15: write access to the parsed-log cache is not code execution."""
    import pickle

    from core.memory.store import Store

    f = tmp_path / "run" / "events.out.tfevents.1.a"
    f.parent.mkdir()
    f.write_bytes(frame_record(file_version_event()) + _write(f, range(30)))
    store = Store(tmp_path / "home")
    read_run(f.parent, cache=store.bulk_cache)
    plain = diskcache.Cache(str(tmp_path / "home" / "bulk"))
    for key in plain.iterkeys():
        value = plain.get(key)
        assert isinstance(value, bytes | str), key  # nothing diskcache would pickle
        if isinstance(value, bytes):
            with pytest.raises(pickle.UnpicklingError):
                pickle.loads(value)
    marker = tmp_path / "ran"

    class Planted:
        def __reduce__(self):
            return (os.mkdir, (str(marker),))

    for key in list(plain.iterkeys()):
        plain.set(key, Planted())
    again = read_run(f.parent, cache=store.bulk_cache)
    assert not marker.exists()
    assert again.scalar_count() == 30 and {r.how for r in again.files} == {"read"}


def test_blob_arrays_are_stored_small_and_given_back_exactly():
    from core.monitor import blob
    from core.monitor.scan import FileScan

    rng = np.random.default_rng(0)
    scan = FileScan(path="x", size=1, mtime_ns=1, steps=np.arange(100_000, dtype=np.int64),
                    tag_ids=np.zeros(100_000, np.int32),
                    values=rng.normal(size=100_000).astype(np.float32).astype(np.float64),
                    wall_times=1.7e9 + np.arange(100_000) * 0.123456789)
    data = blob.dumps(scan)
    assert len(data) < 100_000 * (4 + 1 + 4 + 8) + 4096  # narrowed: int32 steps, int8 ids, float32 values
    back = blob.loads(data)
    for name in ("steps", "tag_ids", "values", "wall_times"):
        a, b = getattr(scan, name), getattr(back, name)
        assert a.dtype == b.dtype and np.array_equal(a, b), name
    # values float32 cannot hold are kept in full; NaN, infinities and -0.0 survive
    odd = np.array([0.1, np.nan, np.inf, -np.inf, -0.0, 1e300])
    same = blob.loads(blob.dumps(FileScan(path="", size=0, mtime_ns=0, values=odd))).values
    assert same.dtype == np.float64 and np.array_equal(same, odd, equal_nan=True)
    assert np.signbit(same[4])
    exact = np.array([0.5, np.nan, -0.0, np.inf])
    kept = blob.loads(blob.dumps(FileScan(path="", size=0, mtime_ns=0, values=exact))).values
    assert kept.dtype == np.float64 and np.array_equal(kept, exact, equal_nan=True) and np.signbit(kept[2])


def test_every_spelling_of_a_path_is_one_cache_entry(tmp_path, monkeypatch):
    run_dir = tmp_path / "medium"
    run_dir.mkdir()
    f = run_dir / "events.out.tfevents.1.a"
    f.write_bytes(frame_record(file_version_event()) + _write(f, range(30)))
    (tmp_path / "link").symlink_to(run_dir)
    monkeypatch.chdir(tmp_path)
    with diskcache.Cache(str(tmp_path / "cache")) as cache:
        first = read_run("medium", cache=cache)
        entries = len(list(cache.iterkeys()))
        again = read_run(tmp_path / "medium", cache=cache)
        linked = read_run(tmp_path / "link", cache=cache)
        assert len(list(cache.iterkeys())) == entries
        assert [x.how for x in again.files] == [x.how for x in linked.files] == ["cached"]
        assert (first.path, again.path, linked.path) == ("medium", str(tmp_path / "medium"), str(tmp_path / "link"))


def test_cache_is_smaller_than_the_log(tmp_path):
    from core.monitor.tensorboard.synthetic import Scenario, write_slime_like_run

    write_slime_like_run(tmp_path / "run", Scenario(rollouts=60))
    log_bytes = sum(p.stat().st_size for p in (tmp_path / "run").iterdir())
    with diskcache.Cache(str(tmp_path / "cache")) as cache:
        read_run(tmp_path / "run", cache=cache)
        cached = sum(len(cache.get(k)) for k in cache.iterkeys() if isinstance(cache.get(k), bytes))
    assert cached < log_bytes, (cached, log_bytes)


def test_many_small_files_are_cached_in_one_batch(tmp_path):
    """Cache work grows with the files read, not with their square (issue 22 item 5)."""
    from core.monitor import cache as cache_mod
    from core.monitor.tensorboard.run import MAX_EVENT_FILES_PER_RUN

    count = MAX_EVENT_FILES_PER_RUN - 1  # as many as one run may hold: past the limit, files are left out
    run_dir = tmp_path / "many"
    run_dir.mkdir()
    for i in range(count):
        (run_dir / f"events.out.tfevents.{i:04d}.h").write_bytes(
            frame_record(file_version_event()) + _write(None, [i]))
    writes = []
    with diskcache.Cache(str(tmp_path / "cache")) as cache:
        real = cache_mod._index_added
        try:
            cache_mod._index_added = lambda c, added: (writes.append(len(added)), real(c, added))
            run = read_run(run_dir, cache=cache)
        finally:
            cache_mod._index_added = real
        assert run.scalar_count() == count
        assert writes == [count + 1]  # one scan per file and the run, one index update
        assert {x.how for x in read_run(run_dir, cache=cache).files} == {"cached"}
