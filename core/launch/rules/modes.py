"""Flags with no effect, or the wrong one, in the chosen mode (MODE0xx): given, accepted, and not used as meant."""

from __future__ import annotations

from collections.abc import Iterable

from core.findings import Finding
from core.launch.rules.context import RuleContext
from core.launch.rules.registry import msrc as _msrc
from core.launch.rules.registry import rule
from core.launch.rules.registry import src as _src
from core.pins import slime_source


@rule("MODE001", slime_source("slime/backends/megatron_utils/initialize.py", 79))
def micro_batch_under_dynamic(ctx: RuleContext) -> Iterable[Finding]:
    """Under --use-dynamic-batch-size micro-batches are packed up to --max-tokens-per-gpu, but --micro-batch-size
    still enters Megatron's start-up calculator (initialize.py:79-86) and forward_backward_func (model.py:481,
    654): a value above 1 only makes the start-up divisibility check stricter."""
    if ctx.is_set("--use-dynamic-batch-size") and ctx.fact("--micro-batch-size").present:
        mbs = ctx.need("--micro-batch-size")
        yield ctx.hit("MODE001", f"--micro-batch-size {mbs} does not size micro-batches under "
                      "--use-dynamic-batch-size (they are packed up to --max-tokens-per-gpu), but it still counts at "
                      f"start-up: the global batch must be a multiple of {mbs} x the data-parallel size, and it is "
                      "passed to Megatron's forward_backward_func.", flag="--micro-batch-size",
                      fix="leave it at 1 (slime's default) unless you need otherwise")


@rule("MODE002", _src(119, "slime/utils/dp_schedule.py"))
def max_tokens_needs_dynamic(ctx: RuleContext) -> Iterable[Finding]:
    """--max-tokens-per-gpu is read only by the dynamic batching path."""
    if ctx.fact("--max-tokens-per-gpu").present and not ctx.is_set("--use-dynamic-batch-size"):
        yield ctx.hit("MODE002", "--max-tokens-per-gpu has no effect without --use-dynamic-batch-size; micro-batches "
                      "have --micro-batch-size samples.", flag="--max-tokens-per-gpu",
                      fix="add --use-dynamic-batch-size, or remove --max-tokens-per-gpu")


@rule("MODE003", _msrc(906))
def sequence_parallel_needs_tp(ctx: RuleContext) -> Iterable[Finding]:
    """Megatron turns sequence parallelism off when the tensor-parallel size is 1."""
    if ctx.is_set("--sequence-parallel") and (ctx.need("--tensor-model-parallel-size", 1) or 1) == 1:
        yield ctx.hit("MODE003", "--sequence-parallel has no effect with --tensor-model-parallel-size 1 (Megatron "
                      "turns it off).", flag="--sequence-parallel", fix="remove it, or use TP > 1")


@rule("MODE004", _src(1995))
def num_epoch_ignored(ctx: RuleContext) -> Iterable[Finding]:
    """When both are given, slime uses --num-rollout and ignores --num-epoch."""
    if ctx.need("--num-epoch") is not None and ctx.need("--num-rollout") is not None:
        yield ctx.hit("MODE004", "--num-epoch is ignored because --num-rollout is also given.", flag="--num-epoch",
                      fix="keep one of them")


@rule("MODE005", _src(1116, "slime/backends/megatron_utils/loss.py"))
def kl_loss_coef_needs_switch(ctx: RuleContext) -> Iterable[Finding]:
    """The KL loss term is added only under --use-kl-loss."""
    coef = ctx.need("--kl-loss-coef", 0.0)
    if coef and not ctx.is_set("--use-kl-loss"):
        yield ctx.hit("MODE005", f"--kl-loss-coef {coef} has no effect without --use-kl-loss.", flag="--kl-loss-coef",
                      fix="add --use-kl-loss, or remove --kl-loss-coef")


@rule("MODE006", slime_source("slime/ray/placement_group.py", 178))
def kl_loss_zero_coef(ctx: RuleContext) -> Iterable[Finding]:
    """--use-kl-loss loads the reference model even when --kl-loss-coef is 0 (the KL is then only logged)."""
    if ctx.is_set("--use-kl-loss") and not ctx.need("--kl-loss-coef", 0.0) and not ctx.need("--kl-coef", 0.0):
        yield ctx.hit("MODE006", "--use-kl-loss with --kl-loss-coef 0: the reference model is loaded and the KL is "
                      "logged, but it does not change the loss.", flag="--use-kl-loss",
                      fix="fine for monitoring; drop --use-kl-loss to save the reference model's memory")


