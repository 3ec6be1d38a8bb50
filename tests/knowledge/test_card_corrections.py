"""The audit's corrections stay made: what the cards and rule sources now say (issue 11). The lines they
cite are verified against the pinned sources by tools/check_citations.py (tests/knowledge/test_check_citations.py)."""

from __future__ import annotations

import re

from core.knowledge.cards import get_card
from core.launch.rules import RULES


def body(card_id: str) -> str:
    card = get_card(card_id)
    assert card is not None
    return " ".join(card.body.split())


def test_update_weights_interval_is_not_said_to_change_nothing():
    for card_id in ("async-training", "source-vs-folklore"):
        text = body(card_id)
        assert "--keep-old-actor" in text and "slime/backends/megatron_utils/actor.py:" in text
    assert "changes nothing" not in body("source-vs-folklore")


def test_engine_tensor_parallel_size_depends_on_the_sglang_pipeline_size():
    assert "its tensor-parallel size when `--sglang-pp-size` is 1" in body("gpu-placement")


def test_multi_turn_card_custom_rm_gets_the_list_and_search_r1_shares_four_gpus():
    text = body("multi-turn-agent")
    assert "even without `--group-rm`" in text and "sglang_rollout.py:270-279" in text
    assert "4 GPUs that training and rollout share" in text and "4 training + 4 rollout" not in text


def test_ppo_kl_is_drift_from_the_rollout_policy():
    text = body("monitoring")
    assert "not from the reference model" in text and "loss.py:1033" in text


def test_checkpoints_card_iter_folders():
    text = body("checkpoints")
    assert "checkpoint.py:121-124" in text and "latest_checkpointed_iteration.txt" in text


def test_miles_is_read_at_a_pinned_commit_no_later_than_slime():
    card = get_card("alternatives")
    pinned = [s for s in card.sources if "radixark/miles" in s]
    assert pinned and all(re.search(r"/blob/[0-9a-f]{40}/", s) for s in pinned)
    text = body("alternatives")
    assert "--train-backend fsdp" not in text and "2026-08-21" in text
    for highlight in ("MXFP8", "NVFP4", "LoRA", "TITO", "R3", "FSDP2"):
        assert highlight in text


def test_rule_sources_named_by_the_audit():
    assert RULES["ARG011"].source == "slime/backends/sglang_utils/arguments.py:51@624b824a"
    assert RULES["ARG012"].source.startswith("sglang/") and RULES["ARG012"].source.endswith("@v0.5.15.post1")
    assert RULES["BATCH006"].source == "slime/utils/dp_schedule.py:178@624b824a"
    assert RULES["SGL003"].source == "slime/backends/sglang_utils/arguments.py:190@624b824a"
