import json
import multiprocessing as mp
import threading

import pytest

from core.memory.profile import Profile, WorkflowRecord
from core.memory.store import SCHEMA_VERSION, Store, migrate


def _profile(**kw):
    base = dict(name="default", model="Qwen3-4B", data_path="/data/train.jsonl", gpus_total=8)
    return Profile(**{**base, **kw})


def test_profile_round_trip_and_survives_reopen(store_dir):
    s = Store(store_dir)
    s.save_profile(_profile())
    s.close()
    again = Store(store_dir)
    p = again.active_profile()
    assert p is not None and p.model == "Qwen3-4B" and p.gpus_total == 8
    assert again.notices == []


def test_stored_records_carry_the_schema_version(store_dir):
    s = Store(store_dir)
    s.save_profile(_profile())
    raw = s.cache.get("profile:default")
    assert isinstance(raw, str)  # JSON text, never a pickle
    envelope = json.loads(raw)
    assert envelope["schema"] == SCHEMA_VERSION and envelope["data"]["model"] == "Qwen3-4B"
    assert envelope["kind"] == "Profile"


def test_update_changes_only_given_fields(store_dir):
    s = Store(store_dir)
    s.save_profile(_profile())
    s.update_profile("default", data_path="/other/x.parquet")
    p = s.get_profile("default")
    assert p.data_path == "/other/x.parquet" and p.model == "Qwen3-4B"


def test_two_writers_at_once_keep_both_answers(store_dir):
    Store(store_dir).save_profile(_profile())
    a, b = Store(store_dir), Store(store_dir)
    barrier = threading.Barrier(2)

    def write(store, **change):
        barrier.wait()
        for _ in range(20):
            store.update_profile("default", **change)

    t1 = threading.Thread(target=write, args=(a,), kwargs={"model": "Qwen3-8B"})
    t2 = threading.Thread(target=write, args=(b,), kwargs={"gpus_total": 16})
    t1.start(); t2.start(); t1.join(); t2.join()  # noqa: E702
    p = Store(store_dir).get_profile("default")
    assert (p.model, p.gpus_total) == ("Qwen3-8B", 16)


def _proc_write(path, change):
    Store(path).update_profile("default", **change)


def test_two_processes_keep_both_answers(store_dir):
    Store(store_dir).save_profile(_profile())
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_proc_write, args=(str(store_dir), c))
             for c in ({"model": "GLM4-9B"}, {"data_path": "/d/new.jsonl"})]
    for p in procs:
        p.start()
    for p in procs:
        p.join(30)
        assert p.exitcode == 0
    p = Store(store_dir).get_profile("default")
    assert (p.model, p.data_path) == ("GLM4-9B", "/d/new.jsonl")


def test_corrupted_store_is_set_aside_not_lost(store_dir):
    s = Store(store_dir)
    s.save_profile(_profile())
    s.close()
    (store_dir / "cache.db").write_bytes(b"this is not a sqlite database" * 100)
    fresh = Store(store_dir)
    assert fresh.active_profile() is None
    assert len(fresh.notices) == 1 and "kept, unchanged, at" in fresh.notices[0].message
    kept = list(store_dir.parent.glob("store.unreadable-*"))
    assert len(kept) == 1 and (kept[0] / "cache.db").read_bytes().startswith(b"this is not")


def test_unreadable_record_is_kept_aside_with_a_notice(store_dir):
    s = Store(store_dir)
    s.cache.set("profile:broken", json.dumps({"schema": 1, "data": {"model": ""}}))
    assert s.get_profile("broken") is None
    assert any("profile broken could not be read" in n.message and "kept in" in n.message for n in s.notices)
    kept = list((store_dir / "unreadable").glob("profile_broken-*.txt"))
    assert len(kept) == 1 and '"model": ""' in kept[0].read_text()
    assert "profile:broken" not in s.cache


def test_newer_schema_is_refused_clearly():
    with pytest.raises(ValueError, match="newer release"):
        migrate(SCHEMA_VERSION + 1, {}, "Profile")


def test_records_and_profiles_are_separate_per_profile(store_dir):
    s = Store(store_dir)
    s.save_profile(_profile())
    s.save_profile(_profile(name="other"))
    s.record("default", WorkflowRecord(workflow="grpo", status="done", updated_at=1.0, output="x"))
    assert set(s.records("default")) == {"grpo"} and s.records("other") == {}
    s.delete_profile("default")
    assert s.list_profiles() == ["other"] and s.active_profile_name() == "other"
    assert s.records("default") == {}


