"""The store never loses answers silently: each kind of damage is detected, set aside, reported, survivable."""

from __future__ import annotations

import json
import os
import pickle
import sqlite3

import diskcache

from core.memory.profile import AcceptedOutput, Profile, WorkflowRecord
from core.memory.store import Store


def _profile(name="default", **kw):
    return Profile(**{"name": name, "model": "Qwen3-4B", "data_path": "/data/train.jsonl", "gpus_total": 8, **kw})


def _record(workflow="grpo", output="x"):
    return WorkflowRecord(workflow=workflow, status="started", updated_at=1.0, output=output)


def _aside(store_dir):
    kept = sorted(store_dir.parent.glob(f"{store_dir.name}.unreadable-*"))
    assert len(kept) == 1, kept
    return kept[0]


def test_a_zero_byte_database_is_set_aside_and_reported(store_dir):
    s = Store(store_dir)
    s.save_profile(_profile())
    s.close()
    (store_dir / "cache.db").write_bytes(b"")
    again = Store(store_dir)
    assert again.active_profile() is None
    [notice] = again.notices
    assert "empty (0 bytes)" in notice.message and "is kept, unchanged, at" in notice.message
    assert "Everything saved in it is lost unless you restore it from that copy" in notice.message
    assert (_aside(store_dir) / "cache.db").stat().st_size == 0
    again.save_profile(_profile())  # the fresh store works
    assert Store(store_dir).active_profile().model == "Qwen3-4B"


def test_garbage_in_the_middle_of_the_database_keeps_what_can_be_read(store_dir):
    s = Store(store_dir)
    for i in range(40):
        s.save_profile(_profile(f"p{i:02d}"))
        s.record(f"p{i:02d}", _record(output="#" * 3000))
    s.set_active("p20")
    s.close()
    db = store_dir / "cache.db"
    original = db.read_bytes()
    assert len(original) > 64 * 1024
    middle = len(original) // 2 // 4096 * 4096
    with db.open("r+b") as fh:
        fh.seek(middle)
        fh.write(os.urandom(8192))
    damaged = db.read_bytes()

    again = Store(store_dir)
    [notice] = again.notices
    assert "its database file is damaged" in notice.message and "Recovered into it: the profiles" in notice.message
    assert "Lost:" in notice.message or "could not be read, not even their names" in notice.message
    kept = _aside(store_dir)
    assert (kept / "cache.db").read_bytes() == damaged  # set aside untouched
    names = again.list_profiles()
    assert 0 < len(names) < 40 or len(again.records("p00")) + len(names) < 80
    # Every page's reads still work, whatever was lost, and the store takes new answers.
    for name in names:
        assert again.get_profile(name) is not None
        again.records(name)
    assert again.active_profile() is not None or not names
    again.save_profile(_profile("new"))
    assert Store(store_dir).get_profile("new") is not None


