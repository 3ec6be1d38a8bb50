"""SGLang deployment rules (SGL0xx) that slime checks before starting its engines."""

from __future__ import annotations

from collections.abc import Iterable

from core.findings import Finding
from core.launch.rules.context import RuleContext
from core.launch.rules.registry import rule
from core.pins import slime_source


@rule("SGL001", slime_source("slime/backends/sglang_utils/arguments.py", 174))
def sglang_pp_divides_engine(ctx: RuleContext) -> Iterable[Finding]:
    """--rollout-num-gpus-per-engine must be divisible by --sglang-pp-size when that is above 1."""
    if ctx.is_set("--debug-train-only"):
        return
    pp = ctx.need("--sglang-pp-size", 1) or 1
    gpe = ctx.need("--rollout-num-gpus-per-engine", 1)
    if pp > 1 and gpe % pp:
        yield ctx.hit("SGL001", f"--rollout-num-gpus-per-engine {gpe} is not divisible by --sglang-pp-size {pp}.",
                      flag="--sglang-pp-size", fix=f"use a multiple of {pp} GPUs per engine")


@rule("SGL002", slime_source("slime/backends/sglang_utils/arguments.py", 184))
def sglang_dp_needs_dp_attention(ctx: RuleContext) -> Iterable[Finding]:
    """--sglang-dp-size above 1 requires --sglang-enable-dp-attention."""
    if ctx.is_set("--debug-train-only"):
        return
    dp = ctx.need("--sglang-dp-size", 1) or 1
    if dp > 1 and not ctx.is_set("--sglang-enable-dp-attention"):
        yield ctx.hit("SGL002", f"--sglang-dp-size {dp} needs --sglang-enable-dp-attention.", flag="--sglang-dp-size",
                      fix="add --sglang-enable-dp-attention")


@rule("SGL003", slime_source("slime/backends/sglang_utils/arguments.py", 190))
def sglang_deployment_exclusive(ctx: RuleContext) -> Iterable[Finding]:
    """--prefill-num-servers, --sglang-config and --rollout-external-engine-addrs exclude each other."""
    if ctx.is_set("--debug-train-only"):
        return
    given = [f for f in ("--prefill-num-servers", "--sglang-config", "--rollout-external-engine-addrs")
             if ctx.need(f) is not None]
    if len(given) > 1:
        yield ctx.hit("SGL003", f"{' and '.join(given)} cannot be combined.", flag=given[-1], fix="keep one of them")