def test_a_file_where_the_store_should_be_is_left_untouched(tmp_path):
    target = tmp_path / "notes.txt"
    target.write_text("my notes")
    s = Store(target)
    assert s.notices and s.notices[0].level == "error" and "not a directory" in s.notices[0].message
    assert target.read_text() == "my notes" and not list(tmp_path.glob("notes.txt.unreadable-*"))
    s.save_profile(_profile())
    assert s.active_profile() is not None


def test_a_store_that_cannot_be_opened_is_not_moved_and_its_answers_are_shown(store_dir):
    s = Store(store_dir)
    s.save_profile(_profile())
    s.close()
    (store_dir / "cache.db-wal").mkdir()  # sqlite cannot open its write-ahead log: not corruption
    again = Store(store_dir)
    assert store_dir.exists() and not list(store_dir.parent.glob("store.unreadable-*"))
    assert again.notices and again.notices[0].level == "error", again.notices
    assert "nothing was moved" in again.notices[0].message and "copy of your saved answers" in again.notices[0].message
    assert again.active_profile().model == "Qwen3-4B"


def test_two_first_visits_at_once_keep_both_as_profiles(store_dir):
    a, b = Store(store_dir), Store(store_dir)
    first = a.create_profile(_profile(model="Qwen3-4B"))
    second = b.create_profile(_profile(model="GLM4-9B"))
    assert (first.name, second.name) == ("default", "default-2")
    s = Store(store_dir)
    assert s.get_profile("default").model == "Qwen3-4B" and s.get_profile("default-2").model == "GLM4-9B"
    assert s.active_profile_name() == "default"


def test_answers_are_never_evicted_and_bulk_data_lives_apart(store_dir):
    s = Store(store_dir)
    assert s.cache.eviction_policy == "none"
    s.save_profile(_profile())
    s.bulk_cache.set("monitor:x", b"0" * 1000)
    assert s.bulk_cache.directory != s.cache.directory
    s.bulk_cache.clear()
    assert s.get_profile("default") is not None


def _accepted(n, workflow="grpo", **kw):
    from core.memory.profile import AcceptedOutput

    return AcceptedOutput(**{"id": f"{workflow}-{n:02d}", "workflow": workflow, "accepted_at": 1000.0 + n,
                             "how": "accepted the draft", "summary": f"draft {n}", "output": f"echo {n}", **kw})


def test_page_inputs_merge_field_by_field_and_stay_per_profile(store_dir):
    s = Store(store_dir)
    s.update_inputs("default", "grpo", {"gbs": 64})
    s.update_inputs("default", "grpo", {"layout": "Disaggregated"})
    assert s.inputs("default", "grpo").values == {"gbs": 64, "layout": "Disaggregated"}
    assert s.inputs("other", "grpo") is None and s.pages_with_inputs("default") == {"grpo"}