def test_a_truncated_value_of_the_active_profile_is_reported_and_the_rest_kept(store_dir):
    s = Store(store_dir)
    s.save_profile(_profile())
    s.save_profile(_profile("other", model="GLM4-9B"))
    raw = s.cache.get("profile:default")
    s.cache.set("profile:default", raw[: len(raw) // 2])
    again = Store(store_dir)
    assert again.active_profile().name == "other"  # the next readable profile, not a crash
    [notice] = again.notices
    assert "the profile default could not be read" in notice.message and "not complete JSON" in notice.message
    assert "Everything else was kept" in notice.message
    assert again.list_profiles() == ["other"]


def test_a_truncated_record_is_reported_and_the_other_records_shown(store_dir):
    s = Store(store_dir)
    s.save_profile(_profile())
    s.record("default", _record("grpo"))
    s.record("default", _record("async"))
    s.cache.set("record:default:grpo", s.cache.get("record:default:grpo")[:30])
    assert set(s.records("default")) == {"async"}
    assert any("the progress of GRPO setup (profile default) could not be read" in n.message for n in s.notices)


def _legacy_store(store_dir, values: dict):
    """A store as the previous release wrote it: pickled dicts through diskcache's default serializer."""
    old = diskcache.Cache(str(store_dir), eviction_policy="none")
    for key, value in values.items():
        old.set(key, value)
    old.close()


def test_an_old_pickled_store_is_converted_once_to_json(store_dir):
    profile = {"schema": 1, "data": _profile().model_dump(mode="json")}
    big = {"schema": 1, "data": _record(output="y" * 100_000).model_dump(mode="json")}  # a value file
    _legacy_store(store_dir, {"profile:default": profile, "active_profile": "default",
                              "record:default:grpo": big, "launch_keys:default": None})
    s = Store(store_dir)
    assert s.notices == []
    assert s.active_profile().model == "Qwen3-4B"
    assert s.get_record("default", "grpo").output == "y" * 100_000
    con = sqlite3.connect(store_dir / "cache.db")
    modes = {k: (m, f) for k, m, f in con.execute("SELECT key, mode, filename FROM Cache")}
    assert all(m == 1 and f is None for m, f in modes.values()), modes  # JSON text, inside the database
    assert "launch_keys:default" not in modes
    assert isinstance(s.cache.get("profile:default"), str)


def test_a_pickle_that_would_run_code_is_refused_not_executed(store_dir, tmp_path):
    marker = tmp_path / "ran"

    class Exploit:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    _legacy_store(store_dir, {"profile:default": {"schema": 1, "data": _profile().model_dump(mode="json")}})
    old = diskcache.Cache(str(store_dir), eviction_policy="none")
    old.set("record:default:grpo", Exploit())
    old.close()
    s = Store(store_dir)
    assert not marker.exists()
    assert s.active_profile() is not None
    [notice] = s.notices
    assert "the progress of GRPO setup (profile default) (it is damaged" in notice.message
    # A pickle slipped in while the app runs is refused the same way.
    sneaky = diskcache.Cache(str(store_dir), eviction_policy="none")
    sneaky.set("record:default:async", Exploit())
    sneaky.close()
    assert s.get_record("default", "async") is None and not marker.exists()
    assert any("old pickled format" in n.message for n in s.notices)


def test_a_truncated_pickle_in_an_old_store_is_reported_and_kept(store_dir):
    _legacy_store(store_dir, {"profile:default": {"schema": 1, "data": _profile().model_dump(mode="json")},
                              "record:default:grpo": {"schema": 1, "data": _record().model_dump(mode="json")}})
    con = sqlite3.connect(store_dir / "cache.db")
    blob = con.execute("SELECT value FROM Cache WHERE key = 'profile:default'").fetchone()[0]
    con.execute("UPDATE Cache SET value = ? WHERE key = 'profile:default'", (blob[: len(blob) // 2],))
    con.commit()
    con.close()
    s = Store(store_dir)
    assert s.active_profile() is None
    assert s.get_record("default", "grpo") is not None  # the rest is kept
    [notice] = s.notices
    assert "the profile default (it is damaged" in notice.message and "Everything else was kept" in notice.message
    kept = list((store_dir / "unreadable").glob("profile_default-*.txt"))
    assert len(kept) == 1 and kept[0].read_bytes() == blob[: len(blob) // 2]


def test_deleted_and_damaged_value_files_are_reported(store_dir):
    big = {"schema": 1, "data": _record(output="z" * 100_000).model_dump(mode="json")}
    _legacy_store(store_dir, {"profile:default": {"schema": 1, "data": _profile().model_dump(mode="json")},
                              "record:default:grpo": big, "record:default:async": {**big}})
    files = {k: f for k, f in sqlite3.connect(store_dir / "cache.db").execute(
        "SELECT key, filename FROM Cache WHERE filename IS NOT NULL")}
    (store_dir / files["record:default:grpo"]).unlink()
    (store_dir / files["record:default:async"]).write_bytes(b"\x80\x04\xff" + os.urandom(497))  # a bad opcode
    s = Store(store_dir)
    [notice] = s.notices
    assert "the progress of GRPO setup (profile default) (its value file was deleted)" in notice.message
    assert "the progress of Async training (profile default) (it is damaged" in notice.message
    assert s.records("default") == {} and s.active_profile() is not None


def test_a_missing_database_next_to_value_files_is_reported(store_dir):
    big = {"schema": 1, "data": _record(output="z" * 100_000).model_dump(mode="json")}
    _legacy_store(store_dir, {"record:default:grpo": big})
    (store_dir / "cache.db").unlink()
    s = Store(store_dir)
    [notice] = s.notices
    assert "database file is missing" in notice.message
    assert _aside(store_dir).is_dir()


def test_new_values_never_use_value_files_or_pickles(store_dir):
    s = Store(store_dir)
    s.save_profile(_profile())
    s.accept("default", AcceptedOutput(id="a", workflow="grpo", accepted_at=1.0, how="accepted the draft",
                                       summary="s", output="x" * 200_000))
    assert not list(store_dir.rglob("*.val"))
    con = sqlite3.connect(store_dir / "cache.db")
    assert {m for (m,) in con.execute("SELECT mode FROM Cache")} == {1}
    blob = pickle.dumps({"a": 1})
    assert blob not in {v for (v,) in con.execute("SELECT value FROM Cache")}
    assert json.loads(s.cache.get("accepted:default:grpo:a"))["data"]["output"] == "x" * 200_000


ALL_PAGES = ("pages/home.py", "pages/profile.py", "pages/progress.py", "pages/grpo.py", "pages/async_training.py",
             "pages/multi_turn.py", "pages/model_checkpoint.py", "pages/alternatives.py", "pages/check_args.py",
             "pages/check_data.py", "pages/monitor.py", "pages/knowledge.py")


def test_every_page_works_when_the_active_profile_is_unreadable(app_env, make_app):
    s = Store(app_env)
    s.save_profile(_profile())
    s.save_profile(_profile("other", model="GLM4-9B"))
    s.record("default", _record())
    raw = s.cache.get("profile:default")
    s.cache.set("profile:default", raw[:25])
    s.close()
    at = make_app().run()
    assert not at.exception
    assert any("the profile default could not be read" in w.value for w in at.warning)
    assert any("Your profile: other" in h.value for h in at.subheader)
    for page in ALL_PAGES:
        at.switch_page(page).run()
        assert not at.exception, page


def test_every_page_works_after_garbage_in_the_database(app_env, make_app):
    s = Store(app_env)
    for i in range(30):
        s.save_profile(_profile(f"p{i:02d}"))
        s.record(f"p{i:02d}", _record(output="#" * 3000))
    s.close()
    db = app_env / "cache.db"
    size = db.stat().st_size
    with db.open("r+b") as fh:
        fh.seek(size // 2 // 4096 * 4096)
        fh.write(os.urandom(8192))
    at = make_app().run()
    assert not at.exception
    assert any("its database file is damaged" in w.value for w in at.warning)
    for page in ALL_PAGES:
        at.switch_page(page).run()
        assert not at.exception, page


def test_any_stored_bytes_or_text_is_read_or_reported_never_raised(tmp_path):
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    store = Store(tmp_path / "store")
    envelope = json.dumps({"schema": 2, "kind": "Profile", "data": _profile().model_dump(mode="json")})
    mutated = st.builds(lambda cut, junk: envelope[:cut] + junk, st.integers(0, len(envelope)), st.text(max_size=20))

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(st.one_of(st.binary(max_size=200), st.text(max_size=200), mutated))
    def read_back(value):
        store.notices.clear()
        store.cache.set("profile:x", value)
        store.cache.set("record:x:grpo", value)
        profile = store.get_profile("x")
        assert profile is None or profile.model == "Qwen3-4B"
        assert store.records("x") in ({},) or set(store.records("x")) == {"grpo"}
        if profile is None:
            assert any("the profile x could not be read" in n.message for n in store.notices)

    read_back()
