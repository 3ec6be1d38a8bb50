"""A newcomer's first hour (issue 28), the Ask side: citations with `__init__` shown as written (cards, the Ask
page, `ask`'s text), a pasted CUDA out-of-memory traceback read whole with who raised it and where slime's
innermost frame is, few and distinct results first, a Search button, and the card search ranked."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.cli import main as cli_main
from core.knowledge.answers import Result, distinct
from core.knowledge.cards import display_markdown, get_card, mark_code
from core.knowledge.search import get_index
from core.knowledge.snippets import sentences

ROOT = Path(__file__).resolve().parents[2]
OOM = (
    "Traceback (most recent call last):\n"
    '  File "/root/slime/train.py", line 106, in <module>\n    train(args)\n'
    '  File "/root/slime/slime/backends/megatron_utils/model.py", line 233, in forward_only\n'
    "    output = model(**batch)\n"
    '  File "/usr/local/lib/python3.12/dist-packages/torch/nn/modules/module.py", line 1773, in _wrapped_call_impl\n'
    "    return self._call_impl(*args, **kwargs)\n"
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 14.84 GiB. GPU 0 has a total capacity of 79.11 "
    "GiB of which 3.52 GiB is free. Including non-PyTorch memory, this process has 75.58 GiB memory in use. Of "
    "the allocated memory 70.12 GiB is allocated by PyTorch, and 4.21 GiB is reserved by PyTorch but "
    "unallocated. If reserved but unallocated memory is large try setting "
    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.\n")


def flat(at) -> str:
    out = [e.value for e in (*at.markdown, *at.caption, *at.info, *at.success, *at.warning, *at.error)]
    return " ".join(out + [e.label for e in at.expander]).replace("\\", "")


# -- item 4: `__init__` survives every rendering -------------------------------------------------------------
@pytest.mark.parametrize(("markdown", "plain"), [
    ("strict (slime/rollout/rm_hub/__init__.py:60-97@624b824a). Then", "strict (slime/rollout/rm_hub/__init__.py:60-97@624b824a)."),
    ("The `__init__` method and **bold** words.", "The __init__ method and bold words."),
    ("See __init__.py:4 and x/__init__.py.", "See __init__.py:4 and x/__init__.py."),
    ("A __strong phrase__ here.", "A strong phrase here."),
    ("Code `a**b**c` stays.", "Code a**b**c stays."),
])
def test_snippets_keep_names_and_paths_with_underscores(markdown, plain):
    assert sentences(markdown)[0] == plain


def test_the_reward_card_cites_init_py_in_ask_and_its_text():
    answer = get_index().ask("reward is always zero", limit=10)
    top = answer.results[0]
    assert top.id == "symptom-reward-zero" and "rm_hub/__init__.py" in top.snippet and "/init.py" not in top.snippet
    for r in answer.results:
        assert "rm_hub/init.py" not in r.snippet and "rm_hub/init.py" not in r.title


def test_ask_text_prints_init_py_whole(capsys):
    assert cli_main(["ask", "reward", "is", "always", "zero"]) == 0
    out = capsys.readouterr().out
    assert "rm_hub/__init__.py" in out and "rm_hub/init.py" not in out


def test_cards_show_bare_citations_and_dunder_names_as_code():
    assert mark_code("see rm_hub/__init__.py:21-53 and __init__.py:4, or `x/__init__.py` and **bold**") == \
        "see `rm_hub/__init__.py:21-53` and `__init__.py:4`, or `x/__init__.py` and **bold**"
    body = get_card("symptom-reward-zero").body
    shown = display_markdown(body)
    assert "`slime/rollout/rm_hub/__init__.py:60-97@624b824a`" in shown
    assert " __init__" not in shown.replace("`slime/rollout/rm_hub/__init__", "")


def test_the_knowledge_page_renders_citations_as_code_links_and_summaries_with_code(app_env, make_app):
    at = make_app("pages/knowledge.py")
    at.query_params["card"] = "symptom-reward-zero"
    at.run()
    assert not at.exception
    body = next(m.value for m in at.markdown if "rm_hub" in m.value)
    assert "[`slime/rollout/rm_hub/__init__.py:60-97@624b824a`](https://github.com/" in body
    summary = next(c.value for c in at.caption if "When every reward is 0" in c.value)
    assert "`</think>`" in summary and "\\`" not in summary  # a code span, not escaped backticks


# -- item 5: a pasted CUDA out-of-memory traceback, few distinct results ------------------------------------------
def test_a_cuda_oom_paste_is_read_at_a_word_and_says_who_raised_it():
    answer = get_index().ask(OOM)
    assert answer.read_as.endswith("…") and len(answer.read_as) < 340
    words = set(OOM.split())
    assert all(w in words for w in answer.read_as.rstrip("…").split()[1:])  # no word cut in the middle
    assert answer.raised_in == "PyTorch" and answer.own_layer == "slime"
    assert answer.where_raised == ("raised in PyTorch, called from slime: its innermost frame is "
                                   "/root/slime/slime/backends/megatron_utils/model.py, line 233, in forward_only")


def test_ask_text_says_who_raised_a_pasted_error(capsys, monkeypatch):
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO(OOM))
    cli_main(["ask", "-"])
    out = capsys.readouterr().out
    assert "Raised in PyTorch, called from slime: its innermost frame is /root/slime/slime/backends/" in out
    assert "raised in slime" not in out


def test_results_that_read_the_same_are_folded_into_one():
    a = Result(kind="error", id="a.py:1", title="AssertionError: x", snippet="", source="a.py:1@1dcf0daf")
    b = Result(kind="error", id="b.py:9", title="AssertionError: x", snippet="", source="b.py:9@1dcf0daf")
    c = Result(kind="card", id="c", title="AssertionError: x", snippet="", source="c.py:1@624b824a")
    assert distinct([a, c, b]) == [a.model_copy(update={"also": ["b.py:9@1dcf0daf"]}), c]
    titles = [(r.kind, r.title) for r in distinct(get_index().ask("reward is always zero", limit=40).results)]
    assert len(titles) == len(set(titles))


def test_the_ask_page_shows_the_best_five_then_more_on_request_and_has_a_search_button(app_env, make_app):
    at = make_app("pages/ask.py").run()
    assert [b for b in at.button if str(b.label) == "Search"]
    at.text_area(key="ask_query").input("reward is always zero")
    next(b for b in at.button if str(b.label) == "Search").click().run()
    assert not at.exception
    text = flat(at)
    assert "The best 5 of" in text
    first = [s.value for s in at.subheader]
    assert at.toggle(key="ask_more").label.startswith("Show ")
    at.toggle(key="ask_more").set_value(True).run()
    assert "The best 5" not in flat(at) and len(at.subheader) >= len(first)
    assert flat(at).count("Inference must always gather TP logits") <= 2  # one result (title and its message)


def test_the_ask_page_says_who_raised_a_pasted_oom(app_env, make_app):
    at = make_app("pages/ask.py")
    at.query_params["q"] = OOM
    at.run()
    assert not at.exception
    text = flat(at)
    assert "(raised in PyTorch, called from slime: its innermost frame is /root/slime/slime/backends/" in text
    assert "raised in slime)" not in text


# -- item 9: the card search ranks -----------------------------------------------------------------------------
def test_the_card_search_shows_the_best_few_first(app_env, make_app):
    at = make_app("pages/knowledge.py").run()
    at.text_input(key="kn_query").input("out of memory").run()
    assert not at.exception
    labels = [e.label for e in at.expander]
    assert len(labels) == 5 and "memory" in labels[0].lower()
    assert "The 5 best of the" in flat(at)
    at.toggle(key="kn_more").set_value(True).run()
    assert len(at.expander) > 5 and [e.label for e in at.expander][:5] == labels


# -- item 9: first visits find their modules loaded ------------------------------------------------------------
def test_the_app_warms_the_workflow_pages_once_in_the_background(app_env, make_app):
    import sys

    from ui import common

    at = make_app().run()
    assert not at.exception
    [thread] = common._WARMING
    thread.join(timeout=120)
    assert not thread.is_alive() and all(name in sys.modules for name in common.WARM_MODULES)
    make_app("pages/profile.py").run()
    assert len(common._WARMING) == 1  # once per process, not per page or session
