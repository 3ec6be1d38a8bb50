"""Alternatives: each need maps to one recommendation, with sourced scope notes; otherwise slime fits."""

import pytest

from core.drafts.alternatives import (
    ALTERNATIVES,
    Need,
    recommend,
    recommend_for_need,
    recommendation_markdown,
)
from core.knowledge.cards import SOURCE_RE


@pytest.mark.parametrize(("need", "choice"), [
    (Need.ENTERPRISE, "miles"),
    (Need.SWAP_BACKENDS, "verl"),
    (Need.PYTORCH_NATIVE, "torchforge"),
    (Need.NONE, "slime"),
], ids=str)
def test_each_need_has_one_recommendation(need, choice):
    rec = recommend_for_need(need)
    assert rec.choice == choice
    assert (rec.alternative is None) is (choice == "slime")
    assert rec.sources and all(SOURCE_RE.match(s) for s in rec.sources)


@pytest.mark.parametrize("needs", [[], [Need.NONE]], ids=str)
def test_no_need_means_slime_fits(needs):
    recs = recommend(needs)
    assert [r.choice for r in recs] == ["slime"]
    assert "slime fits" in recs[0].reason


def test_several_needs_keep_a_stable_order_and_ignore_none():
    recs = recommend([Need.PYTORCH_NATIVE, Need.NONE, Need.ENTERPRISE])
    assert [r.choice for r in recs] == ["miles", "torchforge"]


def test_backend_reason_cites_slime_megatron_only_flag():
    rec = recommend_for_need(Need.SWAP_BACKENDS)
    assert "slime/utils/arguments.py:1592@624b824a" in rec.sources
    assert "megatron" in rec.reason


@pytest.mark.parametrize("alt_id", sorted(ALTERNATIVES), ids=str)
def test_alternatives_state_scope_and_maturity_with_repo_sources(alt_id):
    alt = ALTERNATIVES[alt_id]
    assert alt.url.startswith("https://github.com/")
    assert alt.scope and alt.maturity
    assert any(s.startswith(alt.url) for s in alt.sources)


def test_torchforge_maturity_note_is_conservative():
    assert "experimental" in ALTERNATIVES["torchforge"].maturity


def test_markdown_summary_lists_recommendation_and_sources():
    text = recommendation_markdown(recommend([Need.ENTERPRISE]))
    assert "**miles**" in text and "README.md:120@624b824a" in text and "Maturity:" in text
