"""The one search: flags in any spelling or with a typo, rules by code, slime's messages by their text or a
traceback, cards (new ones picked up), grouped results; and the ask CLI's contract."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from core.cli import main as cli_main
from core.knowledge import search as search_module
from core.knowledge.answers import grouped
from core.knowledge.errors import load_error_index
from core.knowledge.search import SearchIndex, explain, get_index, search
from core.launch import list_rules, load_catalog

ROOT = Path(__file__).resolve().parents[2]
CARD = """---
title: {title}
summary: A card written during the test.
tags: [test]
sources:
  - slime/utils/arguments.py:1846@624b824a
applies_to: 624b824a
---
## Why
The zebrafish heuristic, explained with `--kl-coef`.
"""


@pytest.fixture(scope="module")
def index() -> SearchIndex:
    return get_index()


def _sample(items, n):
    step = max(1, len(items) // n)
    return items[::step][:n]


def test_flags_are_found_first_by_their_own_name_in_three_spellings(index):
    flags = _sample(load_catalog().flags, 40)
    for spec in flags:
        name = spec.primary
        words = name.lstrip("-").replace("-", " ").replace("_", " ")
        for query in (name, name.lstrip("-").replace("-", "_"), words):
            first = index.search(query, limit=3)[0]
            assert (first.kind, first.id) == ("flag", name), (query, first)


def test_rollout_batch_size_in_every_spelling_and_with_a_typo(index):
    for query in ("--rollout-batch-size", "rollout_batch_size", "rollout batch size", "--rolout-batch-size",
                  "rollout_bach_size", "--rollout-batch-size=32", "--rollout-batch-size 32"):
        first = index.search(query, limit=5)[0]
        assert (first.kind, first.id) == ("flag", "--rollout-batch-size"), query


def test_rules_are_found_first_by_their_code(index):
    from core.data import RULES as DATA_RULES

    codes = [r.code for r in list_rules()] + list(DATA_RULES)
    for code in codes:
        for query in (code, code.lower()):
            first = index.search(query, limit=3)[0]
            assert (first.kind, first.id) == ("rule", code), query


def _filled(template: str) -> str:
    return re.sub(r"\{[^{}]*\}", "42", template)


def _distinct_entries():
    """Messages whose fixed words no other message shares (two raises of one text are one message to a user)."""
    entries = load_error_index().entries
    counts: dict[str, int] = {}
    for e in entries:
        counts[e.fixed_words] = counts.get(e.fixed_words, 0) + 1
    return [e for e in entries if counts[e.fixed_words] == 1 and len(e.fixed_words) >= 20]


def test_error_messages_are_found_first_by_their_message(index):
    entries = _sample(_distinct_entries(), 60)
    assert len(entries) >= 40
    for entry in entries:
        pasted = f"{entry.exception.rsplit('.', 1)[-1]}: {_filled(entry.template)}"
        first = index.search(pasted, limit=3)[0]
        assert (first.kind, first.id) == ("error", entry.id), (pasted, first)
        assert first.source == entry.source and first.source.endswith("@624b824a")


def test_a_traceback_into_slime_finds_the_line_even_with_another_message(index):
    for entry in _sample(load_error_index().entries, 30):
        traceback = ("Traceback (most recent call last):\n"
                     '  File "/home/me/slime/train.py", line 12, in <module>\n    main()\n'
                     f'  File "/home/me/work/slime/{entry.path}", line {entry.line}, in {entry.function}\n'
                     "    ...\nRuntimeError: text that matches nothing in slime qqzzxx\n")
        first = index.search(traceback, limit=3)[0]
        assert (first.kind, first.id) == ("error", entry.id)


def test_a_ray_actor_traceback_outside_slime_matches_on_the_fixed_words(index):
    pasted = ("(MegatronTrainRayActor pid=4242) Traceback (most recent call last):\n"
              '(MegatronTrainRayActor pid=4242)   File "/usr/lib/python3/site-packages/ray/x.py", line 9, in f\n'
              "(MegatronTrainRayActor pid=4242) AssertionError: rollout_num_gpus_per_engine (3) must be divisible "
              "by sglang_pipeline_parallel_size (2)\n")
    first = index.search(pasted, limit=3)[0]
    assert first.kind == "error" and first.id == "slime/backends/sglang_utils/arguments.py:175"
    why = explain(index, index.error(first.id))
    assert ("SGL001", "Engine GPUs not divisible by the SGLang pipeline size") in why.rules
    assert "sglang_pp_size" in why.meaning and "SGL001" in why.fix


def test_a_data_error_explains_the_fix_and_links_the_card(index):
    entry = next(e for e in load_error_index().entries if e.template.startswith("tools must be a list"))
    why = explain(index, entry)
    assert [code for code, _ in why.rules] == ["DATA011"]
    assert "list of tool schemas" in why.fix
    assert "data-formats" in [card for card, _ in why.cards]


def test_model_scripts_and_cards_are_searchable(index):
    assert (search("qwen3-4B", 1)[0].kind, search("qwen3-4B", 1)[0].id) == ("model_script", "qwen3-4B")
    kinds = {r.kind for r in search("colocate async", 20)}
    assert {"card", "section"} & kinds and "rule" in kinds


def test_a_topic_word_puts_its_card_before_the_many_flags_that_contain_it(index):
    results = index.search("batch", limit=5)
    assert results[0].kind in ("card", "section") and "batch" in results[0].title.lower()
    assert [r.kind for r in index.search("how do I resume from a checkpoint", 3)].count("flag") <= 1


def test_results_are_grouped_by_kind_in_order_of_the_best(index):
    results = index.search("--kl-coef", limit=20)
    groups = grouped(results)
    assert next(iter(groups)) == "flag"
    assert sum(len(v) for v in groups.values()) == len(results)


def test_hostile_queries_are_data(index):
    for query in ('"; DROP TABLE docs; --', "NEAR(a b) OR * ^", "\x00", "a" * 50_000, "<script>alert(1)</script>",
                  "docs MATCH '*'", "-" * 300):
        results = index.search(query, limit=5)
        assert isinstance(results, list)
    assert index.search("   ") == []


def test_a_new_card_is_picked_up_without_a_restart(tmp_path, monkeypatch):
    monkeypatch.setattr(search_module, "STAMP_TTL_S", 0.0)
    (tmp_path / "first.md").write_text(CARD.format(title="Zebrafish one"), encoding="utf-8")
    hits = [r for r in get_index(tmp_path).search("zebrafish", 10) if r.kind == "card"]
    assert [r.id for r in hits] == ["first"]
    (tmp_path / "second.md").write_text(CARD.format(title="Zebrafish two"), encoding="utf-8")
    hits = [r for r in get_index(tmp_path).search("zebrafish", 10) if r.kind == "card"]
    assert sorted(r.id for r in hits) == ["first", "second"]
    (tmp_path / "broken.md").write_text("---\ntitle: [unclosed\n---\nzebrafish\n", encoding="utf-8")
    (tmp_path / "no-sources.md").write_text(CARD.format(title="Zebrafish three").replace(
        "sources:\n  - slime/utils/arguments.py:1846@624b824a\n", ""), encoding="utf-8")
    hits = [r for r in get_index(tmp_path).search("zebrafish", 10) if r.kind == "card"]
    assert sorted(r.id for r in hits) == ["first", "second"]  # cards that do not parse are left out, not fatal
    sections = [r for r in get_index(tmp_path).search("zebrafish heuristic", 10) if r.kind == "section"]
    assert sections and sections[0].id.endswith("#why") and sections[0].source.startswith("slime/utils/arguments")


# --------------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------------
def test_ask_json_contract(capsys):
    assert cli_main(["ask", "--rollout-batch-size", "--limit", "3", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"results", "found", "notice", "error"} and 1 <= len(out["results"]) <= 3
    assert (out["found"], out["notice"], out["error"]) == (True, None, None)  # not a pasted error
    first = out["results"][0]
    assert set(first) == {"kind", "id", "title", "snippet", "source", "match"} and first["match"] == "exact"
    assert (first["kind"], first["id"], first["source"]) == ("flag", "--rollout-batch-size",
                                                             "slime/utils/arguments.py:690@624b824a")


def test_ask_exit_codes(capsys):
    assert cli_main(["ask", "qqzzxxvv"]) == 1
    assert "Nothing found" in capsys.readouterr().out
    assert cli_main(["ask"]) == 2
    assert cli_main(["ask", "x", "--limit", "0"]) == 2
    assert cli_main(["ask", "x", "--format", "yaml"]) == 2
    assert cli_main(["check-args", "--not-an-option-of-check-args", "f.sh"]) == 2  # other commands stay strict


def test_ask_reads_a_traceback_from_stdin():
    traceback = ('Traceback (most recent call last):\n  File "/x/slime/utils/arguments.py", line 1846, in v\n'
                 "AssertionError: Only one of kl_coef and kl_loss_coef can be set\n")
    done = subprocess.run([sys.executable, "-m", "core", "ask", "-", "--format", "json", "--limit", "2"],
                          input=traceback, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    first = json.loads(done.stdout)["results"][0]
    assert (first["kind"], first["id"], first["source"]) == ("error", "slime/utils/arguments.py:1846",
                                                             "slime/utils/arguments.py:1846@624b824a")
    text = subprocess.run([sys.executable, "-m", "core", "ask", "-"], input=traceback, capture_output=True,
                          text=True, cwd=ROOT, timeout=120).stdout
    assert "caught before launch by SLIME003" in text
    assert "[matches] AssertionError: Only one of kl_coef and kl_loss_coef can be set" in text
    assert ("matched: every fixed word of the final exception's message, in order and your traceback's line "
            "(/x/slime/utils/arguments.py, line 1846)") in text


def test_ask_imports_nothing_heavy():
    """The ask path alone (other commands' modules bring their own imports) loads no UI or dataframe library."""
    code = ("import argparse, sys; from core.cli import ask; p = argparse.ArgumentParser(); "
            "ask.register(p.add_subparsers()); a = p.parse_args(['ask', 'SLIME001', '--format', 'json']); "
            "a.func(a); "
            "print(sorted(m for m in ('streamlit', 'pandas', 'plotly', 'tbparse', 'pyarrow') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.stdout.strip().endswith("[]"), done.stdout + done.stderr


def test_about_a_flag_names_the_cards_and_the_messages_that_check_it(index):
    cards, messages = index.about_flag("--rollout-batch-size", "rollout_batch_size")
    assert "batch-size" in [c.id for c in cards]
    assert "slime/utils/arguments.py:1974" in [e.id for e in messages]
    assert index.about_flag("--no-such-flag", "no_such_flag") == ([], [])


@pytest.mark.parametrize("how", ["argv", "stdin"])
def test_ask_with_bytes_that_are_not_utf8_searches_and_says_so(how):
    """Issue 22, defect 4: `ask $'--rollout-batch\\xff'` (or the same bytes piped) ended in a
    UnicodeEncodeError traceback from the trigram lookup."""
    import os

    query = b"--rollout-batch\xff"
    env = {**os.environ, "LC_ALL": "C.UTF-8", "PYTHONIOENCODING": "utf-8:strict"}
    args = [sys.executable, "-m", "core", "ask", "--format", "json", "--limit", "3"]
    if how == "argv":
        done = subprocess.run([*args, os.fsdecode(query)], capture_output=True, cwd=ROOT, env=env, timeout=120)
    else:
        done = subprocess.run([*args, "-"], input=query, capture_output=True, cwd=ROOT, env=env, timeout=120)
    stderr = done.stderr.decode()
    assert done.returncode == 0 and "Traceback" not in stderr, stderr
    assert "bytes that are not UTF-8" in stderr
    results = json.loads(done.stdout.decode("utf-8"))["results"]
    assert results[0]["id"] == "--rollout-batch-size"


def test_search_takes_lone_surrogates_from_any_caller(index):
    for query in ("--rollout-batch\udcff", "kl loss \ud800", "\udcff\udcfe", "AssertionError: \udcff"):
        assert isinstance(index.search(query), list)
        assert isinstance(index.close_flags(query), list)


QUERIES = ("--rollout-batch-size", "--rolout-batch-size", "SLIME003", "kl loss", "rollout batch size",
           "AssertionError: Only one of kl_coef and kl_loss_coef can be set", "qwen3 4b", "dynamic sampling")


def _results(index):
    return [[(r.kind, r.id, r.title, r.snippet, r.source) for r in index.search(q, limit=8)] for q in QUERIES]


def test_the_search_modules_cards_directory_is_the_cards_modules():
    from core.knowledge.cards import CARDS_DIR

    assert search_module.CARDS_DIR == CARDS_DIR


def test_a_query_that_starts_with_an_equals_sign_is_searched_not_crashed():
    """Found by the traceback reader's property test: `=`, `= x` or `=--flag` left no word before the `=`."""
    for text in ("=", "= x", "=--colocate"):
        answer = get_index().ask(text)
        assert isinstance(answer.results, list)
