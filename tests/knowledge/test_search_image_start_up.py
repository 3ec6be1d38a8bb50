"""Start-up of `ask` from the index image (issue 28): the messages are matched from the image's own tables, the
YAML tables' data comes from the image, the image file is opened in place and its key remembered; every one of
these gives the same answers as the index built from the files, and a damaged or stale part is not trusted."""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from core.knowledge import index_image, table_file
from core.knowledge import search as search_module
from core.knowledge.cards import CARDS_DIR
from core.knowledge.errors import match_error
from core.knowledge.layers import load_all_messages
from core.knowledge.search import SearchIndex
from core.launch import load_catalog

PASTES = (
    "AssertionError: Only one of kl_coef and kl_loss_coef can be set",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
    "Traceback (most recent call last):\n  File \"/root/slime/slime/utils/arguments.py\", line 1846, in parse\n"
    "    assert args.rollout_batch_size > 0\nAssertionError\n",
    "rollout batch size", "KeyError: 'model.layers.0.self_attn.q_proj.weight'", "ValueError: unknown thing happened",
)


def _matches(found: list) -> list:
    return [(m.entry.model_dump(), m.how, m.frame, m.confidence) for m in found]


@pytest.fixture(scope="module")
def built() -> SearchIndex:
    return SearchIndex(search_module.readable_cards(CARDS_DIR), load_catalog(), load_all_messages())


def _again(image: bytes | Path) -> SearchIndex:
    return SearchIndex(lambda: search_module.readable_cards(CARDS_DIR), load_catalog, load_all_messages, image=image)


def test_messages_matched_from_the_image_tables_are_those_of_the_loaded_messages(built):
    again = _again(built.image())
    assert again._saved_messages is not None and callable(again._errors)  # nothing loaded to match
    some = [e for e in built.errors.entries if e.template][::97]
    pastes = [*PASTES, *(f"{e.exception}: {e.template.replace('{', '').replace('}', '')}" for e in some),
              *(f'Traceback (most recent call last):\n  File "/x/{e.path}", line {e.line}, in f\n{e.exception}: z\n'
                for e in some)]
    for text in pastes:
        assert _matches(again.match_messages(text, limit=10)) == _matches(match_error(text, built.errors, limit=10))
    assert callable(again._errors)  # still: the image's tables answered every one
    entry = some[0]
    assert again.error(entry.id) == built.error(entry.id) and again.error("no/such.py:1") is None


def test_a_damaged_messages_table_is_given_up_for_the_loaded_messages(built):
    db = sqlite3.connect(":memory:")
    db.deserialize(built.image())
    db.execute("UPDATE messages SET line = 'not a number'")  # every row now fails validation when read
    db.commit()
    again = _again(db.serialize())
    assert again.from_image and again._saved_messages is not None
    for text in PASTES:
        assert _matches(again.match_messages(text)) == _matches(match_error(text, built.errors))
    assert again._saved_messages is None  # given up after the first bad row, not tried again
    db.execute("DROP TABLE message_words")
    db.commit()
    assert _again(db.serialize())._saved_messages is None  # no tables: matched from the loaded messages


def test_an_image_file_is_opened_in_place_and_a_cut_or_odd_file_is_not_used(built, tmp_path):
    where = tmp_path / "index.sqlite"
    where.write_bytes(built.image())
    again = _again(where)
    assert again.from_image and again.search("--rollout-batch-size")[0].id == "--rollout-batch-size"
    assert len(again.docs) == len(built.docs) and [d.id for d in again.docs][:50] == [d.id for d in built.docs][:50]
    cut = tmp_path / "cut.sqlite"
    cut.write_bytes(built.image()[:-4096])  # one page short: SQLite alone would read it until a query failed
    assert not _again(cut).from_image
    if hasattr(os, "mkfifo"):
        fifo = tmp_path / "fifo.sqlite"
        os.mkfifo(fifo)
        assert not _again(fifo).from_image  # never opened: nothing waits on a pipe


def test_yaml_data_from_an_image_is_used_only_for_the_very_same_text():
    text = "entries:\n  - id: a\n    words: [x, y]\n"
    saved = table_file.yaml_as_json(text)
    assert saved is not None
    table_file.use_saved_yaml({table_file.text_key(text): b'{"entries": [{"id": "from-the-image"}]}'})
    try:
        assert table_file.safe_yaml(text) == {"entries": [{"id": "from-the-image"}]}
        assert table_file.safe_yaml(text + "# edited\n") == {"entries": [{"id": "a", "words": ["x", "y"]}]}
    finally:
        table_file._SAVED.pop(table_file.text_key(text))
    assert table_file.yaml_as_json("when: 2024-01-01\n") is None  # a date would come back as text: not kept
    assert table_file.yaml_as_json("1: one\n") is None  # a key that is not text
    assert table_file.yaml_as_json("a: [1\n") is None  # not YAML


def test_the_remembered_image_key_follows_an_edited_card(tmp_path, monkeypatch):
    monkeypatch.setenv("SLIME_ASSISTANT_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(index_image, "KEY_SETTLE_S", 0.0)  # the copies below are new: remember them anyway
    cards = tmp_path / "cards"
    shutil.copytree(CARDS_DIR, cards)
    files = index_image.data_files(cards)
    key = index_image.known_image_key(files)
    assert key == index_image.image_key(files)
    assert len(list((tmp_path / "home" / "search-index").glob("key-*"))) == 1
    real_key = index_image.image_key
    monkeypatch.setattr(index_image, "image_key", lambda _files: pytest.fail("the files were read again"))
    assert index_image.known_image_key(files) == key  # remembered: nothing read
    monkeypatch.setattr(index_image, "image_key", real_key)
    path = sorted(cards.glob("*.md"))[0]
    before = os.stat(path)
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("a", "b", 1), encoding="utf-8")  # the same size
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # and the old times: the change time still tells
    assert index_image.known_image_key(files) == index_image.image_key(files) != key


def test_writing_an_image_keeps_the_newest_images_of_other_contents(tmp_path):
    folder = tmp_path / "search-index"
    folder.mkdir()
    old = []
    for n in range(5):  # five other checkouts' images, the oldest first, none written in the last minute
        path = folder / f"index-{n:032x}.sqlite"
        path.write_bytes(b"x")
        os.utime(path, (1_000_000 + n, 1_000_000 + n))
        old.append(path)
    recent = folder / f"index-{9:032x}.sqlite"
    recent.write_bytes(b"x")  # written a moment ago: kept whatever its rank
    index_image.write_image(folder / f"index-{7:032x}.sqlite", b"image")
    kept = sorted(p.name for p in folder.glob("index-*.sqlite"))
    assert kept == sorted([f"index-{7:032x}.sqlite", recent.name, old[4].name, old[3].name])
