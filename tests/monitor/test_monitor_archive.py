"""Uploads and zips: unpacked only into the temporary directory; traversal, links and bombs refused."""

from __future__ import annotations

import stat
import zipfile
from pathlib import Path

import pytest

from core.monitor import archive
from core.monitor.archive import safe_name, save_uploads, unpack_zip


def _zip(tmp_path, members: list[tuple[zipfile.ZipInfo | str, bytes]]):
    p = tmp_path / "up.zip"
    with zipfile.ZipFile(p, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for info, data in members:
            zf.writestr(info, data)
    return p


def _inside(path: str, root) -> bool:
    return str(path).startswith(str(root))


@pytest.mark.parametrize("name", ["../evil", "a/../../evil", "/etc/evil", "C:/evil", "..\\evil"], ids=str)
def test_traversal_and_absolute_members_are_refused(tmp_path, name):
    work = tmp_path / "work"
    work.mkdir()
    out = unpack_zip(_zip(tmp_path, [(name, b"x"), ("run/events.out.tfevents.1.a", b"y")]), work)
    assert any("Skipped" in n.message for n in out.notices)
    assert all(_inside(f, work) for f in out.files)
    assert not (tmp_path / "evil").exists()
    assert len(out.files) == 1


def test_symlink_member_is_refused(tmp_path):
    info = zipfile.ZipInfo("run/link")
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    work = tmp_path / "work"
    work.mkdir()
    out = unpack_zip(_zip(tmp_path, [(info, b"/etc/passwd")]), work)
    assert out.files == [] and "links" in out.notices[0].message


def test_zip_bomb_is_refused(tmp_path, monkeypatch):
    work = tmp_path / "work"
    work.mkdir()
    out = unpack_zip(_zip(tmp_path, [("run/events.out.tfevents.1.a", b"\0" * (8 * 1024 * 1024))]), work)
    assert out.files == [] and "zip bomb" in out.notices[0].message
    monkeypatch.setattr(archive, "MAX_TOTAL_BYTES", 1000)
    out = unpack_zip(_zip(tmp_path, [("a.tfevents", b"1" * 800), ("b.tfevents", b"2" * 800)]), work)
    assert out.files == [] and "limit" in out.notices[0].message


def test_too_many_members_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(archive, "MAX_MEMBERS", 3)
    work = tmp_path / "work"
    work.mkdir()
    out = unpack_zip(_zip(tmp_path, [(f"f{i}", b"x") for i in range(5)]), work)
    assert out.files == [] and "5 members" in out.notices[0].message


def test_not_a_zip(tmp_path):
    p = tmp_path / "x.zip"
    p.write_bytes(b"PK nope")
    out = unpack_zip(p, tmp_path)
    assert out.notices[0].level == "error" and "not a readable zip" in out.notices[0].message


def test_good_zip_keeps_its_layout(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    out = unpack_zip(_zip(tmp_path, [("proj/exp1/events.out.tfevents.1.a", b"a"),
                                     ("proj/exp2/events.out.tfevents.2.b", b"b")]), work)
    assert sorted(f.split("unzipped/")[1] for f in out.files) == ["proj/exp1/events.out.tfevents.1.a",
                                                                 "proj/exp2/events.out.tfevents.2.b"]


@pytest.mark.parametrize(("raw", "expected"), [("../../x.tfevents", "x.tfevents"), ("a b$c", "a_b_c"),
                                               ("", "upload"), ("..", "upload")], ids=str)
def test_upload_names_are_flattened(raw, expected):
    assert safe_name(raw) == expected


def test_uploads_without_tfevents_are_renamed_and_kept_apart(tmp_path):
    out = save_uploads([("run.bin", b"1"), ("run.bin", b"2"), ("../events.out.tfevents.x", b"3")], tmp_path,
                       "../my run")
    names = sorted(p.rsplit("/", 1)[1] for p in out.files)
    assert names == ["events.out.tfevents.run.bin", "events.out.tfevents.run.bin.1", "events.out.tfevents.x"]
    assert all(_inside(p, tmp_path) for p in out.files)
    assert any("tfevents" in n.message for n in out.notices)


def test_uploaded_event_file_with_a_browser_name_is_still_read(tmp_path):
    from core.monitor.tensorboard.run import read_run
    from core.monitor.tensorboard.synthetic import file_version_event, scalar_event, write_raw_event_file

    src = write_raw_event_file(tmp_path / "src" / "events.out.tfevents.1.a",
                               [file_version_event()] + [scalar_event("rollout/raw_reward", 0.5, s) for s in range(4)])
    out = save_uploads([("download (1)", src.read_bytes())], tmp_path / "work", "my-run")
    run = read_run(out.directory, name="my-run")
    assert run.series["rollout/raw_reward"].steps.tolist() == [0, 1, 2, 3]


def test_zip_of_a_project_unpacks_to_runs(tmp_path):
    from core.monitor.tensorboard.run import discover_runs, read_run
    from core.monitor.tensorboard.synthetic import file_version_event, frame_record, scalar_event

    data = b"".join(frame_record(p) for p in [file_version_event(), scalar_event("train/loss", 1.0, 0)])
    work = tmp_path / "work"
    work.mkdir()
    out = unpack_zip(_zip(tmp_path, [("proj/a/events.out.tfevents.1.x", data), ("proj/b/events.out.tfevents.2.y", data),
                                     ("../../escape.tfevents", data)]), work)
    runs = discover_runs(Path(out.directory))
    assert [r.name for r in runs] == ["a", "b"]
    assert read_run(runs[0]).series["train/loss"].values.tolist() == [1.0]
    assert not (tmp_path / "escape.tfevents").exists()


@pytest.fixture
def private_tmp(tmp_path, monkeypatch):
    import tempfile

    d = tmp_path / "tmp"
    d.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(d))
    return d


def test_upload_workdir_is_removed_explicitly_or_when_dropped(private_tmp):
    import gc

    kept = archive.UploadWorkdir()
    (kept.path / "events.out.tfevents.1").write_bytes(b"x")
    assert kept.path.parent == private_tmp and kept.exists
    kept.remove()
    assert not kept.path.exists()
    kept.remove()  # twice is harmless
    dropped = archive.UploadWorkdir()
    path = dropped.path
    del dropped
    gc.collect()
    assert not path.exists()


def test_remove_workdir_touches_only_our_directories(private_tmp, tmp_path):
    foreign = private_tmp / "someone-else"
    foreign.mkdir()
    elsewhere = tmp_path / "slime-monitor-not-in-tmp"
    elsewhere.mkdir()
    archive.remove_workdir(foreign)
    archive.remove_workdir(elsewhere)
    assert foreign.exists() and elsewhere.exists()


def test_stale_sweep_removes_only_old_workdirs(private_tmp):
    import os
    import time

    old = archive.new_workdir()
    (old / "f").write_bytes(b"x")
    fresh = archive.new_workdir()
    other = private_tmp / "other-old"
    other.mkdir()
    long_ago = time.time() - archive.STALE_WORKDIR_SECONDS - 60
    os.utime(old, (long_ago, long_ago))
    os.utime(other, (long_ago, long_ago))
    assert archive.sweep_stale_workdirs() == 1
    assert not old.exists() and fresh.exists() and other.exists()


@pytest.mark.parametrize(("a", "b", "same"), [
    ([("e.tfevents", b"abcd")], [("e.tfevents", b"abce")], False),  # same name and size, other bytes
    ([("e.tfevents", b"abcd")], [("f.tfevents", b"abcd")], False),
    ([("ab", b"c")], [("a", b"bc")], False),  # name/content boundary is part of the hash
    ([("e.tfevents", b"abcd")], [("e.tfevents", b"abcd")], True),
], ids=str)
def test_content_digest(a, b, same):
    assert (archive.content_digest(a) == archive.content_digest(b)) is same


def test_upload_slots_hold_one_upload_per_box_and_delete_the_replaced_one():
    from core.monitor import UploadSlots
    from core.monitor.tensorboard.synthetic import file_version_event, frame_record, scalar_event

    data = frame_record(file_version_event()) + frame_record(scalar_event("rollout/raw_reward", 0.5, 0))
    slots = UploadSlots()
    files = [("events.out.tfevents.1.host", data)]
    assert slots.keep("files", ("id1",), lambda: files)  # a new upload: the user's own input
    first = slots.held["files"].workdir.path
    assert not slots.keep("files", ("id1",), lambda: pytest.fail("hashed again"))  # same upload: kept as is
    [source], notices = slots.sources("my run")
    assert source["label"] == "my run" and source["kind"] == "tensorboard" and notices == []
    assert slots.keep("files", ("id2",), lambda: [("notes.txt", b"hello")])  # replaced: the old folder goes
    assert not first.exists()
    sources, notices = slots.sources("my run")
    assert len(sources) == 1 and any("lacks 'tfevents'" in n["message"] for n in notices)
    assert not slots.keep("files", (), lambda: [])  # cleared
    assert slots.held == {}