@rule("MODE007", slime_source("train.py", 50))
def eval_data_needs_interval(ctx: RuleContext) -> Iterable[Finding]:
    """Evaluation runs only when --eval-interval is set."""
    if ctx.need("--eval-interval") is None and (ctx.need("--eval-prompt-data") is not None
                                                 or ctx.need("--eval-config") is not None):
        yield ctx.hit("MODE007", "Evaluation data is given but --eval-interval is not, so no evaluation ever runs.",
                      flag="--eval-prompt-data" if ctx.need("--eval-prompt-data") is not None else "--eval-config",
                      fix="add --eval-interval N")


@rule("MODE008", _src(1940))
def release_train_offload_ignored(ctx: RuleContext) -> Iterable[Finding]:
    """Colocated --release-train forces --no-offload-train and --offload-rollout whatever is given."""
    if not (ctx.is_set("--colocate") and ctx.is_set("--release-train")):
        return
    f = ctx.fact("--offload-train")
    if f.present and f.value:
        yield ctx.hit("MODE008", "--offload-train is ignored with --colocate --release-train (train actors are "
                      "released instead).", flag="--offload-train", fix="remove it")
    f = ctx.fact("--offload-rollout")
    if f.present and f.value is False:
        yield ctx.hit("MODE008", "--no-offload-rollout is ignored with --colocate --release-train (rollout offload is "
                      "required).", flag="--no-offload-rollout", fix="remove it", source=_src(1944))


SFT_ROLLOUT = "slime.rollout.sft_rollout.generate_rollout"


def _is_sft(ctx: RuleContext) -> bool:
    """slime's SFT recipes swap in the SFT rollout and the SFT loss (scripts/run-qwen3-4B-base-sft.sh:38-50@624b824a)."""
    return ctx.need("--rollout-function-path") == SFT_ROLLOUT or ctx.need("--loss-type") == "sft_loss"


@rule("MODE009", _src(1607))
def sft_without_debug_train_only(ctx: RuleContext) -> Iterable[Finding]:
    """The SFT rollout reads conversations from the prompt file and never generates, so SFT needs no rollout
    engines; without --debug-train-only (or --load-debug-rollout-data) slime still starts SGLang
    (slime/utils/arguments.py:1607@624b824a) and asks Ray for rollout GPUs (slime/ray/placement_group.py:103-117@624b824a)."""
    if not _is_sft(ctx) or ctx.is_set("--debug-train-only") or ctx.need("--load-debug-rollout-data") is not None:
        return
    if ctx.need("--rollout-external-engine-addrs") is not None:
        return
    where = ("shares the training GPUs with SGLang engines that take memory and receive a weight push after every "
             "step" if ctx.is_set("--colocate") else "asks Ray for rollout GPUs that SGLang engines hold for nothing")
    yield ctx.hit("MODE009", f"This is an SFT run (the SFT rollout or --loss-type sft_loss), which never generates, "
                  f"but without --debug-train-only it {where}.", flag="--debug-train-only",
                  fix="add --debug-train-only, as slime's SFT scripts do")


@rule("MODE010", slime_source("slime/utils/data.py", 248))
def sft_rollout_with_chat_template(ctx: RuleContext) -> Iterable[Finding]:
    """The SFT rollout hands each prompt to the loss-mask generator as a list of messages
    (slime/rollout/sft_rollout.py:44-48@624b824a); --apply-chat-template makes the data loader render every
    prompt to one string at load time (slime/utils/data.py:248-255@624b824a), so the generator gets text instead
    of messages and the first rollout fails."""
    if ctx.need("--rollout-function-path") != SFT_ROLLOUT or not ctx.is_set("--apply-chat-template"):
        return
    yield ctx.hit("MODE010", "The SFT rollout needs each prompt as a list of chat messages and applies the chat "
                  "template itself; --apply-chat-template turns every prompt into rendered text when the data is "
                  "loaded, so the SFT rollout fails on the first batch.", flag="--apply-chat-template",
                  fix="remove --apply-chat-template (slime's SFT scripts leave it commented out)")
