"""Alternatives: from what the user needs to a recommendation (slime, or miles, verl or torchforge).

Each alternative is recommended only for the need it answers, with a short note on its scope and maturity
taken from its own README (read at the commit cited) or from slime's README at the pin. Claims stay
modest: a README describes a project's aims, not a guarantee.
"""

from __future__ import annotations

from enum import Enum

from pydantic import BaseModel

from core.pins import SLIME_SHORT, slime_source

CARD = "alternatives"

# miles' README at 778227d6 (2026-08-21), its last main-branch commit no later than our slime pin.
MILES_README = "https://github.com/radixark/miles/blob/778227d6d7cf7b581d1eb07910c873516b6baca9/README.md"
VERL_README = "https://github.com/volcengine/verl/blob/34fa0aa4507c60feef6e63fde4f01836cc6a62e7/README.md"
TORCHFORGE_README = ("https://github.com/meta-pytorch/torchforge/blob/008fad81337d1a205aea043385141b24d3699a7d/"
                     "README.md")


class Need(str, Enum):
    """What the user may need that slime's own design does not aim at."""

    ENTERPRISE = "enterprise"
    SWAP_BACKENDS = "swap_backends"
    PYTORCH_NATIVE = "pytorch_native"
    NONE = "none"


NEED_LABELS: dict[Need, str] = {
    Need.ENTERPRISE: "Enterprise stability and production features (and a team focused on them)",
    Need.SWAP_BACKENDS: "Swapping the training backend (e.g. FSDP instead of Megatron) or the inference engine "
                        "(e.g. vLLM instead of SGLang)",
    Need.PYTORCH_NATIVE: "PyTorch-native RL abstractions, keeping infrastructure out of the algorithm code",
    Need.NONE: "None of these: I want to train with Megatron + SGLang",
}

NEED_SHORT: dict[Need, str] = {  # the need in a few words, for summaries and the record of work
    Need.ENTERPRISE: "enterprise stability",
    Need.SWAP_BACKENDS: "swapping the training backend or inference engine",
    Need.PYTORCH_NATIVE: "PyTorch-native RL abstractions",
    Need.NONE: "Megatron + SGLang as slime pairs them",
}


class Alternative(BaseModel):
    id: str
    name: str
    url: str
    scope: str
    maturity: str
    sources: list[str]


ALTERNATIVES: dict[str, Alternative] = {
    "miles": Alternative(
        id="miles", name="miles", url="https://github.com/radixark/miles",
        scope=("A fork of slime by RadixArk (its README's acknowledgment says so) that keeps the Megatron-LM + "
               "SGLang pairing and aims at large-scale, production post-training: its README at the pinned "
               "commit lists MXFP8/NVFP4 low-precision RL, LoRA, token-in-token-out (TITO), routing replay (R3) "
               "and an FSDP2 backend for training a Hugging Face model as it is, while its recipes and largest "
               "models stay on Megatron-LM."),
        maturity=("Its README announces a v0.1 release in August 2026 and has its own documentation site. "
                  "Neither README promises a support contract; ask the maintainers what support they offer."),
        sources=[slime_source("README.md", 120), MILES_README],
    ),
    "verl": Alternative(
        id="verl", name="verl", url="https://github.com/volcengine/verl",
        scope=("An RL training library initiated by the ByteDance Seed team (the open-source version of the HybridFlow "
               "paper). Its README lists FSDP, FSDP2 and Megatron-LM as training backends and vLLM, SGLang and "
               "HF Transformers for rollout, with PPO, GRPO and other algorithms."),
        maturity=("Its README lists numbered releases (v0.3.0.post1 in the snapshot read), a EuroSys 2025 "
                  "paper and many projects built on it. It is a different code base: slime launch scripts and "
                  "custom functions do not carry over."),
        sources=[VERL_README],
    ),
    "torchforge": Alternative(
        id="torchforge", name="torchforge", url="https://github.com/meta-pytorch/torchforge",
        scope=("A PyTorch-native agentic RL library (meta-pytorch organisation on GitHub) that separates RL algorithm code "
               "from infrastructure; it builds on Monarch, vLLM and torchtitan."),
        maturity=("Its README carries an early-development warning: experimental, expect bugs, incomplete "
                  "features and API changes. It requires PyTorch 2.9.0; hosted docs were 'coming soon' in the "
                  "snapshot read."),
        sources=[TORCHFORGE_README],
    ),
}

SLIME_FIT_SOURCES = [slime_source("README.md", 24), slime_source("README.md", 50),
                     slime_source("slime/utils/arguments.py", 1592)]


class Recommendation(BaseModel):
    """One answer: which framework, why, and (for an alternative) its scope and maturity with sources."""

    need: Need
    choice: str  # "slime" or an ALTERNATIVES id
    reason: str
    alternative: Alternative | None = None
    sources: list[str]


def recommend_for_need(need: Need) -> Recommendation:
    """Rule: recommend an alternative only for the need it was built for; otherwise slime fits."""
    if need == Need.ENTERPRISE:
        alt = ALTERNATIVES["miles"]
        return Recommendation(
            need=need, choice="miles", alternative=alt, sources=alt.sources,
            reason=("miles is slime's enterprise-facing fork: you keep slime's launch scripts and concepts "
                    "while getting its production-oriented additions."))
    if need == Need.SWAP_BACKENDS:
        alt = ALTERNATIVES["verl"]
        return Recommendation(
            need=need, choice="verl", alternative=alt, sources=[*alt.sources, *SLIME_FIT_SOURCES[1:]],
            reason=(f"slime at {SLIME_SHORT} trains only with Megatron (--train-backend accepts only 'megatron') "
                    "and generates only with SGLang, by design. verl supports several training backends and "
                    "rollout engines."))
    if need == Need.PYTORCH_NATIVE:
        alt = ALTERNATIVES["torchforge"]
        return Recommendation(
            need=need, choice="torchforge", alternative=alt, sources=alt.sources,
            reason=("slime passes Megatron and SGLang arguments straight through rather than hiding them behind "
                    "abstractions; torchforge aims at PyTorch-native RL abstractions, at the price of an "
                    "experimental project."))
    return Recommendation(
        need=need, choice="slime", sources=SLIME_FIT_SOURCES,
        reason=("slime fits: it is built around exactly the Megatron training + SGLang rollout path, with "
                "custom generate and reward functions for agentic work. No alternative is needed."))


def recommend(needs: list[Need]) -> list[Recommendation]:
    """One recommendation per selected need, in a stable order; no selection or 'none' means slime fits."""
    chosen = [n for n in Need if n in set(needs) and n != Need.NONE]
    if not chosen:
        return [recommend_for_need(Need.NONE)]
    return [recommend_for_need(n) for n in chosen]


def recommendation_markdown(recs: list[Recommendation]) -> str:
    """A short markdown summary for the record of handled work and the download."""
    lines = ["# Alternatives: recommendation", ""]
    for r in recs:
        lines.append(f"## {NEED_LABELS[r.need]}")
        lines.append(f"Recommendation: **{r.choice}**. {r.reason}")
        if r.alternative:
            lines += ["", f"- Scope: {r.alternative.scope}", f"- Maturity: {r.alternative.maturity}",
                      f"- Repository: {r.alternative.url}"]
        lines += ["", "Sources: " + "; ".join(r.sources), ""]
    return "\n".join(lines)