def test_two_sessions_editing_one_page_keep_both_fields(store_dir):
    a, b = Store(store_dir), Store(store_dir)
    barrier = threading.Barrier(2)

    def edit(store, name):
        barrier.wait()
        for i in range(20):
            store.update_inputs("default", "grpo", {name: i})

    threads = [threading.Thread(target=edit, args=(a, "gbs")), threading.Thread(target=edit, args=(b, "n"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert Store(store_dir).inputs("default", "grpo").values == {"gbs": 19, "n": 19}


def test_accepted_outputs_keep_a_history_and_never_replace_each_other(store_dir):
    from core.memory.store import ACCEPTED_KEPT

    s = Store(store_dir)
    for n in range(3):
        s.accept("default", _accepted(n))
    assert [a.summary for a in s.accepted("default", "grpo")] == ["draft 2", "draft 1", "draft 0"]
    again = s.accept("default", _accepted(9, summary="draft 2", output="echo 2"))  # the same output twice
    assert again.id == "grpo-02" and len(s.accepted("default", "grpo")) == 3
    for n in range(3, 3 + ACCEPTED_KEPT):
        s.accept("default", _accepted(n))
    history = s.accepted("default", "grpo")
    assert len(history) == ACCEPTED_KEPT and history[-1].summary == "draft 3"  # the oldest dropped
    s.delete_accepted("default", "grpo", history[0].id)
    assert len(s.accepted("default", "grpo")) == ACCEPTED_KEPT - 1


def test_deleting_a_profile_deletes_its_inputs_and_history(store_dir):
    s = Store(store_dir)
    s.save_profile(_profile())
    s.save_profile(_profile(name="other"))
    s.update_inputs("default", "grpo", {"gbs": 64})
    s.accept("default", _accepted(1))
    s.accept("other", _accepted(1))
    s.delete_profile("default")
    assert s.inputs("default", "grpo") is None and s.accepted("default", "grpo") == []
    assert len(s.accepted("other", "grpo")) == 1


def test_status_comes_from_user_actions_only():
    from core.memory.workflows import status_rows

    rows = {r.workflow.id: r.status for r in status_rows({}, {"grpo": [_accepted(1)]}, {"async"})}
    assert rows["grpo"] == "done" and rows["async"] == "started" and rows["monitor"] == "not started"
    started = WorkflowRecord(workflow="check_data", status="started", updated_at=1.0)
    assert {r.workflow.id: r.status for r in status_rows({"check_data": started})}["check_data"] == "started"


def _race_opener(base, rounds, barrier, results):
    notices = []
    for r in range(rounds):
        barrier.wait(30)
        store = Store(f"{base}/round-{r}/store")
        store.save_profile(_profile(name=f"p{r}"))
        notices += [n.message for n in store.notices]
        store.close()
    results.put(notices)


def test_two_processes_creating_one_fresh_store_never_set_it_aside(tmp_path):
    """Issue 22, defect 6: two processes opening a fresh store at the same moment, many rounds. Before the
    lock file, one saw the other's half-created database in most rounds, declared it damaged and renamed the
    healthy store aside."""
    rounds = 40
    ctx = mp.get_context("spawn")
    barrier, results = ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=_race_opener, args=(str(tmp_path), rounds, barrier, results)) for _ in range(2)]
    for p in procs:
        p.start()
    notices = [results.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(30)
        assert p.exitcode == 0
    assert notices == [[], []]
    for r in range(rounds):
        names = sorted(p.name for p in (tmp_path / f"round-{r}").iterdir())
        assert names == [".store.lock", "store"]  # nothing renamed aside
        store = Store(tmp_path / f"round-{r}" / "store")
        assert store.list_profiles() == [f"p{r}"] and store.notices == []
        store.close()


def test_a_store_held_by_another_opener_is_waited_for_then_used(tmp_path, monkeypatch):
    from core.memory import store as store_module

    directory = tmp_path / "store"
    with store_module.creation_lock(directory):
        monkeypatch.setattr(store_module, "OPEN_LOCK_SECONDS", 0.2)
        busy = Store(directory)
    assert "another process" in busy.notices[0].message and not directory.with_name("store.unreadable").exists()
    busy.close()
    free = Store(directory)
    assert free.notices == []
    free.close()


def test_the_lock_file_falls_back_inside_the_store_and_never_follows_a_link(tmp_path):
    """A lock file beside the store that is a symlink (planted, or a parent that cannot hold one) is not
    followed; the lock is then taken inside the store directory."""
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("not the app's")
    (tmp_path / "store").mkdir()
    (tmp_path / ".store.lock").symlink_to(outside)
    store = Store(tmp_path / "store")
    store.save_profile(_profile())
    assert store.notices == [] and (tmp_path / "store" / ".open.lock").is_file()
    assert outside.read_text() == "not the app's"
    store.close()


def test_the_monitor_is_done_once_a_run_had_a_check_with_enough_data():
    from types import SimpleNamespace as NS

    from core.memory import MISSING_NO_SCALARS, monitor_progress

    def run(name, scalars):
        return NS(name=name, scalar_count=lambda: scalars)

    judged = (run("good", 10), [NS(code="MON001", title="Reward", status="ok"),
                                NS(code="MON002", title="Flat", status="warn")])
    empty = (run("empty", 0), [NS(code="MON001", title="Reward", status="unknown")])
    outcome = monitor_progress([judged, empty])
    assert outcome.status == "done" and outcome.done == ["good: checklist read (1 ok)"]
    assert outcome.todo == ["good: MON002 Flat (warn)", f"empty: {MISSING_NO_SCALARS}"]
    assert outcome.summary == 'Runs "good", "empty": 1 check warns and 1 of them has too little data to judge'
    assert monitor_progress([empty]).status == "started"
