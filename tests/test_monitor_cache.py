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
