"""Every page of slime's English docs at the pin has a knowledge card that covers its topic."""

from __future__ import annotations

import pytest

from core.knowledge.cards import CARDS_DIR
from core.pins import pinned_source_dir

SLIME_ROOT = pinned_source_dir("slime")
DOCS_EN = SLIME_ROOT / "docs" / "en"

# docs/en page (relative to docs/en) -> the cards that cover its topic. Blog posts are announcements, not
# topics, and are left out on purpose.
DOCS_TOPIC_CARDS: dict[str, tuple[str, ...]] = {
    "advanced/arch-support-beyond-megatron.md": ("arch-beyond-megatron",),
    "advanced/delta-weight-sync.md": ("delta-weight-sync",),
    "advanced/external-rollout-engines.md": ("external-rollout-engines",),
    "advanced/fault-tolerance.md": ("fault-tolerance",),
    "advanced/low-precision.md": ("low-precision",),
    "advanced/megatron-config.md": ("megatron-config",),
    "advanced/observability.md": ("observability", "monitoring"),
    "advanced/on-policy-distillation.md": ("on-policy-distillation",),
    "advanced/pd-disaggregation.md": ("pd-disaggregation",),
    "advanced/reproducibility.md": ("reproducibility",),
    "advanced/sglang-config.md": ("sglang-config",),
    "advanced/speculative-decoding.md": ("speculative-decoding",),
    "developer_guide/ci.md": ("testing-and-ci",),
    "developer_guide/debug.md": ("debugging",),
    "developer_guide/profiling.md": ("profiling-tracing",),
    "developer_guide/trace.md": ("profiling-tracing",),
    "examples/deepseek-r1.md": ("example-recipes",),
    "examples/glm4-9B.md": ("example-recipes",),
    "examples/glm4.7-30B-A3B.md": ("example-recipes",),
    "examples/glm4.7-355B-A32B.md": ("example-recipes", "multi-node"),
    "examples/glm5.2-744B-A40B.md": ("example-recipes", "multi-node"),
    "examples/qwen3-30B-A3B.md": ("example-recipes",),
    "examples/qwen3-4B.md": ("example-recipes", "getting-started"),
    "examples/qwen3-4b-base-openhermes.md": ("sft",),
    "get_started/agent.md": ("agent-adapters", "multi-turn-agent"),
    "get_started/customization.md": ("customization",),
    "get_started/qa.md": ("faq",),
    "get_started/quick_start.md": ("getting-started", "dynamic-sampling", "multi-node", "checkpoints"),
    "get_started/usage.md": ("argument-categories", "advantage-estimators", "gpu-placement", "data-formats"),
    "platform_support/amd_tutorial.md": ("amd-rocm",),
}
SKIPPED_DOCS = ("blogs/",)


def test_every_mapped_card_exists():
    card_ids = {p.stem for p in CARDS_DIR.glob("*.md")}
    missing = {page: [c for c in cards if c not in card_ids]
               for page, cards in DOCS_TOPIC_CARDS.items() if any(c not in card_ids for c in cards)}
    assert not missing, f"docs pages mapped to cards that do not exist: {missing}"


@pytest.mark.skipif(not DOCS_EN.is_dir(), reason="slime's docs at the pin are not on this machine")
def test_every_docs_page_at_the_pin_is_mapped():
    pages = sorted(str(p.relative_to(DOCS_EN)) for p in DOCS_EN.rglob("*.md"))
    unmapped = [p for p in pages if not p.startswith(SKIPPED_DOCS) and p not in DOCS_TOPIC_CARDS]
    assert not unmapped, f"docs pages without a card: {unmapped}"
    stale = [p for p in DOCS_TOPIC_CARDS if not (DOCS_EN / p).is_file()]
    assert not stale, f"mapped docs pages that no longer exist at the pin: {stale}"
