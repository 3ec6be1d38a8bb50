"""Start-up of `ask` (issue 28): the search index is saved as an image in the app's cache folder, named by a
hash of the knowledge files and of the code the documents come from, and read back by the next process
instead of being built again; the answers are the same, a damaged image is rebuilt, a changed file makes a
new image, and nothing is written into the package folder."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from core.knowledge import index_image
from core.knowledge import search as search_module
from core.knowledge.cards import CARDS_DIR
from core.knowledge.layers import load_all_messages
from core.knowledge.search import SearchIndex
from core.launch import load_catalog

ROOT = Path(__file__).resolve().parents[2]
QUERIES = ("--rollout-batch-size", "--rolout-batch-size", "SLIME003", "kl loss", "rollout batch size",
           "AssertionError: Only one of kl_coef and kl_loss_coef can be set", "qwen3 4b", "dynamic sampling",
           "reward is always zero", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB")


def _results(index: SearchIndex) -> list:
    return [[(r.kind, r.id, r.title, r.snippet, r.source, r.match) for r in index.search(q, limit=8)] for q in QUERIES]


@pytest.fixture(scope="module")
def built() -> SearchIndex:
    return SearchIndex(search_module.readable_cards(CARDS_DIR), load_catalog(), load_all_messages())


def test_an_index_read_from_its_image_answers_as_the_built_one(built):
    again = SearchIndex(lambda: search_module.readable_cards(CARDS_DIR), load_catalog, load_all_messages,
                        image=built.image())
    assert not built.from_image and again.from_image
    assert callable(again._catalog) and callable(again._cards)  # neither was needed to start
    assert _results(again) == _results(built)
    assert again.counts() == built.counts()
    assert again.close_flags("--rolout-batch") == built.close_flags("--rolout-batch")
    entry = again.error("slime/utils/arguments.py:1846") or next(e for e in again.errors.entries if e.kind == "assert")
    assert again.explain_error(entry) == built.explain_error(entry)


@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty", "other-sqlite"])
def test_a_damaged_or_foreign_image_is_rebuilt_not_trusted(built, damage):
    image = built.image()
    if damage == "garbage":
        image = b"SQLite format 3\x00" + bytes(range(256)) * 40
    elif damage == "truncated":
        image = image[: len(image) // 3]
    elif damage == "empty":
        image = b""
    else:
        other = sqlite3.connect(":memory:")
        other.execute("CREATE TABLE shown(rowid INTEGER PRIMARY KEY, kind, id, title, summary, source, text)")
        other.execute("INSERT INTO shown VALUES (0, 'flag', '--x', '<b>x</b>', 1, 2, 3)")
        image = other.serialize()
    index = SearchIndex(search_module.readable_cards(CARDS_DIR), load_catalog(), load_all_messages(), image=image)
    assert not index.from_image and _results(index) == _results(built)


@pytest.fixture
def fresh_cache():
    search_module._index_for.cache_clear()
    search_module._STAMPS.clear()
    yield
    search_module._index_for.cache_clear()
    search_module._STAMPS.clear()


def test_the_image_is_kept_in_the_home_and_the_next_process_reads_it(tmp_path, monkeypatch, fresh_cache):
    monkeypatch.setenv("SLIME_ASSISTANT_HOME", str(tmp_path / "home"))
    before = {p for p in (ROOT / "core").rglob("*") if p.suffix not in (".pyc",)} | set((ROOT / "knowledge").rglob("*"))
    first = search_module.get_index()
    [saved] = list((tmp_path / "home" / "search-index").glob("index-*.sqlite"))
    assert saved.name == f"index-{index_image.image_key(index_image.data_files(CARDS_DIR))}.sqlite"
    search_module._index_for.cache_clear()
    second = search_module.get_index()
    assert not first.from_image and second.from_image
    assert _results(second) == _results(first)
    after = {p for p in (ROOT / "core").rglob("*") if p.suffix not in (".pyc",)} | set((ROOT / "knowledge").rglob("*"))
    assert after == before  # nothing written beside the package (an installed wheel may be read-only)


def _key(cards: Path) -> str | None:
    return index_image.image_key(index_image.data_files(cards))


def test_the_image_key_follows_the_contents_of_the_knowledge_files(tmp_path):
    cards = tmp_path / "cards"
    shutil.copytree(CARDS_DIR, cards)
    key = _key(cards)
    assert key == _key(cards)
    path = sorted(cards.glob("*.md"))[0]
    text = path.read_text(encoding="utf-8")
    path.write_text(text + "\nOne more line.\n", encoding="utf-8")
    changed = _key(cards)
    assert changed != key
    path.write_text(text, encoding="utf-8")  # the same contents again (a newer time): the same image
    assert _key(cards) == key
    (cards / "new-card.md").write_text(text, encoding="utf-8")
    assert _key(cards) not in (key, changed)


def test_a_home_that_cannot_be_written_still_answers(tmp_path, monkeypatch, fresh_cache):
    blocker = tmp_path / "home"
    blocker.write_text("a file where the home folder should be")
    monkeypatch.setenv("SLIME_ASSISTANT_HOME", str(blocker))
    index = search_module.get_index()
    assert not index.from_image and index.search("--rollout-batch-size")[0].id == "--rollout-batch-size"
